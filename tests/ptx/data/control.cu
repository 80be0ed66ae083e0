// Loops, divergence and early exits for the PTX loader's tests.

// An unrolled loop (nvcc unrolls by 4 and keeps a remainder loop).
extern "C" __global__ void weighted_prefix(int *x)
{
    int i = threadIdx.x;
    int s = 0;
    for (int k = 0; k < i; k++) s += k * x[k];
    x[i + 16] = s;
}

// Nested if/else on data: lanes of one warp take different sides.
extern "C" __global__ void branches(int *x)
{
    int i = threadIdx.x;
    int v = x[i];
    if (v > 0 && v < 100) x[i] = v * 3;
    else if (v == -5 || v > 1000) x[i] = -v;
    else x[i] = abs(v);
}

// A data-dependent loop (Collatz steps) behind an early return.
extern "C" __global__ void collatz_steps(int *x, int n)
{
    int i = threadIdx.x;
    if (i >= n) return;
    int v = x[i];
    while (v > 1) {
        if (v & 1) v = 3 * v + 1; else v >>= 1;
        x[i + 8]++;
    }
    x[i] = v;
}

// A grid-stride loop over several blocks.
extern "C" __global__ void grid_stride(int *x, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        x[i] = x[i] * 2 + 1;
}

// A 64-bit loop counter compared with a 64-bit parameter (setp.lt.u64).
extern "C" __global__ void size_t_loop(int *x, unsigned long n)
{
    for (unsigned long i = threadIdx.x; i < n; i += 4) x[i] += 1;
}

// A loop over pointers, ended by a pointer comparison.
extern "C" __global__ void pointer_loop(int *x, int *end)
{
    for (int *p = x + threadIdx.x; p < end; p += 4) *p += 10;
}
