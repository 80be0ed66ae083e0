"""Real CUDA kernels inside the compiled model of the reduced QwenGPU, on both engines.

specs/qwengpu.hdl with one lane and one warp (the `MACHINE` parameters of the one-thread
examples) is compiled with --target min (fp32), and `hdlc run LAUNCH --backend model --check
--json --engine E` runs an example kernel on it: the model writes the whole trace greedily,
the reference interpreter follows in lockstep (`--check`), and the buffers are compared word
for word with the example's expected.json, which its independent model.py wrote.  E is the
sparse engine (default run: seconds) and stock transformers (slow: about 7 tokens a second
on 2 cores, serial_mad's 13 records in about 45 s).

The checkpoint (the `reduced_model` fixture of tests/conftest.py, shared with the trace page's
test) is 0.40 G parameters (binary values, `hdlc compile`'s float32 default; 1.4 G
one-hot).  `QWENGPU_REDUCED_MODEL=DIR` reuses a checkpoint compiled with those parameters,
`QWENGPU_REDUCED_KERNELS=serial_sum,serial_horner,...` picks the kernels; stock
transformers runs on a GPU where there is one (bench/reduced_on_gpu.sh does it all).

`test_a_batch_of_launches_inside_the_model` runs several launches of `serial_mad` on seeded
random inputs as one batch (`hdlc run A B C`: a row each; on transformers one `generate` of
left-padded prompts of different lengths), each row checked in lockstep and against the
example's own model.py; `test_two_runs_write_the_same_ids` generates one launch twice and
compares the ids."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest

from qwengpu.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))
import make_expected  # noqa: E402  (examples/make_expected.py: each example's own model)
from _int32 import to_signed  # noqa: E402  (examples/_int32.py: words as int32)
KERNELS = os.environ.get("QWENGPU_REDUCED_KERNELS", "serial_mad").split(",")
ENGINES = ["sparse", pytest.param("transformers", marks=pytest.mark.slow)]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_inside_the_model(reduced_model, kernel, engine, capsys):
    capsys.readouterr()
    code = main(["run", str(EXAMPLES / kernel / "launch.json"), "--backend", "model",
                 "--model", reduced_model, "--check", "--json", "--engine", engine])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    expected = json.loads((EXAMPLES / kernel / "expected.json").read_text())
    assert result["buffers"] == expected["buffers"]
    assert result["tokens"] > 0 and result["trap"] is None


@pytest.mark.parametrize("engine", ENGINES)
def test_a_batch_of_launches_inside_the_model(reduced_model, tmp_path, capsys, engine):
    launch = json.loads((EXAMPLES / "serial_mad" / "launch.json").read_text())
    launch["source"] = str(EXAMPLES / "serial_mad" / "kernel.ptx")
    rng = random.Random(5)
    paths, expected = [], []
    # a, x, b of 4, 12 and 15/30 bits: prompts of different lengths, a * x + b in int32
    for index, (product, addend) in enumerate(((4, 4), (12, 20), (15, 30))):
        launch["buffers"]["in"] = [rng.randrange(-2 ** bits, 2 ** bits)
                                   for bits in (product, product, addend)]
        path = tmp_path / f"serial_mad_{index}.json"
        path.write_text(json.dumps(launch))
        paths.append(str(path))
        expected.append(make_expected.load_model(EXAMPLES / "serial_mad")
                        .model(launch)["buffers"])
    capsys.readouterr()
    code = main(["run", *paths, "--backend", "model", "--model", reduced_model, "--check",
                 "--json", "--engine", engine])
    out, err = capsys.readouterr()
    assert code == 0, err
    results = [json.loads(line) for line in out.splitlines()]
    assert [result["launch"] for result in results] == paths
    assert [result["buffers"] for result in results] == expected
    assert len({result["prompt_tokens"] for result in results}) == 3


@pytest.mark.parametrize("engine", ENGINES)
def test_a_launch_paused_and_resumed_inside_the_model(reduced_model, engine):
    """A launch over two sittings: paused at once, the model has written its first token
    (`Unfinished`); resumed from the first 5 records and 7 tokens of the trace (given after
    the prompt in prefill chunks of 256 tokens), the model writes the rest exactly, checked
    in lockstep, and the buffers are the example's expected.json."""
    from qwengpu.trace.protocol import TraceProtocol
    from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.model_backend import Unfinished, run_launches_model

    machine = checkpoint_machine(reduced_model)
    protocol = TraceProtocol.load(reduced_model)
    launch = load_launch(EXAMPLES / "serial_mad" / "launch.json", machine_limits(machine))
    trace = protocol.encode_records(run_launch_sim(launch, machine=machine).records)
    first, = run_launches_model([launch], reduced_model, check=True, progress=False,
                                machine=machine, pause_seconds=0, engine=engine)
    assert isinstance(first, Unfinished) and first.ids == trace[:1]
    assert 0 < first.first_token_seconds <= first.seconds          # the prefill's share
    earlier = trace[:5 * protocol.tokens_per_record + 7]
    done, = run_launches_model([launch], reduced_model, check=True, progress=False,
                               machine=machine, resume_ids=[earlier], prefill_chunk_size=256,
                               engine=engine)
    expected = json.loads((EXAMPLES / "serial_mad" / "expected.json").read_text())
    assert done.trap_error() is None and done.tokens == len(trace)      # <eos> included
    assert 0 < done.first_token_seconds < done.seconds
    assert {name: [to_signed(word) for word in words] for name, words in
            done.buffers.items()} == expected["buffers"]


@pytest.mark.parametrize("engine", ENGINES)
def test_two_runs_write_the_same_ids(reduced_model, engine):
    """Two runs of a launch give identical traces: serial_mad's prompt, generated from twice
    (separate calls, fresh state each), gives the same ids both times, and they are the
    interpreter's records encoded, then <eos>."""
    from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
    from qwengpu.runtime.machine_file import checkpoint_machine
    from qwengpu.runtime.model_backend import generate_greedy, load_checkpoint
    from qwengpu.runtime.prompt import build_prompt

    machine = checkpoint_machine(reduced_model)
    model, protocol = load_checkpoint(reduced_model, "cpu", engine)
    launch = load_launch(EXAMPLES / "serial_mad" / "launch.json", machine_limits(machine))
    trace = protocol.encode_records(run_launch_sim(launch, machine=machine).records)
    prompt = build_prompt(launch, protocol, machine)
    records = len(trace) // protocol.tokens_per_record + 1
    first, = generate_greedy(model, protocol, [prompt], records)
    second, = generate_greedy(model, protocol, [prompt], records)
    assert first == second == trace                    # encode_records ends with <eos>
