// Nested loops with thread-dependent bounds: a triangle of (i ^ j) + w terms.
extern "C" __global__ void nested_loops(int *out, int w)
{
    int t = threadIdx.x;
    int acc = 0;
#pragma unroll 1
    for (int i = 0; i < t; i++) {
#pragma unroll 1
        for (int j = 0; j <= i; j++)
            acc += (i ^ j) + w;
    }
    out[t] = acc;
}
