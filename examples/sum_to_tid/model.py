"""Model of sum_to_tid/kernel.cu: loops of tid iterations."""
from _int32 import run_grid, sadd, smul, to_signed


def sum_to_tid(th, out, k):
    t = th.threadIdx
    s = 0
    c = 0
    for i in range(1, t + 1):
        s = sadd(s, to_signed(i ^ k))
        c = sadd(c, smul(i, k) & 1)
    out[2 * t] = s
    out[2 * t + 1] = c


def model(launch):
    return run_grid(launch, sum_to_tid)
