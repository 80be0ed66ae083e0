// Writes through an index taken from a parameter.  The launch passes an index far past the
// 126 words of memory, so the store must trap with an address fault.
extern "C" __global__ void out_of_bounds(int *p, int idx)
{
    int t = threadIdx.x;
    p[t] = t;
    p[idx + t] = 7;
}
