// Sparse matrix times vector, CSR: one thread per row, products summed in 64 bits.  The row's
// range is clamped to the matrix and column indices are checked, as a robust SpMV does;
// nvcc unrolls the loop twice (#pragma unroll 2), which keeps more values live than the 15
// registers: the allocator recomputes the parameters' reads where they are used
// (rematerialisation) instead of keeping them.
extern "C" __global__ void spmv(const int *row_start, const int *column, const int *value,
                                const int *x, long long *y, int nonzeros, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    int begin = max(row_start[r], 0), end = min(row_start[r + 1], nonzeros);
    long long s = 0;
    #pragma unroll 2
    for (int k = begin; k < end; k++) {
        int c = column[k];
        if ((unsigned)c < (unsigned)cols)
            s += (long long)value[k] * x[c];
    }
    y[r] = s;
}
