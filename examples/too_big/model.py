"""Model of too_big/kernel.cu.

What the kernel means is simple (out[k] = x[k] * sum(x)), but it cannot run on QwenGPU: 40
values are live at once, a thread has 15 registers, and spilling the rest needs more local
memory than a thread has, so loading it must fail with an error that mentions registers.  `EXPECT_ERROR` is the substring make_expected.py writes; the model
is kept so the example still documents (and checks) the kernel's meaning.
"""
from _int32 import run_grid, sadd, smul

EXPECT_ERROR = "registers"


def too_big(th, x, out):
    v = [x[k] for k in range(40)]
    s = 0
    for value in v:
        s = sadd(s, value)
    for k in range(40):
        out[k] = smul(v[k], s)


def model(launch):
    return run_grid(launch, too_big)
