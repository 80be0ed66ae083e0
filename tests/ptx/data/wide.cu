// 64-bit integer data (long long) for the PTX loader's tests.

extern "C" __global__ void times_three(long long *x)
{
    int i = threadIdx.x;
    x[i] = x[i] * 3;
}

extern "C" __global__ void mix64(long long *x, unsigned long long *y)
{
    int i = threadIdx.x;
    long long a = x[i];
    unsigned long long b = y[i];
    x[i] = a + (long long)b * 5 - (a >> 3) + (a < 0 ? -a : a);
    y[i] = (b << 13) ^ (b >> 7) ^ (unsigned long long)i;
}

extern "C" __global__ void affine64(long long *x, int a, int b)
{
    int i = threadIdx.x;
    x[i] = (long long)a * i + (long long)b;
}
