// 64-bit dot products: out[t] = sum over k of a[t n + k] * b[k], in long long.  nvcc unrolls
// the loop four times (with a remainder loop for n % 4); the four iterations' 64-bit values
// need more than 15 registers, and the allocator spills to local memory.
extern "C" __global__ void dot64(const long long *a, const long long *b, long long *out, int n)
{
    int t = threadIdx.x;
    long long s = 0;
    for (int k = 0; k < n; k++)
        s += a[t * n + k] * b[k];
    out[t] = s;
}
