// Integer saxpy: y[i] = a * x[i] + y[i] for i < n.  The launch has more threads than
// elements and a block size that is not a multiple of the warp width.
extern "C" __global__ void saxpy_int(int n, int a, const int *x, int *y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = a * x[i] + y[i];
}
