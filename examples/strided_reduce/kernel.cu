// Grid-stride loop: each thread reduces every stride-th element, starting at its global id.
extern "C" __global__ void strided_reduce(const int *a, int *sum, int *xr, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    int s = 0;
    int x = 0;
#pragma unroll 1
    for (int j = i; j < n; j += stride) {
        s += a[j];
        x ^= a[j];
    }
    sum[i] = s;
    xr[i] = x;
}
