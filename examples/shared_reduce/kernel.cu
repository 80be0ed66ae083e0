// A block reduction tree in shared memory: each block sums its 8 inputs and writes the sum.
extern "C" __global__ void shared_reduce(const int *in, int *out, int n)
{
    __shared__ int partial[8];
    int t = threadIdx.x;
    int i = blockIdx.x * blockDim.x + t;
    partial[t] = i < n ? in[i] : 0;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (t < stride)
            partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0)
        out[blockIdx.x] = partial[0];
}
