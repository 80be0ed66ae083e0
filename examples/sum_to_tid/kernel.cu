// Loops whose trip count is the thread index: s = sum over i = 1..tid of (i ^ k),
// and the count of i in 1..tid with bit 0 of (i * k) set.
extern "C" __global__ void sum_to_tid(int *out, int k)
{
    int t = threadIdx.x;
    int s = 0;
    int c = 0;
#pragma unroll 1
    for (int i = 1; i <= t; i++) {
        s += i ^ k;
        c += (i * k) & 1;
    }
    out[2 * t] = s;
    out[2 * t + 1] = c;
}
