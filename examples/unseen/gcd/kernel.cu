// Greatest common divisor by repeated subtraction (no division), bounded by a step limit.
// out[2t] is the result, out[2t + 1] the number of subtraction steps.
extern "C" __global__ void gcd(const unsigned *a, const unsigned *b, unsigned *out, int limit)
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
    out[2 * t] = x;
    out[2 * t + 1] = (unsigned)s;
}
