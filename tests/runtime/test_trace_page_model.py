"""The trace viewer of launches a compiled model ran: `hdlc run A B --backend model --check
--html FILE` on the reduced QwenGPU (tests/conftest.py's `reduced_model`, one lane and one
warp) writes one page of the batch, and in Chromium each record shows the tokens the model
wrote for it.  The expected tokens are the interpreter's records as the protocol spells them
(what `--check` held the model to, token by token); the final memory is the example's own
model.py's (examples/make_expected.py), for two inputs."""

from __future__ import annotations

import json
import sys

from runtime_helpers import EXAMPLES_DIR
from test_trace_page import buffers_shown, go_to_step
from qwengpu.cli import main
from qwengpu.runtime.launch import load_launch, machine_limits, run_launch_sim
from qwengpu.runtime.machine_file import checkpoint_machine
from qwengpu.trace.protocol import TraceProtocol

if str(EXAMPLES_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLES_DIR))
import make_expected  # noqa: E402  (examples/make_expected.py: each example's own model)

SERIAL_MAD = EXAMPLES_DIR / "serial_mad"


def test_a_models_page_shows_the_tokens_of_every_record(reduced_model, tmp_path, open_page,
                                                        capsys):
    launch_data = json.loads((SERIAL_MAD / "launch.json").read_text())
    launch_data["source"] = str(SERIAL_MAD / "kernel.ptx")
    paths = []
    for index, values in enumerate(([-1234, 5678, 99999], [7, -3, 40])):
        launch_data["buffers"]["in"] = values
        path = tmp_path / f"serial_mad_{index}.json"
        path.write_text(json.dumps(launch_data))
        paths.append(path)
    page_file = tmp_path / "model.html"
    capsys.readouterr()
    code = main(["run", *map(str, paths), "--backend", "model", "--model", reduced_model,
                 "--check", "--html", str(page_file)])
    err = capsys.readouterr().err
    assert code == 0, err
    machine = checkpoint_machine(reduced_model)
    protocol = TraceProtocol.load(reduced_model)
    page = open_page(page_file)
    assert page.locator("#launch-choice option").count() == 2
    for index, path in enumerate(paths):
        page.select_option("#launch-choice", str(index))
        launch = load_launch(str(path), machine_limits(machine))
        records = run_launch_sim(launch, machine=machine).records
        summary = page.text_content("#summary")
        assert summary.startswith(f"model {reduced_model} (sparse engine, checked)")
        total = len(protocol.encode_records(records))
        assert f"{len(records)} records" in summary and f"{total} tokens written" in summary
        for number, record in enumerate(records):
            go_to_step(page, number + 1)
            chips = page.locator("#record-tokens .token").all_text_contents()
            expected = [protocol.describe(token).text for token in protocol.encode_record(record)]
            if number == len(records) - 1:
                expected.append("<eos>")               # what the model wrote after it
            assert chips == expected, number
            assert page.text_content("#record-tokens").startswith(
                f"{len(expected) - (number == len(records) - 1)} tokens the model wrote")
        model = make_expected.load_model(SERIAL_MAD).model(json.loads(path.read_text()))
        assert buffers_shown(page, launch) == model["buffers"]
