// Warp-level reductions with shuffles: a sum by __shfl_down_sync (lane 0 has it), a maximum
// by __shfl_xor_sync (every lane has it), and lane 2's value broadcast by __shfl_sync.
extern "C" __global__ void warp_reduce(const int *in, int *sums, int *maxima, int *from_lane2)
{
    int t = threadIdx.x;
    int v = in[t];
    int sum = v;
    for (int offset = warpSize / 2; offset > 0; offset /= 2)
        sum += __shfl_down_sync(0xffffffff, sum, offset);
    int best = v;
    for (int mask = warpSize / 2; mask > 0; mask /= 2)
        best = max(best, __shfl_xor_sync(0xffffffff, best, mask));
    int third = __shfl_sync(0xffffffff, v, 2);
    if ((t & (warpSize - 1)) == 0)
        sums[t / warpSize] = sum;
    maxima[t] = best;
    from_lane2[t] = third;
}
