// Kernels that need more than QwenGPU's 15 registers: the allocator spills to local memory.

// Twelve accumulators live around a rolled loop: spills and reloads inside the loop.
extern "C" __global__ void spill_loop(const int *x, int *out, int n)
{
    int t = threadIdx.x;
    int a0 = 0, a1 = 1, a2 = 2, a3 = 3, a4 = 4, a5 = 5, a6 = -100, a7 = 100, a8 = 8, a9 = 9,
        a10 = 10, a11 = 11;
    #pragma unroll 1
    for (int k = 0; k < n; k++) {
        int v = x[(t + k) & 15];
        a0 += v; a1 ^= v << 1; a2 += v * 3; a3 -= v; a4 |= v; a5 += k * v;
        a6 = max(a6, v); a7 = min(a7, v); a8 += v >> 2; a9 ^= k; a10 += v & k; a11 += a0;
    }
    int *o = out + 12 * t;
    o[0] = a0; o[1] = a1; o[2] = a2; o[3] = a3; o[4] = a4; o[5] = a5;
    o[6] = a6; o[7] = a7; o[8] = a8; o[9] = a9; o[10] = a10; o[11] = a11;
}

// The same pressure on both sides of a branch that splits every warp (odd and even lanes).
extern "C" __global__ void spill_divergent(const int *x, int *out, int n)
{
    int t = threadIdx.x;
    int a0 = t, a1 = 1, a2 = 2, a3 = 3, a4 = 4, a5 = 5, a6 = 6, a7 = 7, a8 = 8, a9 = 9,
        a10 = 10, a11 = 11;
    #pragma unroll 1
    for (int k = 0; k < n; k++) {
        int v = x[(t + k) & 15];
        if ((t + k) & 1) {
            a0 += v; a1 ^= v; a2 += 3 * v; a3 -= k; a4 += a0; a5 ^= a1;
        } else {
            a6 += v; a7 ^= v << 2; a8 -= v; a9 += k; a10 += a6; a11 ^= a7;
        }
        a0 += a11 & 7;
    }
    int *o = out + 12 * t;
    o[0] = a0; o[1] = a1; o[2] = a2; o[3] = a3; o[4] = a4; o[5] = a5;
    o[6] = a6; o[7] = a7; o[8] = a8; o[9] = a9; o[10] = a10; o[11] = a11;
}
