"""`hdlc export DIR --gguf OUT`: the compiled counter machine as a float32 qwen35 GGUF.

The expectations are llama.cpp's converter conventions (`convert_hf_to_gguf.py`,
`Qwen3_5TextModel`) written out here, checked against the checkpoint's own safetensors:
every tensor under its GGUF name, `A_log` as `-exp(A_log)`, `dt_bias` as `ssm_dt.bias`,
the conv taps squeezed to [C, 4], every zero-centred norm weight plus 1 but the
DeltaNet's gated norm; the layer kinds as `qwen35.attention.recurrent_layers`; the
vocabulary as the tokenizer's ids, control tokens CONTROL and machine tokens USER_DEFINED,
one merge that joins no machine text.  Then the bad inputs: not a checkpoint, not a
compiled one, an output that cannot be written, a damaged safetensors file, the gguf
package missing — each a clear message, exit 1, nothing written.
"""

from __future__ import annotations

import builtins
import json
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file

from compile_helpers import compile_to
from qwengpu.cli import main

gguf = pytest.importorskip("gguf", reason="the GGUF export needs the gguf package: pip "
                                          "install -e \".[llamacpp]\"")


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    directory = tmp_path_factory.mktemp("counter")
    compile_to("specs/counter.hdl", directory)
    return directory


