// Kernels QwenGPU cannot run: each must fail with a clear error at the right PTX line.

extern "C" __global__ void shared_memory(int *x)
{
    __shared__ int t[4];
    t[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = t[3 - threadIdx.x];
}

__device__ __noinline__ int helper(int a) { return a * 3 + 1; }

extern "C" __global__ void calls(int *x)
{
    x[threadIdx.x] = helper(x[threadIdx.x]);
}

extern "C" __global__ void store_short(short *s)
{
    s[threadIdx.x] = (short)(s[threadIdx.x] * 7);
}
