// A histogram in each thread's own array: bins[v & 7] += k + 1 over the thread's row, the
// index known only at run time, so nvcc keeps the array in local memory (__local_depot0,
// ld.local/st.local through %SPL); then the bins are folded into one word.
extern "C" __global__ void local_histogram(const int *in, int *out, int n)
{
    int t = threadIdx.x;
    int bins[8];
    for (int k = 0; k < 8; k++)
        bins[k] = 0;
    for (int k = 0; k < n; k++)
        bins[in[t * n + k] & 7] += k + 1;
    int s = 0;
    for (int k = 0; k < 8; k++)
        s = s * 5 + bins[k];
    out[t] = s;
}
