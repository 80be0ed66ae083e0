"""The compiled counter machine in llama.cpp (`--engine llama.cpp`), held to stock transformers.

`hdlc generate --engine llama.cpp --check` runs it from its reset state with every record
checked against the interpreter; `run_case` demands the ids stock `generate()` wrote (from
another state, after a prefilled prefix).  Then the engine's own behaviour: the GGUF cached
beside the checkpoint (exported once, again when the checkpoint changes), an explicit
`--gguf`, rows of a batch that do not see each other, a context that grows under a long
trace, llama.cpp's tokenizer reading the prompt's text, and the bad inputs: `--gguf` without
the engine, a GGUF that is not there, xllamacpp not installed.  The machine-sized runs are
in test_llamacpp_machines.py (slow).
"""

from __future__ import annotations

import builtins
import json
import os
import shutil

import pytest

from compile_helpers import compile_to, load, run_case, texts
from llamacpp_helpers import llamacpp_installed, skip_without_llamacpp
from qwengpu.cli import main
from qwengpu.dsl import Simulator
from qwengpu.trace.prompt import simulator_state, state_prompt

SPEC = "specs/counter.hdl"


@pytest.fixture(scope="module")
def counter(tmp_path_factory):
    directory = tmp_path_factory.mktemp("counter") / "counter"
    return compile_to(SPEC, directory), directory


@pytest.fixture
def needs_llamacpp():
    skip_without_llamacpp()


def prompt_from(compiled, count: int) -> list[int]:
    sim = Simulator(compiled.design)
    sim.set_register("count", count)
    return state_prompt(compiled.protocol, simulator_state(sim))


