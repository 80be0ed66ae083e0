"""Model of divergent_if/kernel.cu: three paths with stores in each, then a join."""
from _int32 import run_grid, sadd, shr_s, smul, ssub


def divergent_if(th, inp, pos, neg, path):
    t = th.threadIdx
    x = inp[t]
    if x > 0:
        if x & 1:
            pos[t] = sadd(smul(3, x), 1)
            p = 1
        else:
            pos[t] = shr_s(x, 1)
            p = 2
    else:
        neg[t] = ssub(x, 100)
        p = 3
    path[t] = sadd(smul(p, 10), t)


def model(launch):
    return run_grid(launch, divergent_if)
