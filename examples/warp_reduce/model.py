"""Model of warp_reduce/kernel.cu on QwenGPU's 4-lane warps (warpSize is 4): per warp, the sum
of its values (to sums[warp]), their maximum (to every lane) and lane 2's value (to every
lane)."""
from _int32 import WARP_SIZE, run_warps, sadd


def warp_reduce(warp, in_, sums, maxima, from_lane2):
    values = [in_[t] for t in warp.threads]
    total = 0
    for v in values:
        total = sadd(total, v)
    sums[warp.threads[0] // WARP_SIZE] = total
    for t in warp.threads:
        maxima[t] = max(values)
        from_lane2[t] = values[2]


def model(launch):
    return run_warps(launch, warp_reduce)
