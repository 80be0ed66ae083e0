// C = A B for 4x4 float matrices, one thread an element: the loop over k, which nvcc unrolls,
// adds the products in order, each product rounded (__fmul_rn) and each sum rounded.  The
// four multiplies share one body of QwenGPU's multiply routine (docs/ptx.md, "Shared
// routines").
#define N 4

extern "C" __global__ void float_matmul(const float *a, const float *b, float *c)
{
    int row = threadIdx.x / N, col = threadIdx.x % N;
    float sum = 0.0f;
    for (int k = 0; k < N; k++)
        sum += __fmul_rn(a[row * N + k], b[k * N + col]);
    c[row * N + col] = sum;
}
