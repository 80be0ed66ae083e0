"""Model of divide64/kernel.cu: C's long long `/` and `%` (truncating towards zero; a long long
is two words, low first)."""
from _int32 import hi32, lo32, run_grid, to_unsigned

def divide64(th, a, b, quotient, remainder):
    def long_at(buffer, index):
        value = to_unsigned(buffer[2 * index]) | to_unsigned(buffer[2 * index + 1]) << 32
        return value - (1 << 64) if value >> 63 else value

    t = th.threadIdx
    x, y = long_at(a, t), long_at(b, t)
    assert y != 0 and not (x == -(1 << 63) and y == -1), "undefined in C"
    q = abs(x) // abs(y)
    q = q if (x < 0) == (y < 0) else -q
    r = x - q * y
    quotient[2 * t], quotient[2 * t + 1] = lo32(q), hi32(q)
    remainder[2 * t], remainder[2 * t + 1] = lo32(r), hi32(r)


def model(launch):
    return run_grid(launch, divide64)
