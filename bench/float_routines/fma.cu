// c[i] = fmaf(a[i], b[i], c[i]): one fma.rn.f32, the product and the sum rounded once (the
// loader's fma routine on integer instructions; docs/fpu.md), in place so that a launch of
// 32 threads fits the machine's 126 words, for bench/float_routines_on_model.py.  The routine
// needs a machine of 256 instruction slots (hdlc compile -P PROG_WORDS=256).
extern "C" __global__ void float_fma(const float *a, const float *b, float *c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = fmaf(a[i], b[i], c[i]);
}
