// Wrap-around at the ends of the 32-bit range, done in unsigned arithmetic (defined in C),
// then read back as int.  Inputs include INT_MIN, INT_MAX, -1 and 0.
extern "C" __global__ void overflow_wrap(const int *x, const int *y, int *out)
{
    int t = threadIdx.x;
    unsigned a = (unsigned)x[t];
    unsigned b = (unsigned)y[t];
    int *o = out + 6 * t;
    o[0] = (int)(a + b);
    o[1] = (int)(a - b);
    o[2] = (int)(a * b);
    o[3] = (int)(0u - a);          // -INT_MIN is INT_MIN
    o[4] = x[t] >> 31;             // sign mask: 0 or -1
    o[5] = (int)(a + b) < x[t];    // did the signed add wrap downwards?
}
