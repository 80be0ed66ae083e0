"""Model of atomic_order/kernel.cu: one warp of 4 threads, each atomic applied by lane 0, 1,
2, 3 in turn (QwenGPU's documented order), each thread finding the word before its own
update; CUDA's atomicInc/atomicDec wrap at their bound."""
from _int32 import bnot, run_warps, shl, to_signed, to_unsigned



def atomic_order(warp, words, counters, found):
    def step(buffer, index, change):
        old = buffer[index]
        buffer[index] = change(old)
        return old

    found_at = {}
    for t in warp.threads:      # each statement is one atomic for every lane, lane by lane
        found_at[t, 0] = step(words, 0, lambda w: w + t + 1)
    for t in warp.threads:
        found_at[t, 1] = step(words, 1, lambda w: 10 * t)
    for t in warp.threads:
        found_at[t, 2] = step(words, 2, lambda w: min(w, 3 - 2 * t))
    for t in warp.threads:
        found_at[t, 3] = step(words, 3, lambda w: max(w, t * t - 3))
    for t in warp.threads:
        found_at[t, 4] = step(words, 4, lambda w: 2 * t + 2 if w == 2 * t else w)
    ands, ors = {}, {}
    for t in warp.threads:
        ands[t] = step(words, 5, lambda w: w & to_signed(bnot(shl(1, t))))
    for t in warp.threads:
        ors[t] = step(words, 6, lambda w: w | (1 << (2 * t)))
    for t in warp.threads:
        found_at[t, 6] = step(counters, 0, lambda w: 0 if to_unsigned(w) >= 2 else w + 1)
    decs, xors = {}, {}
    for t in warp.threads:
        decs[t] = step(counters, 1, lambda w: 5 if w == 0 or to_unsigned(w) > 5 else w - 1)
    for t in warp.threads:
        xors[t] = step(words, 7, lambda w: w ^ (t + 5))
    for t in warp.threads:
        found_at[t, 5] = ands[t] ^ ors[t]
        found_at[t, 7] = to_signed(to_unsigned(decs[t]) + xors[t])
        for k in range(8):
            found[t * 8 + k] = found_at[t, k]


def model(launch):
    return run_warps(launch, atomic_order)
