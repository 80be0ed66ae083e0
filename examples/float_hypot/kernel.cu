// r[i] = sqrtf(x[i] * x[i] + y[i] * y[i]), each product rounded on its own (__fmul_rn: nvcc
// never fuses it into an fma), then the correctly rounded root: two loader routines in one
// kernel, the multiply's body (shared by both products) and the root's.  They need 140
// instruction slots: refused on the default machine's 128 (PROG_WORDS), run on a machine
// compiled with -P PROG_WORDS=256 (docs/fpu.md, "Two routines in one kernel").
extern "C" __global__ void float_hypot(const float *x, const float *y, float *r)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    r[i] = sqrtf(__fmul_rn(x[i], x[i]) + __fmul_rn(y[i], y[i]));
}