@pytest.fixture(scope="module")
def exported(counter, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "deep" / "er" / "counter.gguf"
    assert main(["export", str(counter), "--gguf", str(out)]) == 0
    return out


def fields(path) -> tuple[dict, dict]:
    reader = gguf.GGUFReader(str(path))
    values = {name: field.contents() for name, field in reader.fields.items()}
    tensors = {tensor.name: tensor for tensor in reader.tensors}
    return values, tensors


def test_the_parameters_are_the_config(counter, exported):
    config = json.loads((counter / "config.json").read_text())
    values, _ = fields(exported)
    assert values["general.architecture"] == "qwen35"
    assert values["general.file_type"] == 0                          # ALL_F32
    assert values["qwen35.block_count"] == 45
    assert values["qwen35.embedding_length"] == config["hidden_size"]
    assert values["qwen35.feed_forward_length"] == config["intermediate_size"]
    assert values["qwen35.ssm.inner_size"] == 128 * config["linear_num_value_heads"]
    assert values["qwen35.ssm.group_count"] == config["linear_num_key_heads"]
    assert values["qwen35.ssm.conv_kernel"] == 4
    assert values["qwen35.attention.recurrent_layers"] == [
        kind == "linear_attention" for kind in config["layer_types"]]
    rotary = values["qwen35.rope.dimension_count"]
    assert rotary == config["head_dim"] // 4
    assert sum(values["qwen35.rope.dimension_sections"]) == rotary // 2
    assert values["qwen35.attention.layer_norm_rms_epsilon"] == pytest.approx(1e-6)


def test_the_vocabulary_is_the_machine_s(counter, exported):
    tokenizer = json.loads((counter / "tokenizer.json").read_text())
    vocab = tokenizer["model"]["vocab"]
    values, _ = fields(exported)
    tokens = values["tokenizer.ggml.tokens"]
    assert values["tokenizer.ggml.model"] == "gpt2"
    assert values["tokenizer.ggml.pre"] == "default"
    assert {text: index for index, text in enumerate(tokens)} == vocab
    types = values["tokenizer.ggml.token_type"]
    assert types[:5] == [3] * 5                                       # CONTROL
    assert set(types[5:]) == {4}                                      # USER_DEFINED
    assert values["tokenizer.ggml.merges"] == ["Ġ Ġ"]
    assert not any(" " in text or "Ġ" in text for text in tokens)     # nothing it can join
    assert (values["tokenizer.ggml.bos_token_id"], values["tokenizer.ggml.eos_token_id"],
            values["tokenizer.ggml.padding_token_id"]) == (2, 4, 0)
    assert values["tokenizer.ggml.add_bos_token"] is False


def test_the_tensors_follow_the_converter(counter, exported):
    source = load_file(str(counter / "model.safetensors"))
    _, tensors = fields(exported)
    assert len(tensors) == len(source)

    def gguf_tensor(name):
        tensor = tensors[name]
        assert tensor.tensor_type == gguf.GGMLQuantizationType.F32, name
        return torch.from_numpy(np.array(tensor.data)).reshape(
            tuple(reversed([int(size) for size in tensor.shape])))

    assert torch.equal(gguf_tensor("token_embd.weight"), source["model.embed_tokens.weight"])
    assert torch.equal(gguf_tensor("output.weight"), source["lm_head.weight"])
    assert torch.equal(gguf_tensor("output_norm.weight"), source["model.norm.weight"] + 1)
    layer = "model.layers.0."
    assert torch.equal(gguf_tensor("blk.0.ssm_a"), -torch.exp(source[layer + "linear_attn.A_log"]))
    assert torch.equal(gguf_tensor("blk.0.ssm_a"), torch.full((2,), -0.0))   # decay 1
    assert torch.equal(gguf_tensor("blk.0.ssm_dt.bias"), source[layer + "linear_attn.dt_bias"])
    conv = source[layer + "linear_attn.conv1d.weight"]
    assert torch.equal(gguf_tensor("blk.0.ssm_conv1d.weight"), conv[:, 0, :])
    assert torch.equal(gguf_tensor("blk.0.ssm_norm.weight"), source[layer + "linear_attn.norm.weight"])
    assert torch.equal(gguf_tensor("blk.0.attn_norm.weight"),
                       source[layer + "input_layernorm.weight"] + 1)
    assert torch.equal(gguf_tensor("blk.0.post_attention_norm.weight"),
                       source[layer + "post_attention_layernorm.weight"] + 1)
    for ours, theirs in [("attn_qkv", "linear_attn.in_proj_qkv"), ("attn_gate", "linear_attn.in_proj_z"),
                         ("ssm_beta", "linear_attn.in_proj_b"), ("ssm_alpha", "linear_attn.in_proj_a"),
                         ("ssm_out", "linear_attn.out_proj"), ("ffn_gate", "mlp.gate_proj"),
                         ("ffn_up", "mlp.up_proj"), ("ffn_down", "mlp.down_proj")]:
        assert torch.equal(gguf_tensor(f"blk.0.{ours}.weight"), source[f"{layer}{theirs}.weight"])
    last = "model.layers.44.self_attn."
    assert torch.equal(gguf_tensor("blk.44.attn_q_norm.weight"), source[last + "q_norm.weight"] + 1)
    assert torch.equal(gguf_tensor("blk.44.attn_output.weight"), source[last + "o_proj.weight"])


def test_the_export_is_deterministic(counter, exported, tmp_path):
    again = tmp_path / "again.gguf"
    assert main(["export", str(counter), "--gguf", str(again)]) == 0
    assert again.read_bytes() == exported.read_bytes()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["again.gguf"]   # no .partial


def test_not_a_checkpoint(tmp_path, capsys):
    assert main(["export", str(tmp_path / "nowhere"), "--gguf", str(tmp_path / "x.gguf")]) == 1
    assert "no such checkpoint directory" in capsys.readouterr().err
    assert main(["export", str(tmp_path), "--gguf", str(tmp_path / "x.gguf")]) == 1
    assert "no config.json" in capsys.readouterr().err
    assert not (tmp_path / "x.gguf").exists()


def test_not_a_compiled_checkpoint(counter, tmp_path, capsys):
    """A Qwen3.5 checkpoint without the machine's protocol.json is refused."""
    plain = tmp_path / "plain"
    shutil.copytree(counter, plain)
    (plain / "protocol.json").unlink()
    assert main(["export", str(plain), "--gguf", str(tmp_path / "x.gguf")]) == 1
    assert "not a compiled QwenGPU checkpoint" in capsys.readouterr().err
    assert not (tmp_path / "x.gguf").exists()


def test_an_output_that_cannot_be_written(counter, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert main(["export", str(counter), "--gguf", str(blocker / "x.gguf")]) == 1
    assert "is a file, not a folder" in capsys.readouterr().err
    assert main(["export", str(counter), "--gguf", str(tmp_path)]) == 1
    assert "it is a folder" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a-file"]


def test_a_damaged_checkpoint_leaves_nothing(counter, tmp_path, capsys):
    damaged = tmp_path / "damaged"
    shutil.copytree(counter, damaged)
    weights = damaged / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:len(weights.read_bytes()) // 2])
    out = tmp_path / "out" / "x.gguf"
    assert main(["export", str(damaged), "--gguf", str(out)]) == 1
    assert "model.safetensors" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.rglob("*.partial"))


def test_without_the_gguf_package(counter, tmp_path, capsys, monkeypatch):
    real_import = builtins.__import__

    def blocked(name, *args, **kwargs):
        if name == "gguf" or name.startswith("gguf."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
    assert main(["export", str(counter), "--gguf", str(tmp_path / "x.gguf")]) == 1
    err = capsys.readouterr().err
    assert "needs the gguf package" in err and "pip install -e \".[llamacpp]\"" in err
    assert not (tmp_path / "x.gguf").exists()


def test_a_failure_while_writing_leaves_nothing(counter, tmp_path, capsys, monkeypatch):
    """The header is written, then reading the tenth tensor fails: no GGUF, no .partial."""
    from qwengpu.engine.weights import CheckpointError
    from qwengpu.llamacpp import export

    real_read, calls = export._TensorSources.read, []

    def failing(self, name):
        calls.append(name)
        if len(calls) == 10:
            raise CheckpointError(f"cannot read {name} (a test)")
        return real_read(self, name)

    monkeypatch.setattr(export._TensorSources, "read", failing)
    out = tmp_path / "x.gguf"
    assert main(["export", str(counter), "--gguf", str(out)]) == 1
    assert "(a test)" in capsys.readouterr().err
    assert len(calls) == 10 and list(tmp_path.iterdir()) == []


def test_a_three_part_mrope_section_is_padded(counter, tmp_path):
    """Qwen3.5 configs give `mrope_section` as three numbers; llama.cpp wants four."""
    copy = tmp_path / "copy"
    shutil.copytree(counter, copy)
    config = json.loads((copy / "config.json").read_text())
    config["rope_parameters"]["mrope_section"] = [1, 1, 0]
    (copy / "config.json").write_text(json.dumps(config))
    assert main(["export", str(copy), "--gguf", str(tmp_path / "x.gguf")]) == 0
    values, _ = fields(tmp_path / "x.gguf")
    assert values["qwen35.rope.dimension_sections"] == [1, 1, 0, 0]
