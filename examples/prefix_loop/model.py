"""Model of prefix_loop/kernel.cu: inclusive prefix sum and hash of a[0..t]."""
from _int32 import run_grid, sadd, to_unsigned, uadd, umul


def prefix_loop(th, a, psum, hash_):
    t = th.threadIdx
    s = 0
    h = 17
    for j in range(t + 1):
        s = sadd(s, a[j])
        h = uadd(umul(h, 31), to_unsigned(a[j]))
    psum[t] = s
    hash_[t] = h


def model(launch):
    return run_grid(launch, prefix_loop)
