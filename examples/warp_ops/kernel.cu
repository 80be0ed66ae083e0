// One full warp of four threads, each taking another branch (add, multiply, xor, shift), then
// all four storing in one step.  Written for a one-warp QwenGPU with its four lanes
// (grid 1, block 4): the four stores are the record's closing token and three port tokens.
extern "C" __global__ void warp_ops(const int *a, const int *b, int *out)
{
    int t = threadIdx.x;
    int x = a[t], y = b[t];
    int r;
    switch (t) {
    case 0:  r = x + y; break;
    case 1:  r = x * y; break;
    case 2:  r = x ^ y; break;
    default: r = x >> (y & 31); break;
    }
    out[t] = r;
}
