// The same bits read as int and as unsigned: arithmetic vs logical shifts, signed vs
// unsigned comparisons, signed vs unsigned division by a power of two.
extern "C" __global__ void signed_unsigned(const int *x, const int *y, int *out)
{
    int t = threadIdx.x;
    int a = x[t];
    int b = y[t];
    unsigned ua = (unsigned)a;
    unsigned ub = (unsigned)b;
    int *o = out + 6 * t;
    o[0] = a >> 3;
    o[1] = (int)(ua >> 3);
    o[2] = a < b;
    o[3] = ua < ub;
    o[4] = a / 8;
    o[5] = (int)max(ua, ub);
}
