// Float operations QwenGPU runs on the bits of binary32 values (it has no FPU yet), and one
// it must refuse: float_add's a[i] + b[i] is floating-point arithmetic.

extern "C" __global__ void float_min_max(const float *x, const float *y, float *out)
{
    int i = threadIdx.x;
    float a = x[i], b = y[i];
    out[4 * i + 0] = fmaxf(a, b);
    out[4 * i + 1] = fminf(a, b);
    out[4 * i + 2] = fabsf(a);
    out[4 * i + 3] = fminf(fmaxf(-a, -1.5f), 2.0f);
}

extern "C" __global__ void float_order(const float *x, const float *y, int *flags)
{
    int i = threadIdx.x;
    float a = x[i], b = y[i];
    flags[i] = (a < b) | (a <= b) << 1 | (a == b) << 2 | (a != b) << 3 | (a >= b) << 4
             | !(a < b) << 5;
}

extern "C" __global__ void float_classes(const float *x, int *flags)
{
    int i = threadIdx.x;
    float a = x[i];
    flags[i] = isnan(a) | isinf(a) << 1 | isfinite(a) << 2 | (a > 0.5f) << 3;
}

extern "C" __global__ void float_add(const float *a, const float *b, float *c)
{
    int i = threadIdx.x;
    c[i] = a[i] + b[i];
}

extern "C" __global__ void float_mul(const float *a, const float *b, float *c)
{
    int i = threadIdx.x;
    c[i] = a[i] * b[i];
}

extern "C" __global__ void float_add_sub(const float *a, const float *b, float *out)
{
    int i = threadIdx.x;
    float x = a[i], y = b[i];
    out[3 * i] = x - y;
    out[3 * i + 1] = __saturatef(x + y);
    out[3 * i + 2] = (x + 1.5f) - y;
}

extern "C" __global__ void float_mul_add(const float *a, const float *b, float *c)
{
    int i = threadIdx.x;
    c[i] = __fmul_rn(a[i], b[i]) + 1.0f;
}

extern "C" __global__ void float_scale_saturate(const float *a, float *c)
{
    int i = threadIdx.x;
    c[i] = __saturatef(a[i] * 0.1f);
}

extern "C" __global__ void float_fma(const float *a, const float *b, float *c)
{
    int i = threadIdx.x;
    c[i] = a[i] * b[i] + 1.0f;
}

extern "C" __global__ void float_div(const float *a, const float *b, float *c)
{
    int i = threadIdx.x;
    c[i] = a[i] / b[i];
}

extern "C" __global__ void float_fast_div(const float *a, const float *b, float *c)
{
    int i = threadIdx.x;
    c[i] = __fdividef(a[i], b[i]);
}

extern "C" __global__ void float_sqrt(const float *a, float *c)
{
    int i = threadIdx.x;
    c[i] = sqrtf(a[i]);
}

extern "C" __global__ void float_rcp(const float *a, float *c)
{
    int i = threadIdx.x;
    c[i] = 1.0f / a[i];
}

extern "C" __global__ void float_rsqrt(const float *a, float *c)
{
    int i = threadIdx.x;
    c[i] = rsqrtf(a[i]);
}
