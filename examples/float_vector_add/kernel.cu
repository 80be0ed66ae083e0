// c[i] = a[i] + b[i] on floats (IEEE binary32, round to nearest even) for i < n.
extern "C" __global__ void float_vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}
