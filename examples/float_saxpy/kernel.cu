// y = a * x + y on floats, one rounding after the multiply and one after the add:
// __fmul_rn keeps nvcc from fusing the two into an fma (which rounds once, and which
// QwenGPU does not run yet; docs/fpu.md).
extern "C" __global__ void float_saxpy(const float *a, const float *x, float *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = __fmul_rn(a[0], x[i]) + y[i];
}
