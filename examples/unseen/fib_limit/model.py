"""Model of unseen/fib_limit/kernel.cu: unsigned Fibonacci with an early break."""
from _int32 import run_grid, to_unsigned, uadd


def fib_limit(th, n, f, iters, limit):
    i = th.blockIdx * th.blockDim + th.threadIdx
    limit = to_unsigned(limit)
    a, b = 0, 1
    k = 0
    while k < n[i]:
        c = uadd(a, b)
        a = b
        b = c
        if a > limit:
            break
        k += 1
    f[i] = a
    iters[i] = k


def model(launch):
    return run_grid(launch, fib_limit)
