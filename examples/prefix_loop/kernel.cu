// Prefix-style dependent loops: thread t computes the inclusive prefix sum of a[0..t] and a
// multiplicative hash of the same prefix (each step depends on the previous one).
extern "C" __global__ void prefix_loop(const int *a, int *psum, unsigned *hash)
{
    int t = threadIdx.x;
    int s = 0;
    unsigned h = 17u;
#pragma unroll 1
    for (int j = 0; j <= t; j++) {
        s += a[j];
        h = h * 31u + (unsigned)a[j];
    }
    psum[t] = s;
    hash[t] = h;
}
