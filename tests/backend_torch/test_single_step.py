"""The single-step harness (`tests/single_step_helpers.py`) on every spec that compiles
today: each compiled with --target min (fp32), loaded with stock transformers, put into 20
seeded random states through the prompt, and its record (and the token after it) compared
with the reference interpreter's, in the decode path (every record token generated) and the
prefill path (the first k tokens of the interpreter's record given with the prompt).  Then the
real machine, specs/qwengpu.hdl, at a reduced size (slow; skipped with its figures while the
compiled model is larger than this machine can build)."""

from __future__ import annotations

import os
import random

import pytest

from qwengpu.trace.protocol import TraceProtocol
from single_step_helpers import check_step, compare, expected_ids, \
    expected_record, is_qwengpu, model_record, model_size, random_state
from qwengpu.dsl import load_design
from qwengpu.isa import Instruction, Op
from compile_helpers import REDUCED, compile_and_load, compile_plan, load
from tiers import first_by_default

SPECS = {
    "tiny_carried": "tests/backend_torch/specs/tiny_carried.hdl",
    "alu_mix": "tests/backend_torch/specs/alu_mix.hdl",
    "two_lanes": "tests/backend_torch/specs/two_lanes.hdl",
    "two_ports": "tests/backend_torch/specs/two_ports.hdl",
    "lane_alu": "tests/backend_torch/specs/lane_alu.hdl",
}
SEEDS = range(20)
PATHS = ("decode", "prefill")

# the one-lane, one-warp instance bench/reduced_on_gpu.sh compiles (the one-thread examples fit it)
# what a 24 GB machine can build (fp32) and load; `$QWENGPU_MAX_PARAMETERS` raises it elsewhere
MAX_PARAMETERS = int(os.environ.get("QWENGPU_MAX_PARAMETERS", 3_000_000_000))


def state_for(design, seed: int) -> dict[str, list[int]]:
    """A seeded random state; a machine with a `halted` bit runs in 4 seeds of 5 (the fifth
    is whatever the draw gives, often stopped: the model must answer <eos>)."""
    rng = random.Random(seed)
    constraints = {"halted": 0} if "halted" in design.registers and seed % 5 else {}
    return random_state(design, rng, **constraints)


def prefill_tokens(protocol, seed: int, path: str) -> int:
    return 0 if path == "decode" else 1 + seed % (protocol.tokens_per_record - 1)


@pytest.fixture(scope="module", params=sorted(SPECS))
def machine(request, tmp_path_factory):
    return compile_and_load(SPECS[request.param], tmp_path_factory.mktemp(request.param))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("seed", first_by_default(SEEDS, 3))
def test_single_step(machine, seed, path):
    compiled, model = machine
    state = state_for(compiled.design, seed)
    difference = check_step(model, compiled.protocol, compiled.design, state,
                            prefill_tokens(compiled.protocol, seed, path))
    assert difference is None, f"seed {seed}, {path}: {difference}"


def test_a_wrong_state_is_caught(machine):
    """The harness can fail: the model run from one state and the interpreter from another
    (one emitted value changed) must differ."""
    compiled, model = machine
    design, protocol = compiled.design, compiled.protocol
    for seed in SEEDS:
        state = state_for(design, seed)
        expected = expected_record(design, state)
        if expected is None:
            continue
        for name, element in sorted({**design.memories, **design.registers}.items()):
            other = {key: list(values) for key, values in state.items()}
            other[name] = [(v + 1) % (1 << element.width) for v in other[name]]
            moved = expected_record(design, other)
            if moved is not None and moved != expected:
                got = model_record(model, protocol, other)
                assert compare(expected, got) is not None
                assert compare(moved, got) is None
                return
    pytest.fail("no seed gave a state whose change moves the record")


# ---- the harness's own pieces (no model) ----------------------------------------------------

def test_compare_names_the_first_differing_field():
    expected = {"pc": 3, "op": 2, "value": 7}
    assert compare(expected, dict(expected)) is None
    assert compare(expected, {"pc": 3, "op": 1, "value": 8}) == \
        "field op: expected 0x2, got 0x1"
    assert compare(None, None) is None
    assert compare(None, expected) == "expected <eos> (the machine stops), got a record"
    assert compare(expected, None) == "expected a record, got <eos>"


