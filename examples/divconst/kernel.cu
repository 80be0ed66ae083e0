// Division and remainder by constants (nvcc turns them into multiply-high and shifts),
// unsigned and signed, with negative dividends (C rounds towards zero).
extern "C" __global__ void divconst(const int *x, int *out)
{
    int t = threadIdx.x;
    int v = x[t];
    unsigned u = (unsigned)v;
    int *o = out + 5 * t;
    o[0] = (int)(u / 10u);
    o[1] = (int)(u % 10u);
    o[2] = v / 7;
    o[3] = v % 7;
    o[4] = v / 4;
}
