"""Directories the engine cannot run: a `CheckpointError` naming the file and the problem,
and from the CLI a message and exit status 1, never a traceback."""

from __future__ import annotations

import json
import shutil

import pytest

from random_checkpoints import random_model, save, save_random_qwen
from qwengpu.cli import main
from qwengpu.engine import CheckpointError, read_weights


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    return save(random_model(), tmp_path_factory.mktemp("good"))


def copy_of(good, tmp_path):
    directory = tmp_path / "copy"
    shutil.copytree(good, directory)
    return directory


def edit_config(directory, **changes):
    path = directory / "config.json"
    config = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            config.pop(key, None)
        else:
            config[key] = value
    path.write_text(json.dumps(config))


def refused(directory) -> str:
    with pytest.raises(CheckpointError) as caught:
        read_weights(directory)
    return caught.value.message


def test_not_a_checkpoint(tmp_path):
    assert "no such checkpoint directory" in refused(tmp_path / "none")
    assert "no config.json" in refused(tmp_path)
    (tmp_path / "config.json").write_text("{not json")
    assert "config.json: not readable JSON" in refused(tmp_path)


@pytest.mark.parametrize("changes, message", [
    ({"model_type": "llama"}, "model_type 'llama'; the engine runs Qwen3.5"),
    ({"hidden_act": "gelu"}, "hidden_act 'gelu' is not implemented by the engine"),
    ({"rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4}},
     "rope_type 'yarn' is not implemented"),
    ({"linear_conv_kernel_dim": 3}, "linear_conv_kernel_dim 3 is not implemented"),
    ({"attention_bias": True}, "attention_bias is not implemented"),
    ({"dtype": "float16"}, "dtype 'float16' is not implemented"),
    ({"layer_types": ["linear_attention"] * 3 + ["mamba"]}, "layer type 'mamba'"),
    ({"hidden_size": None}, "hidden_size missing"),
    ({"vocab_size": "97"}, "vocab_size is '97', not a positive integer"),
    ({"layer_types": "linear_attention"}, "layer_types is not a list"),
    ({"hidden_size": 32}, "has shape (97, 64), config.json implies (97, 32)"),
])
def test_config_problems(good, tmp_path, changes, message):
    directory = copy_of(good, tmp_path)
    edit_config(directory, **changes)
    text = refused(directory)
    assert message in text and str(directory) in text, text


def test_file_problems(good, tmp_path):
    directory = copy_of(good, tmp_path)
    weights = directory / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[:len(data) // 2])
    assert "model.safetensors: not a readable safetensors file" in refused(directory)
    weights.unlink()
    assert "no model.safetensors (or model.safetensors.index.json)" in refused(directory)
    (directory / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"model.embed_tokens.weight": "model-00001-of-00002.safetensors"}}))
    assert "model-00001-of-00002.safetensors: missing (the shard index names it)" in \
        refused(directory)


def test_a_missing_tensor(good, tmp_path):
    from safetensors.torch import load_file, save_file

    directory = copy_of(good, tmp_path)
    tensors = load_file(str(directory / "model.safetensors"))
    del tensors["model.layers.2.mlp.up_proj.weight"]
    save_file(tensors, str(directory / "model.safetensors"))
    assert "the tensor model.layers.2.mlp.up_proj.weight is missing" in refused(directory)


def test_the_cli_says_what_is_wrong(tmp_path, capsys):
    """A QwenGPU checkpoint (protocol and all) whose weights file is cut short: `hdlc run
    --backend model` names the file, exits 1, prints no traceback."""
    from qwengpu.trace.protocol import TraceProtocol
    from qwengpu.runtime.machine_state import load_machine

    from pathlib import Path

    protocol = TraceProtocol.from_design(load_machine().design)
    save_random_qwen(tmp_path, protocol)
    protocol.save(tmp_path)
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    launch = Path(__file__).resolve().parents[2] / "examples" / "vector_add" / "launch.json"
    capsys.readouterr()
    code = main(["run", str(launch), "--backend", "model", "--model", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert f"{weights}: not a readable safetensors file" in err, err