def test_generate_with_check(counter, needs_llamacpp, capsys):
    compiled, directory = counter
    capsys.readouterr()
    assert main(["generate", SPEC, "--model", str(directory), "--engine", "llama.cpp",
                 "--check", "--json", "--threads", "1"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [record["count"] for record in result["records"]] == list(range(11))
    assert result["tokens"] == 12                                       # and <eos>
    assert directory.with_name("counter.gguf").is_file()              # the cache, beside


def test_the_ids_of_stock_transformers(counter, needs_llamacpp):
    compiled, directory = counter
    sim = Simulator(compiled.design)
    sim.set_register("count", 3)
    expected, got = run_case(compiled, load(directory), sim, prefix=2)   # asserts llama.cpp
    assert texts(compiled, got) == texts(compiled, expected)


def test_the_cache_is_reused_until_the_checkpoint_changes(counter, needs_llamacpp, tmp_path):
    from qwengpu.llamacpp import LlamaCppEngine, cached_gguf

    _, directory = counter
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    cache = cached_gguf(copy)
    assert cache == tmp_path / "copy.gguf"
    written = cache.stat().st_mtime_ns
    assert cached_gguf(copy).stat().st_mtime_ns == written            # reused
    os.utime(copy / "model.safetensors", ns=(written + 10 ** 9, written + 10 ** 9))
    assert cached_gguf(copy).stat().st_mtime_ns != written            # exported again
    engine = LlamaCppEngine.load(copy, threads=1)
    assert engine.path == cache and engine.vocab_size == 520 and engine.eos_token_id == 4


def test_an_explicit_gguf(counter, needs_llamacpp, tmp_path, capsys):
    _, directory = counter
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    gguf = tmp_path / "elsewhere" / "machine.gguf"
    assert main(["export", str(copy), "--gguf", str(gguf)]) == 0
    capsys.readouterr()
    assert main(["generate", SPEC, "--model", str(copy), "--engine", "llama.cpp",
                 "--gguf", str(gguf), "--check", "--threads", "1"]) == 0
    assert "11 records, 12 tokens" in capsys.readouterr().out
    assert not (tmp_path / "copy.gguf").exists()                       # no cache made


def test_rows_and_threads_do_not_change_ids(counter, needs_llamacpp):
    from qwengpu.llamacpp import LlamaCppEngine

    compiled, directory = counter
    prompts = [prompt_from(compiled, 7), prompt_from(compiled, 0), prompt_from(compiled, 9)]
    alone = LlamaCppEngine.load(directory, threads=1)
    solo = [alone.generate([prompt], 20, compiled.protocol.eos_id)[0] for prompt in prompts]
    assert texts(compiled, solo[0]) == "count.b0=07 count.b0=08 count.b0=09 count.b0=0a <eos>"
    assert alone.generate(prompts, 20, compiled.protocol.eos_id) == solo
    alone.close()
    two = LlamaCppEngine.load(directory, threads=2)
    assert two.generate(prompts, 20, compiled.protocol.eos_id) == solo
    session, steps = two.session(prompts, max_new_tokens=3), []
    for step in session:
        steps.append(step)
        if step == [(1, 6)]:
            session.end(1)                         # a row ended early: the next goes on
    assert steps == [[(0, 12)], [(0, 13)], [(0, 14)], [(1, 5)], [(1, 6)], [(2, 14)],
                     [(2, 15)], [(2, 4)]]
    two.close()


def test_a_long_trace_grows_the_context(counter, needs_llamacpp, monkeypatch):
    """With room for 3 new tokens at first and contexts of any size, the 12-token trace
    fills three contexts; each time the row goes on from its prompt and ids in one twice
    the size, and the ids are those of one context."""
    from qwengpu.llamacpp import LlamaCppEngine, engine as module

    compiled, directory = counter
    prompt = prompt_from(compiled, 0)
    want = LlamaCppEngine.load(directory, threads=1).generate([prompt], 50)[0]
    monkeypatch.setattr(module, "FIRST_ROOM", 3)
    monkeypatch.setattr(module, "CONTEXT_STEP", 1)
    engine = LlamaCppEngine.load(directory, threads=1)
    contexts = []
    real_server = engine.server

    def recording(context):
        contexts.append(context)
        return real_server(context)

    engine.server = recording
    assert engine.generate([prompt], 50)[0] == want == \
        compiled.protocol.encode_records(Simulator(compiled.design).run(100))
    assert contexts[0] == len(prompt) + 3 and engine.context >= len(prompt) + len(want)
    assert len(set(contexts)) >= 3


def test_llama_cpp_reads_the_prompt_s_text(counter, needs_llamacpp):
    """The prompt as whitespace-separated token texts (what `hdlc launch --text` shows)
    tokenizes in llama.cpp to the prompt's ids: the same count, the same continuation."""
    from qwengpu.llamacpp import LlamaCppEngine

    compiled, directory = counter
    prompt = prompt_from(compiled, 7)
    text = " ".join(compiled.protocol.describe(token_id).text for token_id in prompt)
    server = LlamaCppEngine.load(directory, threads=1).server(256)
    answers = [server.handle_completions({
        "prompt": given, "max_tokens": 8, "temperature": 0.0, "samplers": ["temperature"],
        "n_probs": 1, "cache_prompt": False}) for given in (text, prompt)]
    for answer in answers:
        assert answer["usage"]["prompt_tokens"] == len(prompt)
    ids = [[token["id"] for token in answer["choices"][0]["logprobs"]["content"]]
           for answer in answers]
    assert ids[0] == ids[1] and texts(compiled, ids[0]).endswith("count.b0=0a <eos>")


def test_gguf_needs_the_llamacpp_engine(counter, capsys):
    _, directory = counter
    assert main(["generate", SPEC, "--model", str(directory), "--gguf", "x.gguf"]) == 1
    assert "--gguf names the file llama.cpp runs" in capsys.readouterr().err


def test_a_gguf_that_is_not_there(counter, needs_llamacpp, tmp_path, capsys):
    _, directory = counter
    assert main(["generate", SPEC, "--model", str(directory), "--engine", "llama.cpp",
                 "--gguf", str(tmp_path / "none.gguf")]) == 1
    assert "no such GGUF file" in capsys.readouterr().err
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"not a gguf at all" * 64)
    assert main(["generate", SPEC, "--model", str(directory), "--engine", "llama.cpp",
                 "--gguf", str(garbage)]) == 1
    assert "not a readable GGUF file" in capsys.readouterr().err


def test_without_xllamacpp(counter, capsys, monkeypatch):
    """A machine without the extra gets what to install, and exit 1."""
    _, directory = counter
    real_import = builtins.__import__

    def blocked(name, *args, **kwargs):
        if name == "xllamacpp" or name.startswith("xllamacpp."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", blocked)
    assert main(["generate", SPEC, "--model", str(directory), "--engine", "llama.cpp"]) == 1
    err = capsys.readouterr().err
    assert "needs the xllamacpp package" in err and "pip install -e \".[llamacpp]\"" in err
    assert llamacpp_installed() or True                  # (the check itself needs no import)


def test_a_random_qwen35_with_live_attention(counter, needs_llamacpp, tmp_path):
    """What a compiled machine leaves idle, on random weights (tests/random_checkpoints.py):
    live full attention (GQA, partial rotary, q/k norms, the gate), DeltaNet decays other
    than 1, two value heads a key head (the export's V-head reorder), random norms and conv
    taps.  llama.cpp's log-probabilities of its top tokens are transformers' within 1e-4
    at every position, and its greedy ids are stock `generate()`'s."""
    import torch

    from qwengpu.llamacpp import LlamaCppEngine
    from random_checkpoints import random_model

    compiled, _ = counter
    model = random_model(seed=3, vocab_size=compiled.protocol.vocab_size, eos_token_id=None,
                         linear_value_head_dim=8)       # llama.cpp: as wide as a key head
    directory = tmp_path / "random"
    model.save_pretrained(directory)
    compiled.protocol.save(directory)
    prompt = [2] + torch.randint(5, compiled.protocol.vocab_size, (40,),
                                 generator=torch.Generator().manual_seed(1)).tolist()
    with torch.no_grad():
        stock = model.generate(torch.tensor([prompt]), max_new_tokens=24, do_sample=False,
                               min_new_tokens=24)[0, len(prompt):].tolist()
        logits = model(torch.tensor([prompt + stock])).logits[0, len(prompt) - 1:-1]
    stock_logprobs = torch.log_softmax(logits.double(), -1)
    server = LlamaCppEngine.load(directory, threads=1).server(256)
    answer = server.handle_completions({
        "prompt": prompt, "max_tokens": 24, "temperature": 0.0, "samplers": ["temperature"],
        "n_probs": 5, "cache_prompt": False})
    content = answer["choices"][0]["logprobs"]["content"]
    assert [token["id"] for token in content] == stock
    for position, token in enumerate(content):
        for top in token["top_logprobs"]:
            assert abs(top["logprob"] - float(stock_logprobs[position, top["id"]])) < 1e-4, \
                (position, top)
