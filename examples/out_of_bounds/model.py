"""Model of out_of_bounds/kernel.cu: the second store indexes far past memory.

The launch passes idx = 1000 while memory has 126 words, so the model's Buffer raises
AddressFault and make_expected.py records {"trap": "address"}.
"""
from _int32 import run_grid


def out_of_bounds(th, p, idx):
    t = th.threadIdx
    p[t] = t
    p[idx + t] = 7


def model(launch):
    return run_grid(launch, out_of_bounds)
