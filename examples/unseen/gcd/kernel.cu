// Greatest common divisor by repeated subtraction (no division), bounded by a step limit.
extern "C" __global__ void gcd(const unsigned *a, const unsigned *b, unsigned *g, int *steps, int limit)
{
    int t = threadIdx.x;
    unsigned x = a[t];
    unsigned y = b[t];
    int s = 0;
    while (x != y && x != 0u && y != 0u && s < limit) {
        if (x > y)
            x -= y;
        else
            y -= x;
        s++;
    }
    g[t] = x;
    steps[t] = s;
}
