"""A compiled or spliced checkpoint as a float32 `qwen35` GGUF that llama.cpp runs exactly.

    report = export_gguf("out/qwengpu", "out/qwengpu.gguf")    # hdlc export DIR --gguf OUT

The tensors follow llama.cpp's own converter (`convert_hf_to_gguf.py`, `Qwen3_5TextModel`):
the names of `gguf.get_tensor_name_map(QWEN35)`; `A_log` written as `-exp(A_log)` (the
compiled `A_log = -1e4` gives `-0.0`: a decay of exactly 1); `dt_bias` as the dt
projection's bias; the conv taps `[C, 1, 4]` squeezed to `[C, 4]`; every zero-centred RMSNorm
weight `w` as `1 + w` (not the DeltaNet's own gated norm, whose scale is `w`); value heads
reordered from grouped to tiled order where a layer has fewer key heads than value heads.
Every tensor is written as float32 (a bfloat16 checkpoint widens exactly).

Where our checkpoints need more than the converter writes (docs/llamacpp.md, "The GGUF"):
the layer kinds go in as `qwen35.attention.recurrent_layers`, one bool a layer, since the
converter writes only `full_attention_interval` and the compiled layer list is free; the
rope sections are scaled to the head's rotary dims (the converter's `[11, 11, 10, 0]`
assert below 64 of them; the compiled attention mixers are empty, and with one position for
text the sections do not change any angle); the vocabulary is the machine's
(`qwengpu.llamacpp.vocab`).

The tensors stream: their shapes come from the safetensors headers, the GGUF header and
tensor table are written first, then one tensor at a time is read, transformed and
written, so a 10 GB machine is never held twice.  The file is written beside its place as
`.NAME.partial` and renamed when whole: a failed export leaves nothing.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from qwengpu.engine.weights import CheckpointError, read_config
from qwengpu.errors import UserError, make_parent_folders
from qwengpu.llamacpp.vocab import Vocabulary, checkpoint_vocabulary

ARCHITECTURE = "qwen35"
SOURCE_KEY = "qwengpu.source"          # the checkpoint files a GGUF was exported from
# The converter's default rope sections for Qwen3.5 ([time, height, width, extra] pairs).
DEFAULT_ROPE_SECTIONS = (11, 11, 10, 0)


def require_gguf():
    """The `gguf` package (the `[llamacpp]` extra), or a `UserError` saying how to get it."""
    try:
        import gguf
    except ImportError:
        raise UserError("the GGUF export needs the gguf package: pip install -e "
                        "\".[llamacpp]\" (or pip install gguf xllamacpp)") from None
    return gguf


@dataclass
class ExportReport:
    """What `export_gguf` wrote."""

    path: Path
    tensors: int
    parameters: int
    bytes: int
    seconds: float

    def describe(self) -> str:
        return (f"wrote {self.path}: {self.tensors} tensors, {self.parameters} parameters, "
                f"{self.bytes} bytes (float32) in {self.seconds:.1f} s")


@dataclass
class _Planned:
    """One GGUF tensor: its name, shape and how to make it from the checkpoint."""

    name: str
    shape: tuple[int, ...]
    load: Callable[[], torch.Tensor]


def export_gguf(directory: str | Path, output: str | Path,
                progress: Callable[[str], None] | None = None) -> ExportReport:
    """Write the checkpoint at `directory` as the GGUF `output` (see the module doc)."""
    gguf = require_gguf()
    started = time.perf_counter()
    directory, output = Path(directory), Path(output)
    config, prefix = read_config(directory)
    if config.get("linear_key_head_dim") != config.get("linear_value_head_dim"):
        raise CheckpointError(f"{directory}/config.json: DeltaNet key heads of "
                              f"{config.get('linear_key_head_dim')} dims and value heads of "
                              f"{config.get('linear_value_head_dim')}; llama.cpp's qwen35 "
                              "takes them equally wide (as Qwen3.5 and every compiled machine "
                              "has them)")
    vocabulary = checkpoint_vocabulary(directory, config)
    stamp = source_stamp(directory)
    sources = _TensorSources(directory)
    plan = _plan_tensors(gguf, sources, config, prefix)
    if output.is_dir():
        raise UserError(f"{output}: cannot write the GGUF file: it is a folder")
    make_parent_folders(output, "GGUF file")
    partial = output.with_name(f".{output.name}.partial")
    writer = None
    try:
        writer = gguf.GGUFWriter(str(partial), ARCHITECTURE)
        _write_parameters(gguf, writer, config, directory)
        _write_vocabulary(gguf, writer, vocabulary)
        writer.add_string(SOURCE_KEY, json.dumps(stamp, sort_keys=True))
        for tensor in plan:
            writer.add_tensor_info(tensor.name, tensor.shape, np.dtype(np.float32),
                                   4 * int(np.prod(tensor.shape)))
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_ti_data_to_file()
        step = max(1, len(plan) // 10)
        for count, tensor in enumerate(plan):
            if progress and count and count % step == 0:
                progress(f"tensors: {count} of {len(plan)}")
            data = tensor.load().to(torch.float32).contiguous()
            if tuple(data.shape) != tensor.shape:      # a transform that changed the shape
                raise AssertionError((tensor.name, tuple(data.shape), tensor.shape))
            writer.write_tensor_data(data.numpy())
            del data
        writer.close()
        writer = None
        os.replace(partial, output)
    except OSError as error:
        raise UserError(f"{output}: cannot write the GGUF file: {error.strerror or error}") \
            from None
    finally:
        if writer is not None:
            writer.close()
        partial.unlink(missing_ok=True)
    parameters = sum(int(np.prod(tensor.shape)) for tensor in plan)
    return ExportReport(output, len(plan), parameters, output.stat().st_size,
                        time.perf_counter() - started)


def source_stamp(directory: Path) -> dict:
    """Size and modification time of every checkpoint file an export reads."""
    names = ["config.json", "tokenizer.json", "protocol.json", "splice.json",
             "generation_config.json", "tokenizer_config.json", "model.safetensors.index.json"]
    files = [directory / name for name in names] + sorted(directory.glob("*.safetensors"))
    stamp = {}
    for path in files:
        if path.is_file():
            info = path.stat()
            stamp[path.name] = [info.st_size, info.st_mtime_ns]
    return stamp


class _TensorSources:
    """The checkpoint's tensors by name (one file or an index of shards): shapes from the
    headers; data read one tensor at a time, its file opened anew for each read so that its
    memory map (and the pages it touched) goes when the tensor is written."""

    def __init__(self, directory: Path):
        index = directory / "model.safetensors.index.json"
        if index.is_file():
            try:
                weight_map = json.loads(index.read_text()).get("weight_map")
            except (OSError, ValueError, AttributeError) as error:
                raise CheckpointError(f"{index}: unreadable ({error})") from None
            if not isinstance(weight_map, dict):
                raise CheckpointError(f"{index}: no weight_map")
            files = sorted(set(weight_map.values()))
        elif (directory / "model.safetensors").is_file():
            files = ["model.safetensors"]
        else:
            raise CheckpointError(f"{directory}: no model.safetensors (or "
                                  "model.safetensors.index.json)")
        self.directory = directory
        self.where: dict[str, str] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        for file in files:
            with self._open(file) as handle:
                for name in handle.keys():
                    piece = handle.get_slice(name)
                    if piece.get_dtype() not in ("F32", "BF16"):
                        raise CheckpointError(f"{directory / file}: {name} is "
                                              f"{piece.get_dtype()}; the export takes float32 "
                                              "and bfloat16 checkpoints")
                    self.where[name] = file
                    self.shapes[name] = tuple(piece.get_shape())

    def _open(self, file: str):
        from safetensors import safe_open

        path = self.directory / file
        if not path.is_file():
            raise CheckpointError(f"{path}: missing (the shard index names it)")
        try:
            return safe_open(str(path), framework="pt")
        except Exception as error:              # safetensors' own error types vary
            raise CheckpointError(f"{path}: not a readable safetensors file ({error}); "
                                  "truncated or damaged?") from None

    def names(self) -> list[str]:
        return list(self.where)

    def read(self, name: str) -> torch.Tensor:
        file = self.where[name]
        try:
            with self._open(file) as handle:
                return handle.get_tensor(name)
        except CheckpointError:
            raise
        except Exception as error:
            raise CheckpointError(f"{self.directory / file}: cannot read {name} ({error}); "
                                  "truncated or damaged?") from None


def _plan_tensors(gguf, sources: _TensorSources, config: dict, prefix: str) -> list[_Planned]:
    """Every decoder tensor under its GGUF name, with the converter's transforms."""
    layers = config["num_hidden_layers"]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN35, layers)
    plan = []
    for source in sources.names():
        if source == "lm_head.weight":
            text_name = source
        elif source.startswith(prefix):
            text_name = "model." + source[len(prefix):]
        else:
            continue                        # a vision tower, MTP layers: not the text model
        if text_name.startswith("model.mtp.") or text_name.startswith("mtp."):
            continue
        mapped_from = text_name
        if text_name.endswith(".dt_bias"):
            mapped_from = text_name.removesuffix(".dt_bias") + ".dt_proj.bias"
        name = names.get_name(mapped_from, try_suffixes=(".weight", ".bias"))
        if name is None:
            raise CheckpointError(f"{sources.where[source]}: {source} has no place in a "
                                  "qwen35 GGUF")
        shape, load = _transform(source, text_name, sources, config)
        plan.append(_Planned(name, shape, load))
    return plan


