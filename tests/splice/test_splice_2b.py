"""`hdlc splice` of the whole QwenGPU (specs/qwengpu.hdl: 4 lanes, 8 warps) into a base with
every dimension of the real Qwen3.5-2B (`bases.QWEN35_2B_DIMS`: hidden 2048, intermediate 6144,
16 DeltaNet heads of 128, 8/2 attention heads of 256), tied embeddings, bfloat16, but only 4
layers and a ~1,000-token vocabulary, built and spliced once for the module (about 2 minutes;
the splice's peak is about 12 GB).  Its embedding rows share half the direction the other test
bases have (`shared=0.01`: entries N(0, 0.01) against noise N(0, 0.08)), the point
docs/splice.md, "The frontier", measures; its layers stay bfloat16 in the spliced checkpoint.
Then, as tests/splice/test_splice.py does at the min shape:

- on the base's text (`bases.TEXT_SAMPLE`) the spliced model's logits over the base's tokens
  are bit-identical to the base's in one prefill, and token by token through the cache to the
  base's own decode (not to its prefill: at this size those differ in the last bits in
  transformers itself), the compiled DeltaNet states holding only zeros; no machine token is
  the argmax (margin printed);
- vector_add (2 blocks of 8 threads on the 4 lanes) runs exactly inside on the sparse engine,
  every record checked in lockstep (1,661 tokens; the engine's time goes to the base's 4 dense
  layers), and serial_mad on
  stock transformers (162 tokens, 2 to 6 minutes with the CPU shared);
- the test process never held more than 16 GB (`ru_maxrss`, measured 15.3 with the bf16
  base; the module's last test).

All slow: run with `pytest -m slow tests/splice/test_splice_2b.py` (12 minutes on 2 cores).
"""

from __future__ import annotations

import gc
import json
import resource
from pathlib import Path

import pytest
import torch

from bases import QWEN35_2B_DIMS, make_base, text_ids
from qwengpu.cli import main
from test_splice import (base_reference, base_tokens, check_text_is_the_base, load,
                         machine_rows)

pytestmark = pytest.mark.slow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PEAK_LIMIT_GB = 16.0


@pytest.fixture(scope="module")
def spliced(tmp_path_factory):
    """(base dir, spliced dir), torch at 2 threads for the module (2B-shaped matmuls gain)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    root = tmp_path_factory.mktemp("splice-2b")
    base = make_base(root / "base", QWEN35_2B_DIMS, tied=True, dtype=torch.bfloat16,
                     shared=0.01)
    assert main(["splice", "--base", str(base), "-o", str(root / "out")]) == 0
    gc.collect()
    yield base, root / "out"
    torch.set_num_threads(threads)


def test_text_logits_are_the_base(spliced):
    base_dir, out = spliced
    ids = torch.tensor([text_ids(base_dir)])
    known = base_tokens(base_dir)
    expected, base_stepped = base_reference(load(base_dir, multimodal=False), ids, known)
    gc.collect()
    model = load(out, multimodal=False)
    assert model.config.num_hidden_layers == 45 + QWEN35_2B_DIMS.num_layers
    check_text_is_the_base(model, ids, known, machine_rows(out), expected, base_stepped,
                           "2B dims")
    del model
    gc.collect()


@pytest.mark.parametrize("kernel, engine", [("vector_add", "sparse"),
                                            ("serial_mad", "transformers")])
def test_a_cuda_kernel_inside(spliced, kernel, engine, capsys):
    _, out = spliced
    capsys.readouterr()
    code = main(["run", str(EXAMPLES / kernel / "launch.json"), "--backend", "model",
                 "--model", str(out), "--check", "--json", "--engine", engine])
    printed, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(printed)
    expected = json.loads((EXAMPLES / kernel / "expected.json").read_text())
    assert result["buffers"] == expected["buffers"]
    assert result["records"] > 0 and result["trap"] is None
    gc.collect()


def test_the_process_stayed_under_16_gb(spliced):
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
    print(f"\npeak resident memory of the test process: {peak_gb:.2f} GB")
    assert peak_gb <= PEAK_LIMIT_GB
