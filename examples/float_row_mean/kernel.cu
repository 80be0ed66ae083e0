// The mean of each row of a matrix: thread `row` adds its row left to right in floats, then
// divides by the column count converted to float (cvt.rn.f32.s32, then div.rn.f32).
// `#pragma unroll 1` keeps the loop within the 128 instruction slots (docs/fpu.md).
extern "C" __global__ void float_row_mean(const float *a, int columns, float *mean)
{
    int row = threadIdx.x;
    float sum = 0.0f;
    #pragma unroll 1
    for (int k = 0; k < columns; k++)
        sum += a[row * columns + k];
    mean[row] = sum / (float)columns;
}
