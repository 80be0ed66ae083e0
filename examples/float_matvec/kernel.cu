// y = A x on floats: thread `row` sums its row's products left to right, each product
// rounded (__fmul_rn) and each partial sum rounded, in the order of the loop.
// `#pragma unroll 1` keeps the loop one multiply long: unrolled four times it would need
// more than the 128 instruction slots a QwenGPU program has (docs/fpu.md).
extern "C" __global__ void float_matvec(const float *a, const float *x, float *y, int columns)
{
    int row = threadIdx.x;
    float sum = 0.0f;
    #pragma unroll 1
    for (int k = 0; k < columns; k++)
        sum += __fmul_rn(a[row * columns + k], x[k]);
    y[row] = sum;
}
