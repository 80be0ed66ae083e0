"""Compile targets (`backend_torch/target.py`): the Qwen3.5-2B shape from its TOML file,
`min` sized from the schedule, and clear errors for targets that are not one."""

from __future__ import annotations

import pytest

from qwengpu.backend_torch.target import MIN, fit_min_target, load_target
from qwengpu.errors import UserError


def test_two_b_target_loads():
    target = load_target("qwen3.5-2b")
    assert (target.hidden_size, target.intermediate_size, target.linear_heads) == \
        (2048, 6144, 16)
    assert target.layer_types.count("full_attention") == 11
    assert target.layer_types[0] == "linear_attention"
    with pytest.raises(UserError, match="unknown target"):
        load_target("qwen9")


@pytest.mark.parametrize("text, message", [
    ("num_layers = 44\nhidden_size = 64\nintermediate_size = 64\n", "num_layers must be 45"),
    ("hidden_size = 64\nintermediate_size = 64\n[linear_attention]\nnum_key_heads = 4\n"
     "num_value_heads = 8\n", "as many DeltaNet key heads as value heads"),
    ("hidden_size = \n", "thin.toml"),
])
def test_targets_that_are_not_one(tmp_path, text, message):
    path = tmp_path / "thin.toml"
    path.write_text(text)
    with pytest.raises(UserError, match=message):
        load_target(str(path))
    with pytest.raises(UserError, match=r"unknown target 'nowhere' \(known: min, qwen3.5-2b"):
        load_target("nowhere")


def test_min_is_sized_by_the_schedule():
    """min keeps 45 layers with only the last full attention; its sizes round up to 8."""
    assert MIN.is_min and MIN.layer_types == ["linear_attention"] * 44 + ["full_attention"]
    built = fit_min_target(MIN, dims=130, units=1, heads=3)
    assert (built.hidden_size, built.intermediate_size, built.linear_heads) == (136, 8, 3)
    two_b = load_target("qwen3.5-2b")
    assert fit_min_target(two_b, 10, 10, 1) is two_b          # a file target is what it is
