"""Binary residual encodings: the cube algebra (exhaustive over small code spaces and seeded
random sets), the forms gadgets read binary groups with, and which values a plan makes binary.
Whole checkpoints with binary values run under stock transformers in test_compile_*.py."""

from __future__ import annotations

import random

import pytest
import torch

from qwengpu.backend_torch.cubes import affine_in_bits, bits_for, disjoint_cubes
from qwengpu.backend_torch.encodings import choose_encodings
from qwengpu.backend_torch.gadgets.core import bit_of, cube_form, is_value, put, weighted
from qwengpu.backend_torch.residual import BINARY, Group, ResidualLayout, decode_many, onehot


def _members(cube: dict[int, int], bits: int) -> set[int]:
    return {code for code in range(1 << bits)
            if all((code >> bit) & 1 == value for bit, value in cube.items())}


@pytest.mark.parametrize("seed", range(40))
def test_disjoint_cubes_partition_the_accepted_values(seed):
    rng = random.Random(seed)
    bits = rng.choice([1, 2, 3, 4, 7])
    domain = set(rng.sample(range(1 << bits), rng.randint(1, 1 << bits)))
    accepted = {v for v in domain if rng.random() < 0.5}
    cubes = disjoint_cubes(accepted, domain, bits)
    covered = [_members(cube, bits) & domain for cube in cubes]
    assert set().union(*covered) == accepted          # every accepted value, nothing else
    assert sum(len(c) for c in covered) == len(accepted)   # each in one cube only


def test_disjoint_cubes_are_few_for_the_usual_sets():
    assert disjoint_cubes({3}, range(16), 4) == [{0: 1, 1: 1, 2: 0, 3: 0}]
    assert disjoint_cubes(range(8, 16), range(16), 4) == [{3: 1}]
    assert disjoint_cubes(range(16), range(16), 4) == [{}]
    assert disjoint_cubes(set(), range(16), 4) == []
    # values 121..127 never occur: "index >= 120" is one cube of 7 bits
    assert len(disjoint_cubes({120}, range(121), 7)) == 1
    assert len(disjoint_cubes(range(1, 16), range(16), 4)) == 4


def test_affine_in_bits():
    assert affine_in_bits([v for v in range(16)], range(16), 4) == (0.0, [1.0, 2.0, 4.0, 8.0])
    assert affine_in_bits([3 * v + 5 for v in range(16)], range(16), 4) == \
        (5.0, [3.0, 6.0, 12.0, 24.0])
    assert affine_in_bits([v % 3 for v in range(16)], range(16), 4) is None
    # outside the domain anything goes: {0, 1, 2} -> 0, 1, 2 is affine on two bits
    assert affine_in_bits([0, 1, 2], [0, 1, 2], 2) == (0.0, [1.0, 2.0])


def _vectors(group: Group, hidden: int) -> torch.Tensor:
    """One residual per value of `group`: ONE and the group's signs."""
    layout = ResidualLayout(hidden)
    layout.groups[group.name] = group
    return layout.embed_many({group: list(range(group.count))})


@pytest.mark.parametrize("count", [2, 3, 16, 57, 121])
def test_binary_forms_read_every_value_exactly(count):
    group = Group("g", 1, bits_for(count), kind=BINARY, values=count)
    vectors = _vectors(group, 1 + group.size)
    for value in range(count):
        reads = is_value(group, value).apply(vectors)
        assert reads[value] == 1.0
        assert (torch.cat([reads[:value], reads[value + 1:]]) <= 0).all()
    for bit in range(group.size):
        expected = torch.tensor([float((v >> bit) & 1) for v in range(count)], dtype=torch.float64)
        assert torch.equal(bit_of(group, bit).apply(vectors), expected)
    number = weighted(group, lambda v: 3 * v - 2).apply(vectors)
    assert torch.equal(number, torch.tensor([3.0 * v - 2 for v in range(count)],
                                            dtype=torch.float64))
    values, margins = decode_many(group, vectors)
    assert values.tolist() == list(range(count)) and (margins == 1).all()


def test_binary_put_and_cube_form():
    group = Group("g", 1, 4, kind=BINARY)
    assert put(group, 0b1010) == {1: -1.0, 2: 1.0, 3: -1.0, 4: 1.0}
    assert torch.equal(onehot(group, 0b0110), torch.tensor([-1.0, 1.0, 1.0, -1.0]))
    vectors = _vectors(group, 5)
    high = cube_form(group, {3: 1}).apply(vectors)
    assert high.tolist() == [0.0] * 8 + [1.0] * 8
    with pytest.raises(ValueError, match="not affine"):
        weighted(group, lambda v: v * v)
    with pytest.raises(ValueError, match="no hot dim"):
        group.dim(3)


