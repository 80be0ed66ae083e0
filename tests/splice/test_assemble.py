"""The spliced checkpoint's writer (qwengpu/splice/assemble.py): shards written as they fill,
named `model-0000I-of-0000N.safetensors`, and an index that names every tensor's shard."""

from __future__ import annotations

import json

import torch
from safetensors import safe_open

from qwengpu.splice import assemble


def test_shards_are_written_as_they_fill(tmp_path, monkeypatch):
    monkeypatch.setattr(assemble, "SHARD_BYTES", 1000)
    tensors = {f"t{index}": torch.full((index + 1, 50), float(index)) for index in range(7)}
    assemble._write_shards(tmp_path, iter(tensors.items()))
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    files = sorted(path.name for path in tmp_path.glob("*.safetensors"))
    assert len(files) > 1 and all(f"-of-{len(files):05d}" in name for name in files)
    assert set(index["weight_map"]) == set(tensors)
    assert index["metadata"]["total_size"] == sum(t.numel() * 4 for t in tensors.values())
    for name, tensor in tensors.items():
        with safe_open(str(tmp_path / index["weight_map"][name]), framework="pt") as handle:
            assert torch.equal(handle.get_tensor(name), tensor)
