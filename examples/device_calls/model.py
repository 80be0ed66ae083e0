"""Model of device_calls/kernel.cu: a chain of device functions, one with two returns."""
from _int32 import run_grid, sadd, smul


def square_plus(a, k):
    return sadd(smul(a, a), k)


def bounded(seen, i, a):
    if a > 50:
        seen[i] = a
        return 50
    return square_plus(a, -1)


def mix(seen, i, a):
    return sadd(bounded(seen, i, square_plus(a, i)), square_plus(i, 3))


def device_calls(th, x, out, seen, n):
    i = th.blockIdx * th.blockDim + th.threadIdx
    if i < n:
        out[i] = mix(seen, i, x[i])


def model(launch):
    return run_grid(launch, device_calls)
