// Naive matrix product C = A B, one thread per element (block = row, thread = column).
// nvcc unrolls the k loop four times: with the four iterations' loads in flight and the
// pointers and bounds kept, more values are live than QwenGPU's 15 registers hold, so the
// register allocator spills some of them to the thread's local memory (docs/ptx.md,
// "Spilling").
extern "C" __global__ void matmul(const int *a, const int *b, int *c, int n, int m, int p)
{
    int row = blockIdx.x;
    int col = threadIdx.x;
    if (row < n && col < p) {
        int s = 0;
        for (int k = 0; k < m; k++)
            s += a[row * m + k] * b[k * p + col];
        c[row * p + col] = s;
    }
}
