"""Table lookups, exhaustively: every input value (pairs: every pair) in both paths and dtypes."""

import pytest

from qwengpu.backend_torch.gadgets.lookup import PairLookup, TableLookup
from qwengpu.backend_torch.residual import ResidualLayout


BOUNDS = {"fp32": dict(max_deviation=1e-4, min_margin=0.999),
          "bf16": dict(max_deviation=0.05, min_margin=0.9)}


def test_table_lookup_exhaustive(bench, dtype_name):
    layout = ResidualLayout(128)
    src, dst = layout.alloc_digit("src"), layout.alloc_digit("dst")
    table = [(7 * v + 3) % 16 if v % 5 else 9 for v in range(16)]   # not a permutation
    gadget = TableLookup(src, dst, table)
    assert gadget.cost().units == (2 * len(set(table)),)
    run = bench.run(gadget, layout, [{src: v} for v in range(16)], bench.DTYPES[dtype_name])
    bench.check(run, "table_lookup", dtype_name, {dst: table}, **BOUNDS[dtype_name])


@pytest.mark.parametrize("op", ["add_mod16", "and", "xor"])
def test_pair_lookup_exhaustive(bench, op, dtype_name):
    fn = {"add_mod16": lambda x, y: (x + y) % 16, "and": lambda x, y: x & y,
          "xor": lambda x, y: x ^ y}[op]
    layout = ResidualLayout(128)
    a, b, dst = layout.alloc_digit("a"), layout.alloc_digit("b"), layout.alloc_digit("dst")
    gadget = PairLookup(a, b, dst, fn)
    cases = [{a: x, b: y} for x in range(16) for y in range(16)]
    run = bench.run(gadget, layout, cases, bench.DTYPES[dtype_name])
    bench.check(run, f"pair_lookup_{op}", dtype_name,
                  {dst: [fn(x, y) for x in range(16) for y in range(16)]}, **BOUNDS[dtype_name])
