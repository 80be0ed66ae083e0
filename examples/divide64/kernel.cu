// 64-bit division by variables: the quotient and remainder of two long longs (C's `/` and
// `%`, truncating towards zero).  QwenGPU has no divider; the loader runs a restoring
// division over word pairs (64 steps of about 25 instructions), and nvcc forms the remainder
// from the quotient (x - q y).
extern "C" __global__ void divide64(const long long *a, const long long *b, long long *quotient,
                                    long long *remainder)
{
    int t = threadIdx.x;
    long long x = a[t], y = b[t];
    long long q = x / y;
    quotient[t] = q;
    remainder[t] = x % y;
}
