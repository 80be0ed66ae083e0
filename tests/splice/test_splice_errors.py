"""`hdlc splice` on bad input: a clear message, exit status 1, no traceback, and nothing
written: neither OUT_DIR nor the `.OUT_DIR.partial` it is built in.

The bad bases are variants of one real MIN_SHAPE base (`bases.make_base`, made once): its
files linked, the one under test removed or rewritten.  What can be refused from the base
alone (its directory, config, safetensors, tokenizer, an existing OUT_DIR) is refused before
the compile, which these tests forbid (`no_compile`).  A base too small for the machine fails
in the compile's schedule step (seconds) and names the resource and the shortfall; a base
whose text no hyperplane separates fails at the text gate after the schedule, a tokenizer
that already spells a machine token after the schedule, and a failure in the write step,
after the weights, must leave no `.partial` directory.  Two of them cost a full compile
each (~35 s).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from bases import MIN_SHAPE, BaseShape, make_base  # noqa: E402
from compile_helpers import REDUCED_FLAGS  # noqa: E402
from qwengpu.cli import main  # noqa: E402

pytestmark = pytest.mark.heavy     # one worker runs the heavy files in turn: tests/workers.py



@pytest.fixture(scope="module")
def made_base(tmp_path_factory) -> Path:
    """A real text-form, untied, float32 MIN_SHAPE base."""
    return make_base(tmp_path_factory.mktemp("made") / "base", MIN_SHAPE)


def variant(made: Path, directory: Path, *, drop=(), files=None, config=None) -> Path:
    """`directory` holding links to `made`'s files, less those in `drop`; `files` maps names
    to new contents (text or bytes); `config(dict)` edits a copy of config.json."""
    directory.mkdir()
    files = dict(files or {})
    if config is not None:
        data = json.loads((made / "config.json").read_text())
        config(data)
        files["config.json"] = json.dumps(data)
    for path in sorted(made.iterdir()):
        if path.name not in drop and path.name not in files:
            (directory / path.name).symlink_to(path)
    for name, content in files.items():
        if isinstance(content, bytes):
            (directory / name).write_bytes(content)
        else:
            (directory / name).write_text(content)
    return directory


@pytest.fixture
def no_compile(monkeypatch):
    """The compile must not start: the input is refused from the base alone."""
    def refuse(*_args, **_options):
        raise AssertionError("splice compiled before refusing its input")
    monkeypatch.setattr("qwengpu.compiler.compile", refuse)


@pytest.fixture
def refused(tmp_path, capsys):
    """refused(base) runs `hdlc splice --base BASE -o OUT` (the reduced machine) into an empty
    folder, demands exit status 1, an `error:` line, no traceback and the folder as it was
    (OUT left as found, no `.OUT.partial`), and returns stderr."""
    def run(base, output: Path | None = None, extra=()) -> str:
        output = output or tmp_path / "outputs" / "spliced"
        output.parent.mkdir(exist_ok=True)
        before = sorted(p.name for p in output.parent.iterdir())
        capsys.readouterr()
        code = main(["splice", "--base", str(base), "-o", str(output), *REDUCED_FLAGS,
                     *extra])
        err = capsys.readouterr().err
        assert code == 1 and "Traceback" not in err and "error: " in err, err
        assert sorted(p.name for p in output.parent.iterdir()) == before, err
        assert not (output.parent / f".{output.name}.partial").exists()
        return err
    return run


# 1. the base directory and its config.json

def test_no_base_directory(tmp_path, refused, no_compile):
    err = refused(tmp_path / "nowhere")
    assert f"{tmp_path / 'nowhere'}: no such base checkpoint directory" in err


def test_no_config_json(made_base, tmp_path, refused, no_compile):
    base = variant(made_base, tmp_path / "base", drop={"config.json"})
    assert f"{base}: no config.json, not a checkpoint" in refused(base)


def test_config_json_not_json(made_base, tmp_path, refused, no_compile):
    base = variant(made_base, tmp_path / "base", files={"config.json": "{'model_type': "})
    assert f"{base / 'config.json'}: not JSON: " in refused(base)


# 2. not Qwen3.5

def test_a_llama_base(made_base, tmp_path, refused, no_compile):
    base = variant(made_base, tmp_path / "base",
                   config=lambda config: config.update(model_type="llama"))
    err = refused(base)
    assert "model_type 'llama' is not Qwen3.5" in err and "qwen3_5_text" in err


# 3. the safetensors

def test_no_safetensors(made_base, tmp_path, refused, no_compile):
    base = variant(made_base, tmp_path / "base", drop={"model.safetensors"})
    assert "no model.safetensors or model.safetensors.index.json" in refused(base)


def test_an_index_naming_a_missing_shard(made_base, tmp_path, refused, no_compile):
    index = {"metadata": {}, "weight_map": {
        "model.embed_tokens.weight": "model.safetensors",
        "model.norm.weight": "model-00002-of-00002.safetensors"}}
    base = variant(made_base, tmp_path / "base",
                   files={"model.safetensors.index.json": json.dumps(index)})
    err = refused(base)
    assert "model.safetensors.index.json: names " in err
    assert "model-00002-of-00002.safetensors, which does not exist" in err


def test_no_embedding(made_base, tmp_path, refused, no_compile):
    from safetensors.torch import save

    hidden = MIN_SHAPE.hidden_size
    weights = save({"model.norm.weight": torch.zeros(hidden),
                    "lm_head.weight": torch.zeros(4, hidden)})
    base = variant(made_base, tmp_path / "base", files={"model.safetensors": weights})
    assert "the safetensors hold no model.embed_tokens.weight" in refused(base)


# 4. the tokenizer

def test_no_tokenizer_json(made_base, tmp_path, refused, no_compile):
    base = variant(made_base, tmp_path / "base", drop={"tokenizer.json"})
    err = refused(base)
    assert f"{base / 'tokenizer.json'}: no such file" in err and "BPE" in err


def test_a_word_level_tokenizer(made_base, tmp_path, refused, no_compile):
    from tokenizers import Tokenizer, models, pre_tokenizers

    bpe = json.loads((made_base / "tokenizer.json").read_text())
    vocab = dict(bpe["model"]["vocab"])
    vocab.update((token["content"], token["id"]) for token in bpe["added_tokens"])
    word_level = Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    word_level.pre_tokenizer = pre_tokenizers.Whitespace()
    base = variant(made_base, tmp_path / "base", files={"tokenizer.json": word_level.to_str()})
    err = refused(base)
    assert f"{base / 'tokenizer.json'}: " in err
    assert "WordLevel" in err and "byte-level BPE" in err


# 5. OUT_DIR exists

def test_an_existing_output_directory(made_base, tmp_path, refused, no_compile):
    output = tmp_path / "outputs" / "spliced"
    output.mkdir(parents=True)
    err = refused(made_base, output)
    assert f"{output}: already exists" in err
    assert list(output.iterdir()) == []


# 6. a base too small for the machine: the schedule names the resource and the shortfall

SMALL_BASES = {
    "narrow residual": (dict(hidden_size=256), "residual dims: the plan needs ",
                        r"has 256 \(\d+ short\)"),
    "narrow MLP": (dict(intermediate_size=1024), "MLP units: the plan needs ",
                   r"has 1024 \(\d+ short\)"),
    "two DeltaNet heads": (dict(linear_heads=2), "DeltaNet heads: ",
                           r"needs \d+ heads in one layer, the target has 2"),
}


@pytest.mark.parametrize("name", sorted(SMALL_BASES))
def test_a_base_too_small_for_the_machine(name, tmp_path, refused):
    import re

    change, resource, shortfall = SMALL_BASES[name]
    # one base layer: the splice reads them all (the bound) before the compile refuses
    shape = BaseShape(**{**MIN_SHAPE.__dict__, "num_layers": 1, **change})
    base = make_base(tmp_path / "small", shape)
    err = refused(base)
    assert resource in err and re.search(shortfall, err), err


# 7. DeltaNet shapes the compiler does not build

def test_key_heads_differ_from_value_heads(made_base, tmp_path, refused, no_compile):
    base = variant(made_base, tmp_path / "base",
                   config=lambda config: config.update(linear_num_key_heads=4))
    err = refused(base)
    assert "linear_num_key_heads 4 and linear_num_value_heads 8 differ" in err


def test_a_three_tap_convolution(made_base, tmp_path, refused, no_compile):
    base = variant(made_base, tmp_path / "base",
                   config=lambda config: config.update(linear_conv_kernel_dim=3))
    err = refused(base)
    assert "linear_conv_kernel_dim 3; the compiled DeltaNet layers need a convolution of 4 " \
        "taps" in err


# 8. after the compile: the text gate, and a failure in the write step

def test_text_that_cannot_be_gated_off(made_base, tmp_path, refused):
    """Embedding row 1 is -row 0: no hyperplane through the origin has both on one side."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(made_base / "model.safetensors"))
    embedding = tensors["model.embed_tokens.weight"]
    embedding[1] = -embedding[0]
    base = variant(made_base, tmp_path / "base", drop={"model.safetensors"})
    save_file(tensors, str(base / "model.safetensors"), metadata={"format": "pt"})
    err = refused(base)
    assert "error: the base's text embeddings cannot be gated off" in err
    assert "no hyperplane has all" in err and "The weakest condition" in err


