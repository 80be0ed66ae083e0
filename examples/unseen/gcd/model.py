"""Model of unseen/gcd/kernel.cu: gcd by repeated subtraction, bounded."""
from _int32 import run_grid, to_unsigned, usub


def gcd(th, a, b, out, limit):
    t = th.threadIdx
    x = to_unsigned(a[t])
    y = to_unsigned(b[t])
    s = 0
    while x != y and x != 0 and y != 0 and s < limit:
        if x > y:
            x = usub(x, y)
        else:
            y = usub(y, x)
        s += 1
    out[2 * t] = x
    out[2 * t + 1] = s


def model(launch):
    return run_grid(launch, gcd)
