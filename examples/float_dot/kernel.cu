// A dot product in a fixed order: each thread multiplies its pair (__fmul_rn: rounded, not
// fused into the additions), then a tree in shared memory adds the products as
// float_reduce does, so every rounding happens at a place the CUDA source fixes.
#define BLOCK 16

extern "C" __global__ void float_dot(const float *x, const float *y, float *dot)
{
    __shared__ float partial[BLOCK];
    int t = threadIdx.x;
    partial[t] = __fmul_rn(x[t], y[t]);
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride /= 2) {
        if (t < stride)
            partial[t] += partial[t + stride];
        __syncthreads();
    }
    if (t == 0)
        dot[0] = partial[0];
}