def _transform(source: str, name: str, sources: _TensorSources, config: dict):
    """(shape, load) of the GGUF tensor made from checkpoint tensor `source` (text-model
    name `name`): the converter's transforms, then the V-head reorder."""
    shape = sources.shapes[source]

    def read() -> torch.Tensor:
        return sources.read(source).to(torch.float32)

    if name.endswith(".A_log"):
        load = lambda: -torch.exp(read())                             # noqa: E731
    elif ".conv1d" in name:
        shape = tuple(size for size in shape if size != 1) if len(shape) == 3 else shape
        load = lambda: read().reshape(shape)                          # noqa: E731
    elif name.endswith("norm.weight") and not name.endswith("linear_attn.norm.weight"):
        load = lambda: read() + 1                                     # noqa: E731
    else:
        load = read
    reorder = _v_head_reorder(name, config)
    if reorder is None:
        return shape, load
    return shape, lambda: reorder(load())


def _v_head_reorder(name: str, config: dict):
    """The converter's V-head reorder for a layer with fewer key than value heads (grouped
    by key head in transformers, tiled for ggml's broadcast), or None where none is
    needed."""
    key_heads = config.get("linear_num_key_heads", 0)
    value_heads = config.get("linear_num_value_heads", 0)
    if ".linear_attn." not in name or not key_heads or key_heads == value_heads:
        return None
    per_key, key_dim = value_heads // key_heads, config["linear_key_head_dim"]
    value_dim = config["linear_value_head_dim"]

    def tiled(tensor: torch.Tensor, dim: int, head: int) -> torch.Tensor:
        shape = list(tensor.shape)
        grouped = tensor.reshape(*shape[:dim], key_heads, per_key, head, *shape[dim + 1:])
        return grouped.transpose(dim, dim + 1).reshape(shape)

    if ".in_proj_qkv." in name or ".conv1d" in name:
        keys = 2 * key_heads * key_dim
        return lambda t: torch.cat([t[:keys], tiled(t[keys:], 0, value_dim)])
    if ".in_proj_z." in name:
        return lambda t: tiled(t, 0, value_dim)
    if ".in_proj_a." in name or ".in_proj_b." in name:
        return lambda t: tiled(t, 0, 1)
    if name.endswith(".A_log") or name.endswith(".dt_bias"):
        return lambda t: tiled(t.unsqueeze(-1), 0, 1).squeeze(-1)
    if ".out_proj." in name:
        return lambda t: tiled(t, 1, value_dim)
    return None


