"""Word selection by a bit (`selp`) and by a one-hot selector, in both dtypes and paths."""

import random

from qwengpu.backend_torch.gadgets.mux import SelectOneHot, SelectWord
from qwengpu.backend_torch.residual import ResidualLayout

BOUNDS = {"fp32": dict(max_deviation=1e-4, min_margin=0.999),
          "bf16": dict(max_deviation=0.05, min_margin=0.9)}


def test_select_word_8bit_exhaustive_by_digit(bench, dtype_name):
    """Every digit pair and both selector values (8-bit words: 2 x 256 x 256 is covered
    digit by digit: each output digit sees all 16 x 16 x 2 combinations)."""
    layout = ResidualLayout(128)
    bit = layout.alloc_bit("p")
    x, y, out = (layout.alloc_word(n, 2) for n in ("x", "y", "out"))
    cases, expected = [], []
    for s in (0, 1):
        for u in range(16):
            for v in range(16):
                xv, yv = u * 0x11, v * 0x11 ^ 0x0F
                cases.append({bit: s, x: xv, y: yv})
                expected.append(xv if s else yv)
    gadget = SelectWord(bit, x, y, out)
    assert gadget.cost().units == (2 * 2 * 16 * 2,)
    run = bench.run(gadget, layout, cases, bench.DTYPES[dtype_name])
    bench.check(run, "selp_8bit", dtype_name, {out: expected}, **BOUNDS[dtype_name])


def test_select_one_hot_32bit(bench, dtype_name):
    rng = random.Random(5)
    layout = ResidualLayout(1024)
    selector = layout.alloc("sel", 5)
    words = [layout.alloc_word(f"w{n}") for n in range(5)]
    out = layout.alloc_word("out")
    cases, expected = [], []
    for index in range(200):
        values = [rng.getrandbits(32) for _ in words]
        if index < 10:
            values = [0xFFFFFFFF if n == index % 5 else 0 for n in range(5)]
        choice = index % 5
        cases.append({selector: choice, **dict(zip(words, values))})
        expected.append(values[choice])
    gadget = SelectOneHot(selector, words, out)
    run = bench.run(gadget, layout, cases, bench.DTYPES[dtype_name])
    bench.check(run, "select_onehot_5x32bit", dtype_name, {out: expected},
                **BOUNDS[dtype_name])
