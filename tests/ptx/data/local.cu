// Per-thread local memory (.local): arrays nvcc keeps in the thread's stack frame
// (__local_depot0), indexed at run time, reached through generic pointers, of bytes.

extern "C" __global__ void local_array(int *x, int k)
{
    int a[8];
    for (int i = 0; i < 8; i++) a[i] = x[i] * i;
    x[threadIdx.x] = a[(k + threadIdx.x) & 7];
}

// A histogram in a thread's own array: read-modify-write at data-dependent indices.
extern "C" __global__ void local_histogram(const int *in, int *out, int n)
{
    int t = threadIdx.x;
    int bins[4] = {0, 0, 0, 0};
    #pragma unroll 1
    for (int k = 0; k < n; k++)
        bins[in[t * n + k] & 3] += k + 1;
    out[t] = bins[0] + 10 * bins[1] + 100 * bins[2] + 1000 * bins[3];
}

// A generic pointer that is either the thread's local array or a word of `out`: nvcc writes
// cvta.local and generic ld/st through the pointer it selects.
extern "C" __global__ void local_generic(int *in, int *out, int n)
{
    int t = threadIdx.x;
    int buf[4];
    for (int k = 0; k < 4; k++) buf[k] = in[t + k];
    int *p = (in[t] & 1) ? buf + (t & 3) : out + t;
    p[0] += 100;
    int s = 0;
    for (int k = 0; k < 4; k++) s += buf[k] * (k + 1);
    out[t + n] = s;
}

// Bytes in local memory: st.local.u8 and ld.local.u8 at run-time offsets.
extern "C" __global__ void local_bytes(const int *in, int *out)
{
    int t = threadIdx.x;
    unsigned char b[8];
    #pragma unroll 1
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(in[t] >> (k * 3));
    int i = in[t] & 7;
    b[i] = (unsigned char)(b[i] + 200);
    int s = 0;
    #pragma unroll 1
    for (int k = 0; k < 8; k++) s = s * 3 + b[k];
    out[t] = s;
}
