// Gathers through indices read from memory, for the address checks' tests (docs/ptx.md
// "Memory"): one bounds-checks the index as CUDA code does, which proves its access safe; the
// other does not, and keeps the check that traps on an index past 2^30.
// The PTX next to this file is what `nvcc -ptx -arch=sm_80 -O3 bounds.cu` makes of it.

extern "C" __global__ void gather_checked(const int *idx, const int *a, int *out, int n, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) {
        int j = idx[i];
        out[i] = (j >= 0 && j < n) ? a[j] : -1;
    }
}

extern "C" __global__ void gather_unchecked(const int *idx, const int *a, int *out, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m)
        out[i] = a[idx[i]];
}
