"""Model of serial_sort/kernel.cu: insertion sort of a[0..n) in place, counting the moves."""
from _int32 import run_grid, sadd, ssub

# The -P parameters of the reduced machine the example is written for (docs/examples.md).
MACHINE = {"LANES": 1, "WARPS": 1, "REGS": 15, "PREDS": 7, "MEM_WORDS": 32,
           "PROG_WORDS": 64, "PARAM_WORDS": 4}


def serial_sort(th, a, n, moves):
    count = 0
    for i in range(1, n):
        x = a[i]
        j = i
        while j > 0 and a[j - 1] > x:
            a[j] = a[j - 1]
            j = ssub(j, 1)
            count = sadd(count, 1)
        a[j] = x
    moves[0] = count


def model(launch):
    return run_grid(launch, serial_sort)
