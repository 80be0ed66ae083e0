// Four blocks: every thread scales its element by its block index; thread 0 of each block
// also sums its block's slice.
extern "C" __global__ void multi_block(const int *in, int *out, int *bsum)
{
    int b = blockIdx.x;
    int i = b * blockDim.x + threadIdx.x;
    out[i] = in[i] * b + (int)gridDim.x;
    if (threadIdx.x == 0) {
        int s = 0;
#pragma unroll 1
        for (int j = 0; j < (int)blockDim.x; j++)
            s += in[b * blockDim.x + j];
        bsum[b] = s;
    }
}
