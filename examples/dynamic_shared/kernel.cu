// extern __shared__ memory whose size the launch gives (shared_bytes, CUDA's third launch
// parameter): each block reverses its slice of the input through it.
extern "C" __global__ void dynamic_shared(const int *in, int *out)
{
    extern __shared__ int staging[];
    int t = threadIdx.x;
    int base = blockIdx.x * blockDim.x;
    staging[t] = in[base + t] * 2;
    __syncthreads();
    out[base + t] = staging[blockDim.x - 1 - t] + t;
}
