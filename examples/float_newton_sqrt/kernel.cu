// Newton's square root: g = 0.5f * (g + x / g), eight steps from max(x, 1), each operation
// rounded in binary32: the division is the loader's division loop, the 0.5f multiply a
// halving of the exponent (docs/ptx.md, "Floats"), the add the FPU's.
extern "C" __global__ void float_newton_sqrt(const float *x, float *root)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    float g = v > 1.0f ? v : 1.0f;
    #pragma unroll 1
    for (int k = 0; k < 8; k++)
        g = 0.5f * (g + v / g);
    root[i] = g;
}
