// High halves of 32 x 32-bit products: __mulhi (signed) and __umulhi (unsigned), next to
// the low half, on operands of both signs.
extern "C" __global__ void mulhi_wide(const int *a, const int *b, int *out)
{
    int t = threadIdx.x;
    int x = a[t];
    int y = b[t];
    int *o = out + 3 * t;
    o[0] = __mulhi(x, y);
    o[1] = (int)__umulhi((unsigned)x, (unsigned)y);
    o[2] = (int)((unsigned)x * (unsigned)y);
}