def test_a_margin_base_tokens_could_beat(made_base, tmp_path, refused):
    """With --margin 1 the machine's answer scores 3; a base token can score more on a
    machine position (about 10 on this base): refused, naming the margin that would do."""
    err = refused(made_base, extra=("--margin", "1"))
    assert "on a machine position, within 1 of the machine's 3: splice with a --margin of " \
        "at least" in err


def test_a_base_token_spelled_like_a_machine_token(made_base, tmp_path, refused):
    """Refused after the schedule (which gives the machine's tokens), before the weights."""
    from qwengpu.splice.vocab import machine_spelling

    tokenizer = json.loads((made_base / "tokenizer.json").read_text())
    clash = machine_spelling("<trace>")
    tokenizer["added_tokens"][-1]["content"] = clash
    base = variant(made_base, tmp_path / "base",
                   files={"tokenizer.json": json.dumps(tokenizer)})
    err = refused(base)
    assert "emit:" not in err                   # refused before the weights were built
    assert f"the base already has the machine spellings {clash}" in err


def test_a_failure_in_the_write_step_leaves_nothing(made_base, tmp_path, refused,
                                                    monkeypatch):
    """The disk full halfway through the first shard written into `.OUT.partial`: a clear
    error, and that directory goes."""
    import errno

    def full(tensors, filename, metadata=None):
        with open(filename, "wb") as file:
            file.write(b"\0" * 4096)
        raise OSError(errno.ENOSPC, "No space left on device", filename)
    monkeypatch.setattr("safetensors.torch.save_file", full)
    err = refused(made_base)
    assert "write: the spliced checkpoint" in err and "no space left to write the output" in err


def test_an_embedding_that_is_not_the_config_s_shape(made_base, tmp_path, refused,
                                                    no_compile):
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(made_base / "model.safetensors"))
    tensors["model.embed_tokens.weight"] = tensors["model.embed_tokens.weight"][:, :512].contiguous()
    base = variant(made_base, tmp_path / "base", drop={"model.safetensors"})
    save_file(tensors, str(base / "model.safetensors"), metadata={"format": "pt"})
    err = refused(base)
    assert (f"model.embed_tokens.weight is [960, 512], the config says "
            f"[960, {MIN_SHAPE.hidden_size}]") in err
