// Kernels QwenGPU refuses, each for a reason the message must give in CUDA terms.

__device__ __noinline__ int twice(int a) { return 2 * a; }
__device__ __noinline__ int thrice(int a) { return 3 * a; }

extern "C" __global__ void function_pointer(int *x, int k)
{
    int (*pick)(int) = k ? twice : thrice;
    x[threadIdx.x] = pick(x[threadIdx.x]);
}

extern "C" __global__ void sync_warp(int *x)
{
    int v = x[threadIdx.x];
    __syncwarp();
    x[threadIdx.x] = v + 1;
}

extern "C" __global__ void byte_dot(const int *a, const int *b, int *out)
{
    int i = threadIdx.x;
    out[i] = __dp4a(a[i], b[i], 0);
}

__global__ void shared_reduce(int *x)
{
    __shared__ int s[4];
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[0] + s[1] + s[2] + s[3];
}

extern "C" __global__ void char_dot(const char4 *a, const char4 *b, int *out)
{
    int i = threadIdx.x;
    char4 x = a[i], y = b[i];
    out[i] = x.x * y.x + x.y * y.y + x.z * y.z + x.w * y.w;
}

// 17 registers once nvcc lays four iterations side by side (the allocator spills); 12 with
// #pragma unroll 1
extern "C" __global__ void unrolled_dot(const int *a, const int *b, const int *c, const int *d,
                                        int *out, int n)
{
    int s = 0;
    for (int k = 0; k < n; k++)
        s += a[k] * b[k] + c[k] * d[k];
    out[threadIdx.x] = s;
}

extern "C" __global__ void rolled_dot(const int *a, const int *b, const int *c, const int *d,
                                      int *out, int n)
{
    int s = 0;
    #pragma unroll 1
    for (int k = 0; k < n; k++)
        s += a[k] * b[k] + c[k] * d[k];
    out[threadIdx.x] = s;
}

// 34 registers once nvcc unrolls the loops completely (every x[k] is kept for the second):
// more than the 15 registers and the 16 words of local memory a thread may spill to hold;
// 6 with #pragma unroll 1
extern "C" __global__ void unrolled_scale(const int *__restrict__ x, int *__restrict__ out)
{
    int s = 0;
    for (int k = 0; k < 32; k++)
        s += x[k];
    for (int k = 0; k < 32; k++)
        out[k] = x[k] * s;
}

extern "C" __global__ void rolled_scale(const int *__restrict__ x, int *__restrict__ out)
{
    int s = 0;
    #pragma unroll 1
    for (int k = 0; k < 32; k++)
        s += x[k];
    #pragma unroll 1
    for (int k = 0; k < 32; k++)
        out[k] = x[k] * s;
}