def test_random_state_fits_every_element():
    design = load_design(SPECS["alu_mix"])
    state = random_state(design, random.Random(1), n=[3])
    assert state["n"] == [3]
    for name, register in design.registers.items():
        assert len(state[name]) == 1 and 0 <= state[name][0] < 1 << register.width
    with pytest.raises(TypeError, match="no state element"):
        random_state(design, random.Random(1), nothing=1)


@pytest.mark.parametrize("params", [{}, REDUCED], ids=["v1", "reduced"])
def test_qwengpu_states_are_meaningful(params):
    """Every program slot decodes to a real instruction with operands in range, a live lane
    exists, PCs fit; with `op=` the next step issues that opcode, and across seeds every
    opcode (invalid included) is issued."""
    design = load_design("specs/qwengpu.hdl", params) if params else \
        load_design("specs/qwengpu.hdl")
    assert is_qwengpu(design)
    p = design.params
    issued = set()
    for seed in range(2 * len(Op)):
        state = random_state(design, random.Random(seed), op=seed % len(Op))
        for name, element in {**design.memories, **design.registers}.items():
            size = element.size if hasattr(element, "size") else 1
            assert len(state[name]) == size
            assert all(0 <= v < 1 << element.width for v in state[name]), name
        assert any(state["live"]) and state["halted"] == [0]
        assert all(pc < p["PROG_WORDS"] for pc in state["pc"])
        ops = {Instruction.decode(word).op for word in state["prog"]}
        assert Op.INVALID not in ops or seed % len(Op) == 0
        for word in state["prog"]:
            ins = Instruction.decode(word)
            if ins.op == Op.BRA:
                assert ins.imm < p["PROG_WORDS"]
        record = expected_record(design, state)
        assert record is not None and record["op"] == seed % len(Op)
        issued.add(record["op"])
    assert issued == set(range(len(Op)))


def test_expected_ids_end_with_the_following_token():
    design = load_design(SPECS["tiny_carried"])
    protocol = TraceProtocol.from_design(design)
    state = random_state(design, random.Random(0), halted=1)
    assert expected_ids(protocol, design, state) == [protocol.eos_id]
    state = random_state(design, random.Random(0), halted=0)
    ids = expected_ids(protocol, design, state)
    assert len(ids) == protocol.tokens_per_record + 1


# ---- the real machine at a reduced size -----------------------------------------------------

@pytest.fixture(scope="module")
def reduced(tmp_path_factory):
    """specs/qwengpu.hdl with REDUCED parameters, compiled as `hdlc compile` does (--target
    min, fp32, binary values; QWENGPU_REDUCED_MODEL must be such a build) only when the
    model it would build is small enough; otherwise the test is skipped with the figures."""
    compiled = compile_plan("specs/qwengpu.hdl", "min", params=REDUCED, encoding="binary")
    size = model_size(compiled.schedule)
    if size["parameters"] > MAX_PARAMETERS:
        pytest.skip(
            f"reduced QwenGPU ({', '.join(f'{k}={v}' for k, v in REDUCED.items())}) schedules "
            f"into {compiled.schedule.layers_used} of 45 layers, but the min shape is hidden "
            f"{size['hidden']} x intermediate {size['intermediate']} x "
            f"{size['deltanet_heads']} DeltaNet heads (residual peak live "
            f"{size['peak_live_dims']}), {size['parameters'] / 1e9:.2f} G parameters "
            f"({size['fp32_bytes'] / 2**30:.1f} GiB fp32), over the "
            f"{MAX_PARAMETERS / 1e9:.0f} G this machine can build and load")
    given = os.environ.get("QWENGPU_REDUCED_MODEL")      # compiled already with REDUCED
    if given:
        return compiled, load(given)
    return compile_and_load("specs/qwengpu.hdl", tmp_path_factory.mktemp("qwengpu_reduced"),
                            params=REDUCED, encoding="binary")


@pytest.mark.slow
@pytest.mark.parametrize("path", PATHS)
def test_reduced_qwengpu_every_opcode(reduced, path):
    compiled, model = reduced
    failures = []
    for seed in range(2 * len(Op)):
        state = random_state(compiled.design, random.Random(seed), op=seed % len(Op))
        difference = check_step(model, compiled.protocol, compiled.design, state,
                                prefill_tokens(compiled.protocol, seed, path))
        if difference:
            failures.append(f"seed {seed} ({Op(seed % len(Op)).name}): {difference}")
    assert not failures, "\n".join(failures)
