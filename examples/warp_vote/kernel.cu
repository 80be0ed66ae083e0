// Warp votes: which lanes hold a positive value (__ballot_sync), whether any holds one above
// 50 (__any_sync), whether all are even (__all_sync), and which lanes reach a branch
// (__activemask inside it).
extern "C" __global__ void warp_vote(const int *in, unsigned *ballots, int *flags,
                                     unsigned *reached)
{
    int t = threadIdx.x;
    int v = in[t];
    unsigned positive = __ballot_sync(0xffffffff, v > 0);
    int any_big = __any_sync(0xffffffff, v > 50);
    int all_even = __all_sync(0xffffffff, (v & 1) == 0);
    unsigned here = 0;
    if (v % 3 == 0)
        here = __activemask();
    ballots[t] = positive;
    flags[t] = any_big * 2 + all_even;
    reached[t] = here;
}
