"""Selection gadgets (`gadgets/choose.py`), exhaustively over their inputs: `choose` with
value sets per arm, a constant arm and a default; `choose` as a graph `select` (an arm per
selector value, no default); `priority` (the first condition that holds wins); in fp32 and
bf16, prefill and decode.  Expected values come from plain Python."""

from __future__ import annotations

from gadget_bench import DTYPES, Bench, check_outputs, run_gadget
from qwengpu.backend_torch.gadgets.choose import choose, priority


def test_choose_with_sets_a_constant_arm_and_a_default(dtype_name):
    bench = Bench.new()
    sel = bench.layout.alloc("sel", 6)
    x, y = bench.layout.alloc_digit("x"), bench.layout.alloc_digit("y")
    out = bench.layout.alloc_digit("out")
    arms = [((0, 3), (x, range(16), None)), ((1,), (None, (11,), 11)),
            ((3, 4), (y, range(16), None))]            # 3 goes to the first arm that has it

    def build(writer):
        choose(writer, (sel, range(6), None), arms, (y, range(16), None), out)

    def reference(s, a, b):
        return a if s in (0, 3) else 11 if s == 1 else b
    cases = [{sel: s, x: a, y: b} for s in range(6) for a in range(0, 16, 3)
             for b in range(1, 16, 4)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    check_outputs(residuals, "choose_sets", dtype_name,
                  {out: [reference(c[sel], c[x], c[y]) for c in cases]})


def test_select_an_arm_per_value(dtype_name):
    bench = Bench.new()
    bit = bench.layout.alloc_bit("bit")
    x, y = bench.layout.alloc_digit("x"), bench.layout.alloc_digit("y")
    out = bench.layout.alloc_digit("out")

    def build(writer):
        choose(writer, (bit, range(2), None),
               [((0,), (x, range(16), None)), ((1,), (y, range(16), None))], None, out)
    cases = [{bit: s, x: a, y: b} for s in range(2) for a in range(16) for b in range(16)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    check_outputs(residuals, "choose_select", dtype_name,
                  {out: [c[y] if c[bit] else c[x] for c in cases]})


def test_priority_first_condition_wins(dtype_name):
    """if a > 9: x elif b is odd: 5 else y."""
    bench = Bench.new()
    a, b = bench.layout.alloc_digit("a"), bench.layout.alloc_digit("b")
    x, y = bench.layout.alloc_digit("x"), bench.layout.alloc_digit("y")
    out = bench.layout.alloc_digit("out")
    terms = [[int(v > 9) for v in range(16)], [v & 1 for v in range(16)]]

    def build(writer):
        priority(writer, terms, [(a, range(16), None), (b, range(16), None)],
                 [(x, range(16), None), (None, (5,), 5)], (y, range(16), None), out)

    def reference(c):
        return c[x] if c[a] > 9 else 5 if c[b] & 1 else c[y]
    cases = [{a: p, b: q, x: (p + 3 * q) % 16, y: (7 * p + q) % 16}
             for p in range(16) for q in range(16)]
    residuals = run_gadget(build, bench, cases, DTYPES[dtype_name])
    check_outputs(residuals, "priority", dtype_name, {out: [reference(c) for c in cases]})
