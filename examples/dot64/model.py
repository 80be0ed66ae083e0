"""Model of dot64/kernel.cu: 64-bit dot products (a long long is two words, low first)."""
from _int32 import hi32, lo32, run_grid, to_unsigned


def dot64(th, a, b, out, n):
    def long_at(buffer, index):
        value = to_unsigned(buffer[2 * index]) | to_unsigned(buffer[2 * index + 1]) << 32
        return value - (1 << 64) if value >> 63 else value

    t = th.threadIdx
    s = 0
    for k in range(n):
        s += long_at(a, t * n + k) * long_at(b, k)
        assert -(1 << 63) <= s < 1 << 63, "signed overflow"
    out[2 * t], out[2 * t + 1] = lo32(s), hi32(s)


def model(launch):
    return run_grid(launch, dot64)
