// A block's floats summed by a tree in shared memory: each step thread t adds the element
// `stride` above its own, so the order of the additions is fixed (and the rounding with it).
// Block b writes its sum to sums[b].
#define BLOCK 16

extern "C" __global__ void float_reduce(const float *in, float *sums)
{
    __shared__ float partial[BLOCK];
    int t = threadIdx.x;
    partial[t] = in[blockIdx.x * BLOCK + t];
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (t < stride)
            partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0)
        sums[blockIdx.x] = partial[0];
}
