// y[i] = a * x[i] + y[i] as nvcc compiles it by default (-fmad=true): one fma.rn.f32, the
// product and the sum rounded once.  The loader's fma routine is 143 instructions, more than
// the default machine's 128 slots: this runs on a machine compiled with -P PROG_WORDS=256
// (docs/fpu.md, "fma").  Cancellation shows the single rounding: x * 3 - 1 for x = 1/3
// gives the product's rounding error (2^-25), not 0.
extern "C" __global__ void float_fma(const float *a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = a[0] * x[i] + y[i];
}
