// Complex products z = x y, (a + bi)(c + di) = (ac - bd) + (ad + bc)i, in floats: four
// multiplies (__fmul_rn: each rounded, none fused into the add), one shared routine body.
extern "C" __global__ void float_complex_mul(const float *x, const float *y, float *z)
{
    int i = threadIdx.x;
    float a = x[2 * i], b = x[2 * i + 1], c = y[2 * i], d = y[2 * i + 1];
    z[2 * i] = __fmul_rn(a, c) - __fmul_rn(b, d);
    z[2 * i + 1] = __fmul_rn(a, d) + __fmul_rn(b, c);
}
