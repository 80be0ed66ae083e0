"""Model of nested_loops/kernel.cu: a triangle of (i ^ j) + w terms."""
from _int32 import run_grid, sadd


def nested_loops(th, out, w):
    t = th.threadIdx
    acc = 0
    for i in range(t):
        for j in range(i + 1):
            acc = sadd(acc, sadd(i ^ j, w))
    out[t] = acc


def model(launch):
    return run_grid(launch, nested_loops)
