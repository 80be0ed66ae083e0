"""Model of unseen/hash_mix/kernel.cu: xor-shift / multiply hash, rotate, signed clamp."""
from _int32 import bor, bxor, run_grid, shl, shr_u, sneg, to_signed, to_unsigned, uadd, umul


def hash_mix(th, inp, h, clamped, lim):
    t = th.threadIdx
    x = uadd(to_unsigned(inp[t]), t)
    x = bxor(x, shr_u(x, 16))
    x = umul(x, 0x45D9F3B)
    x = bxor(x, shr_u(x, 16))
    x = bor(shl(x, 13), shr_u(x, 19))
    h[t] = x
    s = to_signed(x)
    clamped[t] = max(sneg(lim), min(s, lim))


def model(launch):
    return run_grid(launch, hash_mix)
