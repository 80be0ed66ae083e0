// Polynomial evaluation by Horner's rule: y[i] = c[0] + c[1] x + ... + c[deg] x^deg.
extern "C" __global__ void horner(const int *c, const int *x, int *y, int deg, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    int v = x[i];
    int acc = c[deg];
#pragma unroll 1
    for (int k = deg - 1; k >= 0; k--)
        acc = acc * v + c[k];
    y[i] = acc;
}
