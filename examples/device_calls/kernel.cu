// Device functions that nvcc keeps as real calls (__noinline__), which the loader inlines:
// a chain of calls (mix calls bounded and square_plus, bounded calls square_plus), several
// call sites of one function (square_plus: three), and a function with two return paths.
__device__ __noinline__ int square_plus(int a, int k)
{
    return a * a + k;
}

__device__ __noinline__ int bounded(int *seen, int i, int a)
{
    if (a > 50) {                  // the first return: clamped, and noted in `seen`
        seen[i] = a;
        return 50;
    }
    return square_plus(a, -1);     // the second
}

__device__ __noinline__ int mix(int *seen, int i, int a)
{
    return bounded(seen, i, square_plus(a, i)) + square_plus(i, 3);
}

extern "C" __global__ void device_calls(const int *x, int *out, int *seen, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = mix(seen, i, x[i]);
}
