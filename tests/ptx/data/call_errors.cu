// Calls QwenGPU refuses, each for a reason the message must give in CUDA terms.
#include <cstdio>

__device__ int fib(int n)
{
    if (n < 2) return n;
    return fib(n - 1) + fib(n - 2);
}

__device__ int is_odd(int n);
__device__ int is_even(int n)
{
    if (n == 0) return 1;
    return is_odd(n - 1);
}
__device__ int is_odd(int n)
{
    if (n == 0) return 0;
    return is_even(n - 1) ^ (n & 0);
}

extern "C" __global__ void recursive(int *x)
{
    x[threadIdx.x] = fib(x[threadIdx.x]);
}

extern "C" __global__ void mutually_recursive(int *x)
{
    x[threadIdx.x] = is_even(x[threadIdx.x]);
}

extern "C" __global__ void prints(int *x)
{
    printf("thread %d has %d\n", threadIdx.x, x[threadIdx.x]);
}

struct Shape { __device__ virtual int area(int k) const { return k; } };
struct Square : Shape { __device__ int area(int k) const override { return k * k; } };

__device__ __noinline__ int measure(const Shape *shape, int k) { return shape->area(k); }

extern "C" __global__ void virtual_call(int *x)
{
    Square square;
    Shape plain;
    const Shape *shape = x[0] ? (const Shape *)&square : &plain;
    x[threadIdx.x] = measure(shape, x[threadIdx.x]);
}