def test_choose_encodings_keeps_what_binary_cannot_read():
    from compile_helpers import compile_plan
    plan = compile_plan("tests/backend_torch/specs/tiny_carried.hdl", encoding="onehot").plan
    assert all(value.encoding == "onehot" for value in plan.values.values())
    why = choose_encodings(plan)
    assert why["tok.bos"] == "the constant group"
    assert all(why[v] == "read by the lm_head" for v in plan.emission.values())
    binary = [v for v in plan.values.values() if v.encoding == BINARY]
    assert binary and all(v.size == bits_for(v.count) for v in binary)
    with pytest.raises(ValueError, match="unknown encoding"):
        choose_encodings(plan, "gray")


TINY = "tests/backend_torch/specs/tiny_carried.hdl"


@pytest.fixture(scope="module")
def tiny_binary(tmp_path_factory):
    from compile_helpers import compile_to, load
    directory = tmp_path_factory.mktemp("tiny_binary")
    compiled = compile_to(TINY, directory, encoding="binary")
    return compiled, load(directory)


def test_binary_values_are_a_quarter_of_the_residual(tiny_binary):
    from compile_helpers import compile_plan
    compiled, _ = tiny_binary
    onehot = compile_plan(TINY, encoding="onehot").schedule
    assert any(v.encoding == BINARY for v in compiled.plan.values.values())
    assert compiled.schedule.dims < onehot.dims / 2


@pytest.mark.parametrize("seed", range(4))
def test_binary_checkpoint_runs_programs_exactly(tiny_binary, seed):
    """The tiny machine with binary values under stock transformers: a loop with taken and
    untaken jumps after a prefilled prefix, and seeded random states, against the
    interpreter (prefill and token-by-token decode inside `run_case`)."""
    from compile_helpers import PROGRAMS, run_case, texts
    from qwengpu.dsl import Simulator
    compiled, model = tiny_binary
    sim = Simulator(compiled.design)
    if seed == 0:
        sim.load_memory("prog", PROGRAMS["countdown"])
        expected, got = run_case(compiled, model, sim, prefix=7)
    else:
        rng = random.Random(seed)
        sim.load_memory("prog", [rng.getrandbits(16) for _ in range(16)])
        sim.load_memory("regs", [rng.getrandbits(8) for _ in range(4)])
        sim.set_register("pc", rng.randrange(16))
        expected, got = run_case(compiled, model, sim, max_records=2)
    assert texts(compiled, got) == texts(compiled, expected)


def test_bfloat16_refuses_binary_values(tmp_path):
    from compile_helpers import compile_plan, compile_to
    from qwengpu.backend_torch.checkpoint import build_model
    from qwengpu.errors import UserError
    compiled = compile_plan(TINY, encoding="binary")
    with pytest.raises(ValueError, match="exact in float32 only"):
        build_model(compiled.schedule, torch.bfloat16)
    with pytest.raises(UserError, match="exact in float32 only"):
        compile_to(TINY, tmp_path, torch.bfloat16, encoding="binary")


def test_a_binary_plan_has_a_norm_anchor_and_fresh_analog_dims():
    """The anchor (one dim at 512 on every token) dominates the norm ledger; analog column
    sums (read at 2^16 times their scale) never share a dim with another value."""
    from compile_helpers import compile_plan
    from qwengpu.backend_torch.encodings import ANCHOR_SCALE
    from qwengpu.backend_torch.plan import NORM_ANCHOR, embedding_values
    spec = "tests/backend_torch/specs/alu_mix.hdl"
    assert NORM_ANCHOR not in compile_plan(spec, encoding="onehot").plan.values
    schedule = compile_plan(spec, encoding="binary").schedule
    plan = schedule.plan
    assert NORM_ANCHOR in plan.embedding
    assert plan.values[NORM_ANCHOR].hot_entries == ANCHOR_SCALE ** 2
    assert embedding_values(plan, plan.protocol.bos_id)[NORM_ANCHOR] == 1
    assert schedule.hot_entries(0) > ANCHOR_SCALE ** 2
    analog = [v for v in schedule.order if plan.values[v].analog_scale is not None
              and v != NORM_ANCHOR and v in schedule.start]
    assert analog
    for a in analog:
        for other in schedule.order:
            size = plan.values[other].size
            if other != a and schedule.start[other] <= schedule.start[a] < \
                    schedule.start[other] + size:
                raise AssertionError(f"{a} shares dim {schedule.start[a]} with {other}")
