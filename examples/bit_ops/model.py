"""Model of bit_ops/kernel.cu: shifts, xor and rotates on unsigned words."""
from _int32 import bor, bxor, run_grid, shl, shr_u, to_unsigned, usub


def bit_ops(th, x, k, out):
    t = th.threadIdx
    v = to_unsigned(x[t])
    s = to_unsigned(k[t]) & 31
    base = 5 * t
    out[base + 0] = shl(v, 5)
    out[base + 1] = shr_u(v, 3)
    out[base + 2] = bxor(bxor(v, 0x5A5A5A5A), shr_u(v, 16))
    # (v << s) | (v >> ((32 - s) & 31)): for s == 0 both halves are v, so the result is v.
    out[base + 3] = bor(shl(v, s), shr_u(v, usub(32, s) & 31))
    out[base + 4] = bor(shr_u(v, 7), shl(v, 25))


def model(launch):
    return run_grid(launch, bit_ops)
