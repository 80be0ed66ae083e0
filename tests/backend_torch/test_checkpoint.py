"""From a schedule to a checkpoint (`backend_torch/checkpoint.py`): the residual allocation
and its text form, and the files a checkpoint directory holds (config, generation config,
weights, protocol, tokenizer, schedule report with the precision decision)."""

from __future__ import annotations

import json

import torch

from compile_helpers import compile_plan
from qwengpu.backend_torch.checkpoint import allocate, build_model, format_layout, \
    write_checkpoint
from qwengpu.backend_torch.schedule import format_schedule


def test_allocation_is_the_schedules_and_reads_as_text():
    schedule = compile_plan("specs/counter.hdl").schedule
    layout, groups = allocate(schedule)
    assert set(groups) == set(schedule.order)
    assert all(groups[name].start == schedule.start[name] for name in groups)
    assert layout.hidden_size == schedule.target.hidden_size
    text = format_layout(schedule, groups).splitlines()
    assert text[0] == (f"residual of {schedule.target.hidden_size} dims, {schedule.dims} used "
                       "(dim 0 is ONE)")
    assert len(text) == 1 + len(groups)
    assert any(line.split()[1] == "tok.bos" for line in text[1:])


def test_the_checkpoint_files(tmp_path):
    compiled = compile_plan("specs/counter.hdl")
    model = build_model(compiled.schedule, torch.float32)
    figures = write_checkpoint(compiled.schedule, compiled.protocol, model, tmp_path,
                               "float32 (the default)")
    names = {path.name for path in tmp_path.iterdir()}
    assert {"config.json", "generation_config.json", "model.safetensors", "protocol.json",
            "tokenizer.json", "schedule.txt"} <= names
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["num_hidden_layers"] == 45 and "transformers_version" not in config
    generation = json.loads((tmp_path / "generation_config.json").read_text())
    assert generation["eos_token_id"] == compiled.protocol.eos_id
    assert generation["do_sample"] is False and "transformers_version" not in generation
    report = (tmp_path / "schedule.txt").read_text()
    assert report.startswith(format_schedule(compiled.schedule))
    assert "precision: float32 (the default)" in report
    assert 0 < figures["nonzeros"] < figures["parameters"]
    assert figures["bytes"] == (tmp_path / "model.safetensors").stat().st_size