def rope_sections(rotary_dims: int) -> list[int]:
    """Sections of the rotary pairs over [time, height, width, extra]: the converter's
    default where the head has 64 rotary dims, else the same shares scaled to its pairs
    (one position for text makes every split the same rotation)."""
    pairs = rotary_dims // 2
    if pairs == sum(DEFAULT_ROPE_SECTIONS):
        return list(DEFAULT_ROPE_SECTIONS)
    time_pairs = height = (pairs * 11 + 31) // 32
    height = min(height, pairs - time_pairs)
    return [time_pairs, height, pairs - time_pairs - height, 0]


def _write_parameters(gguf, writer, config: dict, directory: Path) -> None:
    """The model's hyperparameters, under the keys the converter writes for qwen35."""
    writer.add_type("model")
    writer.add_name(_model_name(directory))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    hidden = config["hidden_size"]
    head_dim = config.get("head_dim") or hidden // config.get("num_attention_heads", 1)
    rope = config.get("rope_parameters") or {}
    writer.add_context_length(int(config.get("max_position_embeddings", 32768)))
    writer.add_embedding_length(hidden)
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config.get("num_attention_heads", 1))
    writer.add_head_count_kv(config.get("num_key_value_heads", 1))
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))
    writer.add_rope_freq_base(float(rope.get("rope_theta", 10000.0)))
    rotary = int(head_dim * rope.get("partial_rotary_factor", 0.25))
    writer.add_rope_dimension_count(rotary)
    sections = list(rope.get("mrope_section") or rope_sections(rotary))
    writer.add_rope_dimension_sections((sections + [0] * 4)[:4])     # the converter pads to 4
    writer.add_ssm_conv_kernel(config.get("linear_conv_kernel_dim", 4))
    writer.add_ssm_state_size(config["linear_key_head_dim"])
    writer.add_ssm_group_count(config["linear_num_key_heads"])
    writer.add_ssm_time_step_rank(config["linear_num_value_heads"])
    writer.add_ssm_inner_size(config["linear_value_head_dim"] * config["linear_num_value_heads"])
    recurrent = [kind == "linear_attention" for kind in config["layer_types"]]
    writer.add_array(f"{ARCHITECTURE}.attention.recurrent_layers", recurrent)
    interval = _attention_interval(recurrent)
    if interval is not None:
        writer.add_full_attention_interval(interval)


def _attention_interval(recurrent: list[bool]) -> int | None:
    """The converter's `full_attention_interval` where the layers follow one (every n-th
    full attention, the rest DeltaNet), else None."""
    for interval in range(1, len(recurrent) + 1):
        if recurrent == [(i + 1) % interval != 0 for i in range(len(recurrent))]:
            return interval
    return None


def _model_name(directory: Path) -> str:
    machine = directory / "machine.json"
    try:
        spec = json.loads(machine.read_text()).get("spec")
    except (OSError, ValueError, AttributeError):
        spec = None
    return f"qwengpu {spec}" if isinstance(spec, str) else f"qwengpu {directory.name}"


def _write_vocabulary(gguf, writer, vocabulary: Vocabulary) -> None:
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(vocabulary.pre)
    writer.add_token_list(vocabulary.tokens)
    writer.add_token_types(vocabulary.types)
    writer.add_token_merges(vocabulary.merges)
    for key, token_id in vocabulary.special.items():
        getattr(writer, f"add_{key}_token_id")(token_id)
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)
