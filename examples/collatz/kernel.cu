// Collatz steps with a bound: the trip count depends on the thread's data.
extern "C" __global__ void collatz(const unsigned *start, int *steps, unsigned *peak, int limit)
{
    int t = threadIdx.x;
    unsigned x = start[t];
    unsigned m = x;
    int s = 0;
    while (x != 1u && s < limit) {
        if (x & 1u)
            x = 3u * x + 1u;
        else
            x = x >> 1;
        m = max(m, x);
        s++;
    }
    steps[t] = s;
    peak[t] = m;
}
