// Conversions between int and float at their edges: (float)n rounds to nearest even
// (2^24 + 1 has no binary32 of its own), (int)x truncates toward zero, __float2int_rn
// rounds half to even (0.5 to 0, 1.5 to 2, -2.5 to -2), and rintf stays in floats.
// Out-of-range floats clamp and a NaN converts to 0, as the PTX ISA says of cvt.
extern "C" __global__ void float_convert(const int *n, const float *x, float *as_float,
                                         int *truncated, int *nearest, float *rounded)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    as_float[i] = (float)n[i];
    truncated[i] = (int)x[i];
    nearest[i] = __float2int_rn(x[i]);
    rounded[i] = rintf(x[i]);
}
