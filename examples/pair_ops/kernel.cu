// Two threads, one warp of two lanes: odd threads multiply, even threads subtract, so the
// lanes diverge and reconverge before both store.  Written for a two-lane, one-warp QwenGPU
// (grid 1, block 2): its two lanes store in the same step, on the record's port tokens.
extern "C" __global__ void pair_ops(const int *a, const int *b, int *out)
{
    int t = threadIdx.x;
    int x = a[t], y = b[t];
    int r;
    if (t & 1)
        r = x * y;
    else
        r = x - y;
    out[t] = r + t;
}
