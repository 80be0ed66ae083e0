// A polynomial by Horner's rule at each x[i]: r = coeffs[degree], then r = r * x + coeffs[k]
// for k = degree - 1 down to 0, the multiply rounded on its own (__fmul_rn) and the add too.
// `#pragma unroll 1`: one multiply in the loop, within the 128 instruction slots (docs/fpu.md).
extern "C" __global__ void float_horner(const float *coeffs, int degree, const float *x,
                                        float *p)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    float r = coeffs[degree];
    #pragma unroll 1
    for (int k = degree - 1; k >= 0; k--)
        r = __fmul_rn(r, v) + coeffs[k];
    p[i] = r;
}
