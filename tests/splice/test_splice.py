"""`hdlc splice`: the reduced QwenGPU in front of random-weight Qwen3.5 bases (tests/splice/bases.py).

Two bases in the min shape: a text-only one with untied embeddings in float32, and the
multimodal form with tied embeddings, in bfloat16, sharded, with 8,192 embedding rows (the
machine's tokens take rows its tokenizer leaves unused, as in Qwen3.5-2B's table).  Each is
spliced with the one-lane, one-warp QwenGPU (`compile_helpers.REDUCED`), and then:

- on the base's own text (the first 320 of `bases.TEXT_SAMPLE`'s 522 tokens; all of them in
  the 2B-dims test) the spliced model's logits over the base's tokens are bit-identical to
  the base's, in one prefill and token by token through the cache, and no compiled DeltaNet
  layer holds anything but zeros in its state;
- no machine token is the argmax on that text (the margin is printed);
- a real CUDA kernel (serial_mad, nvcc's PTX) runs exactly inside, every record checked in
  lockstep against the reference interpreter (`hdlc run --check`), on the sparse engine and
  (slow-marked) on stock transformers and in llama.cpp (the spliced checkpoint's GGUF);
- the tokenizer gives every text the base's ids, and the base's other files come along.

The base is loaded in float32 for the comparison (a bfloat16 base's values widen exactly;
the spliced checkpoint is float32).
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

from bases import MIN_SHAPE, TEXT_SAMPLE, make_base, text_ids  # noqa: E402
from compile_helpers import REDUCED_FLAGS  # noqa: E402
from llamacpp_helpers import skip_without_llamacpp  # noqa: E402
from qwengpu.cli import main  # noqa: E402

pytestmark = pytest.mark.heavy     # one worker runs the heavy files in turn: tests/workers.py

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
WIDE_BASE_ROWS = 8192      # the reduced machine's 4,479 tokens fit in the rows left unused
FORMS = {"text-untied-fp32": dict(tied=False, multimodal=False),
         "multimodal-tied-bf16-sharded": dict(tied=True, multimodal=True, dtype=torch.bfloat16,
                                              max_shard_size="20MB",
                                              vocab_rows=WIDE_BASE_ROWS)}
DECODE_TOKENS = 16
TEXT_TOKENS = 320     # of the sample's 522: "a few hundred", in the default run's time


@pytest.fixture(scope="module", params=sorted(FORMS))
def spliced(request, tmp_path_factory):
    """(base dir, spliced dir, form options)."""
    root = tmp_path_factory.mktemp(f"splice-{request.param}")
    options = FORMS[request.param]
    base = make_base(root / "base", MIN_SHAPE, **options)
    assert main(["splice", "--base", str(base), "-o", str(root / "out"),
                 *REDUCED_FLAGS]) == 0
    return base, root / "out", options


def load(directory, multimodal: bool):
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    auto = AutoModelForImageTextToText if multimodal else AutoModelForCausalLM
    model = auto.from_pretrained(directory, dtype=torch.float32).eval()
    # Every tensor 64-byte aligned, as torch allocates.  A float32 tensor otherwise stays
    # where safetensors maps it, at its offset in the file, and on some CPUs (AVX2 gemv) a
    # one-token matmul sums in an order that depends on the weight's alignment: the base's
    # layers, read from the base's file and from the spliced one, would then differ in the
    # last bit when decoding token by token although every value is the same.  (Only the
    # misaligned ones are copied: the 2B-dims test holds 11 GB of float32.)
    with torch.no_grad():
        for parameter in model.parameters():
            if parameter.data.data_ptr() % 64:
                parameter.data = parameter.data.clone()
    return model


def base_tokens(base: Path) -> int:
    from qwengpu.splice.vocab import tokenizer_extent

    return tokenizer_extent(json.loads((base / "tokenizer.json").read_text()))


def decode_logits(model, ids: torch.Tensor, count: int):
    """Logits fed one token at a time through the cache; and the cache."""
    from transformers import DynamicCache

    cache, rows = None, []
    with torch.no_grad():
        for position in range(count):
            output = model(ids[:, position:position + 1], cache=cache, use_cache=True)
            cache = output.past_key_values
            rows.append(output.logits[0, -1])
    assert isinstance(cache, DynamicCache) or cache is not None
    return torch.stack(rows), cache


def base_reference(base, ids: torch.Tensor, known: int):
    """The base's prefill logits over its `known` tokens, and its decode through the cache
    over the first DECODE_TOKENS (the spliced decode is held to the base's decode, not to its
    prefill: at Qwen3.5-2B's dimensions the two differ in the last bits in transformers)."""
    with torch.no_grad():
        expected = base(ids).logits[0, :, :known]
    return expected, decode_logits(base, ids, DECODE_TOKENS)[0][:, :known]


def check_text_is_the_base(model, ids: torch.Tensor, known: int, machine: slice, expected,
                           base_stepped, label: str) -> None:
    """The spliced `model` on the base's text: logits over the base's tokens bit-identical in
    prefill and decode, no machine token (the `machine` rows) on top (margin printed), the
    compiled DeltaNet states all zero and the base's not."""
    with torch.no_grad():
        got = model(ids).logits[0]
    assert torch.equal(got[:, :known], expected)
    margin = got[:, :known].max(1).values - got[:, machine].max(1).values
    print(f"\n{label}: text margin over machine tokens, min {float(margin.min()):.3f} "
          f"over {ids.shape[1]} positions")
    assert float(margin.min()) > 0, "a machine token is the argmax on the base's text"
    stepped, cache = decode_logits(model, ids, DECODE_TOKENS)
    assert torch.equal(stepped[:, :known], base_stepped)

    def states(layers):
        return [state for layer in layers
                for state in (getattr(layer, "recurrent_states", None) or {}).values()]

    assert states(cache.layers[:45]), "no DeltaNet state found in the cache"
    assert all(int(torch.count_nonzero(state)) == 0 for state in states(cache.layers[:45]))
    assert any(int(torch.count_nonzero(state)) for state in states(cache.layers[45:]))


def machine_rows(spliced_dir: Path) -> slice:
    """The rows of the spliced checkpoint's tables that hold the machine's tokens."""
    from qwengpu.runtime.spliced import read_splice

    splice = read_splice(spliced_dir)
    return slice(splice.offset, splice.offset + splice.count)


def test_text_logits_are_the_base(spliced):
    base_dir, out, options = spliced
    multimodal = options["multimodal"]
    ids = torch.tensor([text_ids(base_dir)[:TEXT_TOKENS]])
    known = base_tokens(base_dir)
    expected, base_stepped = base_reference(load(base_dir, multimodal), ids, known)
    model = load(out, multimodal)
    assert model.config.get_text_config().num_hidden_layers == 45 + MIN_SHAPE.num_layers
    check_text_is_the_base(model, ids, known, machine_rows(out), expected, base_stepped,
                           out.name)


def test_the_tokenizer_is_the_base_s_and_more(spliced):
    from transformers import AutoTokenizer

    from qwengpu.runtime.spliced import read_splice
    from qwengpu.splice.vocab import machine_spelling
    from qwengpu.trace.protocol import TraceProtocol

    base_dir, out, _ = spliced
    before, after = AutoTokenizer.from_pretrained(base_dir), AutoTokenizer.from_pretrained(out)
    for text in (TEXT_SAMPLE, "<gpu:pc.b0=03> and <|im_start|>user", "x" * 50 + " 1234"):
        assert after(text)["input_ids"] == before(text)["input_ids"]
    splice = read_splice(out)
    protocol = TraceProtocol.load(out)
    assert splice.count == protocol.vocab_size
    for index in (0, protocol.eos_id, protocol.vocab_size - 1):
        spelling = machine_spelling(protocol.texts[index])
        assert after.convert_tokens_to_ids(spelling) == splice.offset + index
    kept = {p.name for p in base_dir.iterdir() if p.suffix in (".jinja", ".json")
            and not p.name.startswith(("config", "model", "tokenizer"))}
    for name in kept:
        assert (out / name).read_bytes() == (base_dir / name).read_bytes(), name
    report = (out / "splice.txt").read_text()
    assert "text gate: margin" in report and "machine margin" in report


def test_the_base_s_tensors_keep_their_dtype(spliced):
    """The compiled layers, the embedding and lm_head float32; every other tensor in the
    base's own dtype (a bf16 base's layers stay bf16); the config loads it as float32."""
    from safetensors import safe_open

    base_dir, out, options = spliced
    base_dtype = {torch.float32: "F32", torch.bfloat16: "BF16"}[options.get("dtype",
                                                                          torch.float32)]
    seen = set()
    for file in sorted(out.glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as handle:
            for name in handle.keys():
                dtype = handle.get_slice(name).get_dtype()
                layer = name.split("layers.")[1].split(".")[0] if ".layers." in name and \
                    "visual" not in name else None
                compiled = layer is not None and int(layer) < 45
                table = name.endswith(("embed_tokens.weight", "lm_head.weight"))
                assert dtype == ("F32" if compiled or table else base_dtype), (name, dtype)
                seen.add("compiled" if compiled else "table" if table else "base")
    assert seen == {"compiled", "table", "base"}
    config = json.loads((out / "config.json").read_text())
    assert config["dtype"] == "float32"


@pytest.mark.parametrize("engine", ["sparse", pytest.param("transformers",
                                                           marks=pytest.mark.slow),
                                    pytest.param("llama.cpp", marks=pytest.mark.slow)])
def test_a_cuda_kernel_inside_the_spliced_model(spliced, engine, capsys):
    _, out, _ = spliced
    if engine == "llama.cpp":
        skip_without_llamacpp()
    capsys.readouterr()
    code = main(["run", str(EXAMPLES / "serial_mad" / "launch.json"), "--backend", "model",
                 "--model", str(out), "--check", "--json", "--engine", engine,
                 "--threads", "1"])
    printed, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(printed)
    expected = json.loads((EXAMPLES / "serial_mad" / "expected.json").read_text())
    assert result["buffers"] == expected["buffers"]
    assert result["records"] > 0 and result["trap"] is None


def test_launch_and_decode_speak_the_spliced_ids(spliced, tmp_path, capsys):
    """`hdlc launch --model` writes the spliced ids; the ids the engine writes for them
    decode with `hdlc decode --model` to the example's buffers."""
    from qwengpu.engine import SparseEngine, read_weights
    from qwengpu.runtime.spliced import read_splice
    from qwengpu.trace.protocol import TraceProtocol

    _, out, options = spliced
    if options["multimodal"]:
        pytest.skip("the ids' shift does not depend on the form: the text form checks it")
    launch = str(EXAMPLES / "serial_mad" / "launch.json")
    assert main(["launch", launch, "--model", str(out), "-o", str(tmp_path / "p.json")]) == 0
    prompt = json.loads((tmp_path / "p.json").read_text())["input_ids"]
    splice = read_splice(out)
    assert min(prompt) >= splice.offset
    eos = splice.offset + TraceProtocol.load(out).eos_id
    generated, = SparseEngine(read_weights(out)).generate([prompt], 400, eos)
    (tmp_path / "ids.json").write_text(json.dumps(generated))
    capsys.readouterr()
    assert main(["decode", launch, "--model", str(out), "--tokens", str(tmp_path / "ids.json"),
                 "--check", "--json"]) == 0
    expected = json.loads((EXAMPLES / "serial_mad" / "expected.json").read_text())
    assert json.loads(capsys.readouterr().out)["buffers"] == expected["buffers"]


def test_the_engine_benchmark_runs_a_spliced_checkpoint(spliced, capsys):
    """bench/bench_engine.py on a spliced checkpoint (stock transformers left out): the
    engine speaks the spliced ids, so its rows are the interpreter's trace (exit status 0),
    and the figures are its engine's."""
    sys.path.insert(0, str(HERE.parent))
    from bench_scripts import bench_script

    _, out, options = spliced
    if options["multimodal"]:
        pytest.skip("the benchmark does not depend on the form: the text form runs it")
    capsys.readouterr()
    code = bench_script("bench_engine").main(
        ["--model", str(out), "--kernel", "serial_mad", "--new-tokens", "6",
         "--batches", "1,2", "--threads", "1", "--stock-batches", ""])
    printed = capsys.readouterr().out
    assert code == 0, printed
    rows = [line.split() for line in printed.splitlines() if line.startswith("sparse ")]
    assert [row[1] for row in rows] == ["1", "2"] and all(row[-1] == "yes" for row in rows)
    assert "gate families" in printed


def test_a_table_with_a_few_float32_rows_is_kept_apart(spliced):
    """A bfloat16 base's spliced `lm_head` and embedding: the engine keeps them as bf16
    panels of the base's rows and the machine's rows apart (a few weights each; in `lm_head`
    float32 values), as it does for Qwen3.5-2B's 248,320 rows (`Matrix.table`), and with them
    writes stock transformers' greedy ids after the base's text.  (The kernel runs on this
    checkpoint in test_a_cuda_kernel_inside_the_spliced_model.)"""
    import numpy as np

    from qwengpu.engine import SparseEngine, read_weights
    from qwengpu.runtime.spliced import read_splice

    base_dir, out, options = spliced
    if options.get("dtype") != torch.bfloat16:
        pytest.skip("a float32 base's tables are float32 throughout: the bf16 form checks it")
    weights = read_weights(out)
    splice = read_splice(out)
    machine_rows = np.arange(splice.offset, splice.offset + splice.count)
    for table in (weights.lm_head, weights.embed):
        assert table.bf16 and np.isin(machine_rows, table.apart_rows).all()
        assert table.product_rows + len(table.apart_rows) == WIDE_BASE_ROWS
    wide = weights.lm_head.apart.rows_of(np.arange(weights.lm_head.apart.rows))
    assert (wide.view(np.uint32) & np.uint32(0xFFFF)).any(axis=1).sum() > splice.count // 2

    ids = text_ids(base_dir)[:64]
    with torch.no_grad():
        expected = load(out, options["multimodal"]).generate(torch.tensor([ids]), max_new_tokens=8,
                                            do_sample=False)[0, len(ids):].tolist()
    assert SparseEngine(weights).generate([ids], 8) == [expected]
