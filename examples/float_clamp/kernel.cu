// Floats that need no FPU: clamp each x[i] into [bounds[0], bounds[1]] with fmaxf/fminf
// (a NaN is missing data to them: the clamp of a NaN is the lower bound), and classify it
// with float comparisons: bit 0 x > 0, bit 1 |x| < 1, bit 2 x is a NaN.
extern "C" __global__ void float_clamp(const float *x, const float *bounds, float *clamped,
                                       int *flags)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = x[i];
    clamped[i] = fminf(fmaxf(v, bounds[0]), bounds[1]);
    flags[i] = (v > 0.0f) | ((fabsf(v) < 1.0f) << 1) | (isnan(v) << 2);
}
