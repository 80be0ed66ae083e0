// min / max / abs / clamp on signed values, with negative numbers.
extern "C" __global__ void minmax_clamp(const int *a, const int *b, int *out, int lo, int hi)
{
    int t = threadIdx.x;
    int x = a[t];
    int y = b[t];
    int *o = out + 4 * t;
    o[0] = min(x, y);
    o[1] = max(x, y);
    o[2] = abs(x);
    o[3] = min(max(x, lo), hi);
}
