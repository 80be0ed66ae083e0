"""Model of collatz/kernel.cu: bounded Collatz steps in unsigned arithmetic."""
from _int32 import run_grid, shr_u, to_unsigned, uadd, umul


def collatz(th, start, steps, peak, limit):
    t = th.threadIdx
    x = to_unsigned(start[t])
    m = x
    s = 0
    while x != 1 and s < limit:
        if x & 1:
            x = uadd(umul(3, x), 1)
        else:
            x = shr_u(x, 1)
        m = max(m, x)           # unsigned max: both are unsigned values
        s += 1
    steps[t] = s
    peak[t] = m


def model(launch):
    return run_grid(launch, collatz)
