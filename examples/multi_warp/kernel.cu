// One block of 32 threads = 8 warps.  Each thread reads the mirrored element and mixes in
// its warp and lane numbers.
extern "C" __global__ void multi_warp(const int *in, int *out)
{
    int t = threadIdx.x;
    int n = blockDim.x;
    int warp = t >> 2;
    int lane = t & 3;
    out[t] = in[n - 1 - t] * (warp + 1) - lane;
}
