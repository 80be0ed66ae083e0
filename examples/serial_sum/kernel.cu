// One thread walks two arrays: the sum of a, the dot product a . b (mad.lo) and the count of
// negative a[i], for i < n.  Written for a one-lane, one-warp QwenGPU (grid 1, block 1).
extern "C" __global__ void serial_sum(const int *a, const int *b, int *out, int n)
{
    int sum = 0;
    int dot = 0;
    int negatives = 0;
#pragma unroll 1
    for (int i = 0; i < n; i++) {
        sum += a[i];
        dot += a[i] * b[i];
        negatives += a[i] < 0;
    }
    out[0] = sum;
    out[1] = dot;
    out[2] = negatives;
}
