// Fibonacci numbers in unsigned arithmetic: thread t iterates n[t] times, stopping early
// once the value passes a limit; several warps and blocks.
extern "C" __global__ void fib_limit(const int *n, unsigned *f, int *iters, unsigned limit)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned a = 0u, b = 1u;
    int k = 0;
    for (; k < n[i]; k++) {
        unsigned c = a + b;
        a = b;
        b = c;
        if (a > limit)
            break;
    }
    f[i] = a;
    iters[i] = k;
}
