// Kernels that use one float routine several times (tests/ptx/test_ptx_shared_routines.py).

extern "C" __global__ void complex_mul(const float *x, const float *y, float *z)
{
    int i = threadIdx.x;
    float a = x[2 * i], b = x[2 * i + 1], c = y[2 * i], d = y[2 * i + 1];
    z[2 * i] = __fmul_rn(a, c) - __fmul_rn(b, d);
    z[2 * i + 1] = __fmul_rn(a, d) + __fmul_rn(b, c);
}

#define N 4

extern "C" __global__ void matmul4(const float *a, const float *b, float *c)
{
    int row = threadIdx.x / N, col = threadIdx.x % N;
    float sum = 0.0f;
    for (int k = 0; k < N; k++)
        sum += __fmul_rn(a[row * N + k], b[k * N + col]);
    c[row * N + col] = sum;
}
