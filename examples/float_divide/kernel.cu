// c[i] = a[i] / b[i] on floats: C's `/`, which nvcc writes as div.rn.f32, the correctly
// rounded quotient (QwenGPU divides by a loop on integers, docs/fpu.md).
extern "C" __global__ void float_divide(const float *a, const float *b, float *c)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] / b[i];
}
