// r[i] = sqrtf(x[i]): nvcc writes sqrt.rn.f32, the correctly rounded root (QwenGPU takes it
// bit by bit on integers, docs/fpu.md); a negative number gives a NaN, sqrtf(-0) is -0.
extern "C" __global__ void float_sqrt(const float *x, float *r)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    r[i] = sqrtf(x[i]);
}
