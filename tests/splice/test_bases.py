"""The stand-in Qwen3.5 bases of `bases.py` load with transformers' Auto classes, have the
promised vocabulary, tying, layer types and logits, and are byte-for-byte reproducible."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer

# pytest puts this folder on sys.path only while it has no __init__.py
if str(Path(__file__).parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent))
from bases import (MIN_SHAPE, QWEN35_2B_DIMS, TEXT_SAMPLE, layer_types,  # noqa: E402
                   make_base, text_ids)

FORMS = {
    "text-tied": dict(tied=True),
    "text-untied": dict(tied=False),
    "multimodal-untied": dict(multimodal=True),
    "multimodal-tied-bf16-sharded": dict(multimodal=True, tied=True, dtype=torch.bfloat16,
                                         max_shard_size="20MB"),
}


@pytest.fixture(scope="module")
def bases(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bases")
    return {name: make_base(root / name, **options) for name, options in FORMS.items()}


def load(directory: Path):
    config = json.loads((directory / "config.json").read_text())
    auto = AutoModelForImageTextToText if "text_config" in config else AutoModelForCausalLM
    return auto.from_pretrained(directory).eval()


def tensor_names(directory: Path) -> set[str]:
    names = set()
    for path in directory.glob("*.safetensors"):
        with safe_open(str(path), "pt") as tensors:
            names.update(tensors.keys())
    return names


def embedding_and_head(model):
    return model.get_input_embeddings().weight, model.get_output_embeddings().weight


def file_bytes(directory: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}


@pytest.mark.parametrize("form", FORMS)
def test_loads_with_auto_classes(bases, form):
    options = FORMS[form]
    model = load(bases[form])
    expected = ("Qwen3_5ForConditionalGeneration" if options.get("multimodal")
                else "Qwen3_5ForCausalLM")
    assert type(model).__name__ == expected
    assert model.dtype == options.get("dtype", torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(bases[form])
    assert (tokenizer.eos_token, tokenizer.pad_token) == ("<|im_end|>", "<|endoftext|>")
    assert tokenizer.decode(tokenizer("<|im_start|>user\nhi<|im_end|>")["input_ids"]) == \
        "<|im_start|>user\nhi<|im_end|>"


@pytest.mark.parametrize("form", FORMS)
def test_vocab_rows_round_the_tokenizer_up_to_64(bases, form):
    tokenizer_size = len(AutoTokenizer.from_pretrained(bases[form]))
    embedding, head = embedding_and_head(load(bases[form]))
    rows = embedding.shape[0]
    assert rows % 64 == 0 and tokenizer_size <= rows < tokenizer_size + 64
    assert embedding.shape == head.shape == (rows, MIN_SHAPE.hidden_size)


def test_vocab_rows_can_be_chosen(tmp_path):
    directory = make_base(tmp_path / "base", vocab_rows=1024)
    assert json.loads((directory / "config.json").read_text())["vocab_size"] == 1024
    with pytest.raises(ValueError, match="vocab_rows"):
        make_base(tmp_path / "small", vocab_rows=100)


@pytest.mark.parametrize("form", FORMS)
def test_tied_bases_store_one_matrix(bases, form):
    tied = FORMS[form].get("tied", False)
    config = json.loads((bases[form] / "config.json").read_text())
    assert config["tie_word_embeddings"] is tied
    assert config.get("text_config", config)["tie_word_embeddings"] is tied
    assert ("lm_head.weight" in tensor_names(bases[form])) is not tied
    embedding, head = embedding_and_head(load(bases[form]))
    assert (embedding.data_ptr() == head.data_ptr()) is tied


@pytest.mark.parametrize("form", FORMS)
def test_tensor_names_follow_the_release(bases, form):
    names = tensor_names(bases[form])
    prefix = "model.language_model." if FORMS[form].get("multimodal") else "model."
    for name in ["embed_tokens.weight", "norm.weight", "layers.0.linear_attn.A_log",
                 "layers.3.self_attn.q_proj.weight"]:
        assert prefix + name in names
    assert any(name.startswith("model.visual.") for name in names) is \
        bool(FORMS[form].get("multimodal"))


def test_layer_types_put_full_attention_every_fourth_layer(bases):
    text = json.loads((bases["text-untied"] / "config.json").read_text())
    multimodal = json.loads((bases["multimodal-untied"] / "config.json").read_text())
    expected = ["linear_attention"] * 3 + ["full_attention"]
    assert text["layer_types"] == multimodal["text_config"]["layer_types"] == expected
    assert layer_types(8)[3::4] == ["full_attention"] * 2
    assert layer_types(2) == ["linear_attention", "full_attention"]


@pytest.mark.parametrize("form", FORMS)
def test_text_logits_are_finite_and_vary(bases, form):
    ids = text_ids(bases[form])
    with torch.no_grad():
        logits = load(bases[form])(torch.tensor([ids])).logits[0].float()
    assert torch.isfinite(logits).all()
    top = logits.max(dim=-1).values
    assert 5 < top.median() < 30
    assert logits.argmax(dim=-1).unique().numel() > len(ids) // 10


def test_text_ids_cover_the_sample(bases):
    ids = text_ids(bases["text-untied"])
    assert 200 <= len(ids) <= 1000
    assert AutoTokenizer.from_pretrained(bases["text-untied"]).decode(ids) == TEXT_SAMPLE
    assert ids == text_ids(bases["multimodal-untied"])


def test_multimodal_bases_carry_processor_files(bases):
    directory = bases["multimodal-untied"]
    config = json.loads((directory / "config.json").read_text())
    assert config["architectures"] == ["Qwen3_5ForConditionalGeneration"]
    assert config["text_config"]["model_type"] == "qwen3_5_text"
    for name in ["preprocessor_config.json", "video_preprocessor_config.json"]:
        assert json.loads((directory / name).read_text())["patch_size"] == 16
    assert not (bases["text-untied"] / "preprocessor_config.json").exists()


def test_sharded_bases_have_an_index(bases):
    directory = bases["multimodal-tied-bf16-sharded"]
    index = json.loads((directory / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1
    assert set(index["weight_map"]) == tensor_names(directory)
    assert json.loads((directory / "config.json").read_text())["text_config"]["dtype"] == \
        "bfloat16"


@pytest.mark.parametrize("form", ["text-untied", "multimodal-tied-bf16-sharded"])
def test_same_arguments_give_identical_files(bases, tmp_path, form):
    again = make_base(tmp_path / form, **FORMS[form])
    assert file_bytes(again) == file_bytes(bases[form])


def test_seed_changes_the_weights(bases, tmp_path):
    other = make_base(tmp_path / "other", seed=1)
    assert file_bytes(other)["model.safetensors"] != \
        file_bytes(bases["text-untied"])["model.safetensors"]


@pytest.mark.slow
def test_qwen35_2b_dims_base(tmp_path):
    directory = make_base(tmp_path / "base", QWEN35_2B_DIMS, tied=True, multimodal=True,
                          dtype=torch.bfloat16)
    model = load(directory)
    assert model.config.text_config.hidden_size == 2048
    ids = text_ids(directory)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()
    assert torch.isfinite(logits).all()
    assert logits.argmax(dim=-1).unique().numel() > len(ids) // 10


def test_the_standin_script_writes_the_2b_shape(tmp_path, capsys):
    """bench/make_standin.py: Qwen3.5-2B's dimensions at the depth and vocabulary asked for,
    bfloat16, tied; an existing folder is refused."""
    sys.path.insert(0, str(Path(__file__).parents[1]))
    from bench_scripts import bench_script

    script = bench_script("make_standin")
    out = tmp_path / "standin"
    assert script.main([str(out), "--layers", "1", "--vocab-rows", "1024"]) == 0
    config = json.loads((out / "config.json").read_text())
    text = config.get("text_config", config)
    assert (text["num_hidden_layers"], text["hidden_size"], text["intermediate_size"],
            text["vocab_size"]) == (1, 2048, 6144, 1024)
    assert config["tie_word_embeddings"] and text["layer_types"] == ["full_attention"]
    with safe_open(out / "model.safetensors", "pt") as tensors:
        assert all(tensors.get_tensor(name).dtype == torch.bfloat16 for name in tensors.keys())
    capsys.readouterr()
    assert script.main([str(out)]) == 1
    assert "exists" in capsys.readouterr().err
