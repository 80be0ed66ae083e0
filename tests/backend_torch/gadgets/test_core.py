"""The unit kinds every gadget is made of and the writer that places them (`gadgets/core.py`):
the writer counts units and refuses overlapping ones; forms read binary groups (cube forms,
bit reads, weighted reads, `put`) exactly on every value."""

from __future__ import annotations

import pytest
import torch

from qwengpu.backend_torch.cubes import bits_for
from qwengpu.backend_torch.gadgets.core import MlpWriter, bit_of, const, cube_form, is_value, \
    put, weighted
from qwengpu.backend_torch.model import FULL, LINEAR, blank_model, make_config
from qwengpu.backend_torch.residual import BINARY, ONE, Group, ResidualLayout, decode_many, \
    onehot
from qwengpu.errors import CapacityError


def test_writer_counts_and_refuses_overlap():
    layout = ResidualLayout(40)
    digit, out = layout.alloc_digit("d"), layout.alloc_digit("o")
    counter = MlpWriter(None, range(10), 1.0)
    counter.step(weighted(digit, lambda v: v), 7.5, put(out, 1))
    counter.bias(put(out, 0))
    counter.bias(put(out, 2))
    assert counter.flush() == 3                    # one step pair + one shared bias unit
    with pytest.raises(CapacityError, match="units exhausted"):
        small = MlpWriter(None, range(1), 1.0)
        small.step(const(1.0), 0.5, put(out, 1))
    config = make_config(2, 40, 8, [LINEAR, FULL], 3, linear_num_key_heads=1,
                         linear_num_value_heads=1, linear_key_head_dim=16,
                         linear_value_head_dim=16, num_attention_heads=1,
                         num_key_value_heads=1, head_dim=16)
    mlp = blank_model(config).model.layers[0].mlp
    first = MlpWriter(mlp, range(8), 1.0)
    first.step(const(1.0), 0.5, put(out, 1))
    first.flush()
    second = MlpWriter(mlp, range(1, 8), 1.0)
    second.linear(const(1.0), put(out, 2))
    with pytest.raises(ValueError, match="already in use"):
        second.flush()
    assert ONE.start == 0


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
