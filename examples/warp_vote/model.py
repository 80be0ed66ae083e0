"""Model of warp_vote/kernel.cu on QwenGPU's 4-lane warps: bit i of a warp's masks is its lane
i; the lanes that take the `v % 3 == 0` branch run __activemask together (C's % truncates)."""
from _int32 import run_warps, srem


def warp_vote(warp, in_, ballots, flags, reached):
    values = [in_[t] for t in warp.threads]
    positive = sum(1 << lane for lane, v in enumerate(values) if v > 0)
    any_big = int(any(v > 50 for v in values))
    all_even = int(all(v & 1 == 0 for v in values))
    branch = sum(1 << lane for lane, v in enumerate(values) if srem(v, 3) == 0)
    for lane, t in enumerate(warp.threads):
        ballots[t] = positive
        flags[t] = any_big * 2 + all_even
        reached[t] = branch if branch >> lane & 1 else 0


def model(launch):
    return run_warps(launch, warp_vote)
