// c[i] = a[i] * b[i] on floats, rounded once (__fmul_rn: mul.rn.f32, the loader's multiply
// routine on integer instructions; docs/fpu.md), for bench/float_routines_on_model.py.
extern "C" __global__ void float_multiply(const float *a, const float *b, float *c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = __fmul_rn(a[i], b[i]);
}
