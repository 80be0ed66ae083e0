// Conversions between 32-bit integers and binary32, which QwenGPU lowers onto integer
// instructions (qwengpu/ptx/select_convert.py): C casts, CUDA's rounding intrinsics, and
// floorf/ceilf/truncf/rintf.  Kernels are small: a program holds 128 machine instructions.

extern "C" __global__ void float_to_int(const float *x, int *out)
{
    int i = threadIdx.x;
    float a = x[i];
    out[4 * i + 0] = (int)a;
    out[4 * i + 1] = (int)(unsigned)a;
    out[4 * i + 2] = __float2int_rn(a);
    out[4 * i + 3] = (int)floorf(a);
}

extern "C" __global__ void float_to_int_directed(const float *x, int *out)
{
    int i = threadIdx.x;
    float a = x[i];
    out[3 * i + 0] = __float2int_rd(a);
    out[3 * i + 1] = __float2int_ru(a);
    out[3 * i + 2] = (int)__float2uint_rn(a);
}

extern "C" __global__ void int_to_float(const int *x, float *out)
{
    int i = threadIdx.x;
    int n = x[i];
    out[3 * i + 0] = (float)n;
    out[3 * i + 1] = (float)(unsigned)n;
    out[3 * i + 2] = __int2float_rz(n);
}

extern "C" __global__ void int_to_float_directed(const int *x, float *out)
{
    int i = threadIdx.x;
    int n = x[i];
    out[3 * i + 0] = __int2float_rd(n);
    out[3 * i + 1] = __uint2float_ru((unsigned)n);
    out[3 * i + 2] = __uint2float_rz((unsigned)n);
}

extern "C" __global__ void float_round(const float *x, float *out)
{
    int i = threadIdx.x;
    float a = x[i];
    out[4 * i + 0] = floorf(a);
    out[4 * i + 1] = ceilf(a);
    out[4 * i + 2] = truncf(a);
    out[4 * i + 3] = rintf(a);
}

extern "C" __global__ void wide_to_float(const long long *x, float *out)
{
    int i = threadIdx.x;
    out[i] = (float)x[i];
}

extern "C" __global__ void unsigned_wide_to_float(const unsigned long long *x, float *out)
{
    int i = threadIdx.x;
    out[i] = __ull2float_rd(x[i]);
}

extern "C" __global__ void float_to_wide(const float *x, long long *out)
{
    int i = threadIdx.x;
    out[2 * i + 0] = (long long)x[i];
    out[2 * i + 1] = (long long)(unsigned long long)x[i];
}

extern "C" __global__ void float_to_wide_rounded(const float *x, long long *out)
{
    int i = threadIdx.x;
    out[i] = llrintf(x[i]);
}
