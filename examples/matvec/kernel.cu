// y = M x for a rows x cols row-major matrix; one thread per row, extra threads idle.
extern "C" __global__ void matvec(const int *m, const int *x, int *y, int rows, int cols)
{
    int r = threadIdx.x;
    if (r >= rows)
        return;
    int acc = 0;
#pragma unroll 1
    for (int c = 0; c < cols; c++)
        acc += m[r * cols + c] * x[c];
    y[r] = acc;
}
