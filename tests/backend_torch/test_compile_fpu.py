"""The FPU's add compiled into a Qwen3.5 model, against numpy's float32 addition.

The gadget machine of tests/fpu_helpers.py (the FPU functions of specs/qwengpu.hdl, four
lanes, each step `fadd.s1` or `fadd.s2` on every lane's pair) is compiled with --target min
in fp32.  The sparse engine writes the traces of 160 launches in one batch, 10,240 operand
pairs (uniform bit patterns, specials, subnormals, cancellation, ties, overflow; 4 launches
in the default run, all 160 in the extra tier), and every sum the model wrote is checked
against numpy; stock transformers writes the same ids as the engine (and as the interpreter)
token by token and after a prefilled prefix.
"""

from __future__ import annotations

import numpy as np
import pytest

from qwengpu.dsl import Simulator
from qwengpu.engine import SparseEngine
from qwengpu.trace.decode import decode_trace
from compile_helpers import compile_and_load, run_case, simulator_state, texts
from tiers import first_by_default
from fpu_helpers import fpu_gadget_spec, operand_pairs, reference_add
from qwengpu.trace.prompt import state_prompt

pytestmark = pytest.mark.heavy     # one worker runs the heavy files in turn: tests/workers.py

LANES, PAIRS = 4, 16
LAUNCHES = 160                        # 160 x 4 lanes x 16 pairs = 10,240 sums
DEFAULT_LAUNCHES = 4                  # 256 sums in the default run (all 160: the extra tier)


@pytest.fixture(scope="module")
def fpu(tmp_path_factory):
    directory = tmp_path_factory.mktemp("fpu_add")
    spec = fpu_gadget_spec(directory / "fpu_add.hdl")
    return compile_and_load(str(spec), directory / "checkpoint")


def launch(compiled, a: np.ndarray, b: np.ndarray, first_pair: int = 0) -> Simulator:
    """The gadget with `a` and `b` ([LANES][PAIRS] words) in memory, from `first_pair` on."""
    sim = Simulator(compiled.design)
    sim.load_memory("xs", [int(word) for word in a.flatten()])
    sim.load_memory("ys", [int(word) for word in b.flatten()])
    sim.set_register("pair", first_pair)
    return sim


def sums_written(compiled, ids: list[int]) -> dict[tuple[int, int], int]:
    """(lane, pair) -> the word of the pair's fadd.s2 record, decoded from the model's ids."""
    sums = {}
    for record in decode_trace(ids, compiled.protocol):
        if record["phase"]:
            for lane in range(LANES):
                sums[lane, record["pair"]] = record[f"word{lane}"]
    return sums


@pytest.mark.parametrize("launches", first_by_default([DEFAULT_LAUNCHES, LAUNCHES]))
def test_the_engine_adds_the_pairs_exactly(fpu, launches):
    """256 sums by default (4 launches), 10,240 in the extra tier."""
    compiled, model = fpu
    a, b = operand_pairs(np.random.default_rng(45), launches * LANES * PAIRS)
    a, b = a.reshape(launches, LANES, PAIRS), b.reshape(launches, LANES, PAIRS)
    prompts = [state_prompt(compiled.protocol, simulator_state(launch(compiled, a[n], b[n])))
               for n in range(launches)]
    engine = SparseEngine.load(model.name_or_path)
    written = engine.generate(prompts, 40 * PAIRS * 2, eos_id=compiled.protocol.eos_id)
    wrong, checked = [], 0
    for n, ids in enumerate(written):
        want = reference_add(a[n], b[n])
        sums = sums_written(compiled, ids)
        assert len(sums) == LANES * PAIRS, f"launch {n} wrote {len(sums)} sums"
        for (lane, pair), word in sums.items():
            checked += 1
            if word != want[lane, pair]:
                wrong.append(f"{a[n, lane, pair]:#010x} + {b[n, lane, pair]:#010x}: "
                             f"{word:#010x}, numpy {want[lane, pair]:#010x}")
    assert checked == launches * LANES * PAIRS
    assert not wrong, f"{len(wrong)} wrong sums, e.g. " + "; ".join(wrong[:3])


FIRST_PAIR = 14                       # stock transformers adds the last two pairs a lane


@pytest.mark.parametrize("prefix", first_by_default([0, 40]))
def test_stock_transformers_writes_the_same_sums(fpu, prefix):
    """Two pairs a lane (from pair 14 on: eight sums), token by token and after `prefix`
    tokens of the interpreter's trace prefilled; the engine's ids (and llama.cpp's) are
    checked equal inside run_case.  The pairs before 14 are never read: they are left zero,
    which the prompt leaves out (106 tokens rather than 654)."""
    compiled, model = fpu
    a, b = operand_pairs(np.random.default_rng(7 + prefix), LANES * PAIRS)
    a, b = a.reshape(LANES, PAIRS), b.reshape(LANES, PAIRS)
    a[:, :FIRST_PAIR] = b[:, :FIRST_PAIR] = 0
    expected, got = run_case(compiled, model, launch(compiled, a, b, first_pair=FIRST_PAIR), prefix)
    assert texts(compiled, got) == texts(compiled, expected)
    if prefix == 0:
        want = reference_add(a, b)
        sums = sums_written(compiled, got)
        assert sorted(sums) == [(lane, pair) for lane in range(LANES) for pair in range(FIRST_PAIR, PAIRS)]
        assert all(word == want[lane, pair] for (lane, pair), word in sums.items())
