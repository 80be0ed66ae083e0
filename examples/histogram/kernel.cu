// A histogram of 8 bins: each block counts its values in shared memory with atomicAdd, then
// adds its counts into the global bins; the global maximum and minimum go by atomicMax/Min.
extern "C" __global__ void histogram(const int *values, int *bins, int *extremes, int n)
{
    __shared__ int local_bins[8];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    if (t < 8)
        local_bins[t] = 0;
    __syncthreads();
    if (i < n) {
        int v = values[i];
        atomicAdd(&local_bins[v & 7], 1);
        atomicMax(&extremes[0], v);
        atomicMin(&extremes[1], v);
    }
    __syncthreads();
    if (t < 8)
        atomicAdd(&bins[t], local_bins[t]);
}
