"""From a schedule to a checkpoint directory that stock transformers loads: the last steps
of `qwengpu.compiler.compile`.

    layout, groups = allocate(schedule)                          # residual dims
    model = build_model(schedule, torch.float32, groups=groups)  # weights (emit.py)
    write_checkpoint(schedule, protocol, model, "out/counter")   # files

The directory holds `config.json` (`qwen3_5_text`, `Qwen3_5ForCausalLM`, 45 layers and their
`layer_types`), `model.safetensors`, `generation_config.json` (greedy, eos = the protocol's
`<eos>`), the protocol's tokenizer files and `protocol.json`, and `schedule.txt` (the
schedule, the figures and the precision decision).  The same inputs give byte-identical
files.  `qwengpu.runtime.prompt.state_prompt` builds the prompt that puts a compiled machine
into any state.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import torch

from qwengpu.backend_torch.emit import embedding_table, emit_memory, emit_mlp, emit_scratch, \
    lm_head_table, replay
from qwengpu.backend_torch.gadgets.core import DRIVES, Form, MlpWriter
from qwengpu.backend_torch.model import blank_model, make_config
from qwengpu.backend_torch.residual import BINARY, Group, ResidualLayout, residual_rms
from qwengpu.backend_torch.schedule import Schedule, format_schedule
from qwengpu.trace.protocol import TraceProtocol

EMIT_MARGIN = 16.0


def allocate(schedule: Schedule) -> tuple[ResidualLayout, dict[str, Group]]:
    """The groups at the dims the schedule chose (values with disjoint lifetimes share)."""
    layout = ResidualLayout(schedule.target.hidden_size, schedule.target.rms_norm_eps)
    groups = {}
    for name in schedule.order:
        group = schedule.plan.values[name].group(schedule.start[name])
        if group.stop > layout.hidden_size:
            raise ValueError(f"{name}: dims {group.start}..{group.stop - 1} outside the "
                             f"residual of {layout.hidden_size}")
        groups[name] = layout.groups[name] = group
    return layout, groups


def emit_erasures(model, schedule: Schedule, groups: dict[str, Group], first_unit) -> None:
    """Each layer's erasures: after its ops' units, one linear unit per dim of every value
    whose last reader has passed, writing minus what the dim holds."""
    hidden, eps = schedule.target.hidden_size, schedule.target.rms_norm_eps
    for layer in range(schedule.target.num_layers):
        gone = schedule.erased_at(2 * layer + 1)
        if not gone:
            continue
        start = first_unit.get(layer, 0)
        count = schedule.erase_units(layer)
        rms = residual_rms(schedule.hot_entries(2 * layer + 1), hidden, eps)
        writer = MlpWriter(model.model.layers[layer].mlp, range(start, start + count), rms,
                           drive=DRIVES[torch.float32])
        for name in gone:
            for dim in groups[name].dims:
                writer.linear(Form({dim: 1.0}), Form({dim: -1.0}))
        assert writer.flush() == count, (layer, count)


def build_model(schedule: Schedule, dtype: torch.dtype = torch.float32,
                progress: Callable[[str], None] | None = None,
                groups: dict[str, Group] | None = None):
    """A `Qwen3_5ForCausalLM` holding the schedule's weights, in `dtype`, its values at
    `groups` (default: `allocate`'s); `progress` hears about every tenth of the ops."""
    target, plan = schedule.target, schedule.plan
    if plan.estimate:
        raise ValueError("an estimate plan (writes not carried) cannot be built")
    config = make_config(target.num_layers, target.hidden_size, target.intermediate_size,
                         target.layer_types, plan.protocol.vocab_size,
                         linear_num_key_heads=target.linear_heads,
                         linear_num_value_heads=target.linear_heads,
                         linear_key_head_dim=target.key_head_dim,
                         linear_value_head_dim=target.value_head_dim,
                         num_attention_heads=target.attention_heads,
                         num_key_value_heads=target.kv_heads, head_dim=target.head_dim,
                         rms_norm_eps=target.rms_norm_eps,
                         eos_token_id=plan.protocol.eos_id, dtype="float32")
    config.bos_token_id = plan.protocol.bos_id
    config.pad_token_id = plan.protocol.pad_id
    # Built directly in the checkpoint's dtype (a 2B-shaped model in fp32 would not fit in
    # memory twice); the MLP units keep the fp32 drive constants in every dtype, so a bf16
    # checkpoint holds the fp32 design rounded once.
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        model = blank_model(config, dtype)
    finally:
        torch.set_default_dtype(previous)
    binary = [name for name, value in plan.values.items() if value.encoding == BINARY]
    if binary and dtype != torch.float32:
        raise ValueError(f"{len(binary)} values are binary (e.g. {binary[0]}), which is exact in "
                         "float32 only (docs/schedule.md, \"Binary values\"); compile with "
                         "encoding 'onehot' for bfloat16")
    if groups is None:
        _, groups = allocate(schedule)
    hidden, eps = target.hidden_size, target.rms_norm_eps
    sizes = {s.name: s.size for s in plan.stores}
    next_unit: dict[int, int] = {}
    next_head: dict[int, int] = {}
    rms_at: dict[int, float] = {}              # sublayer -> its input rms (the norm ledger)
    step = max(1, len(plan.ops) // 10)
    for count, op in enumerate(plan.ops):
        if progress and count and count % step == 0:
            progress(f"weights: {count} of {len(plan.ops)} ops")
        if op.sublayer not in rms_at:
            rms_at[op.sublayer] = residual_rms(schedule.hot_entries(op.sublayer), hidden, eps)
        rms = rms_at[op.sublayer]
        layer = op.layer
        if op.kind == "mlp":
            start = next_unit.get(layer, 0)
            writer = MlpWriter(model.model.layers[layer].mlp, range(start, start + op.units), rms,
                               drive=DRIVES[torch.float32])
            if op.recording is None or not replay(writer, op.recording, groups):
                emit_mlp(writer, op, plan, groups)
            used = writer.flush()
            assert used == op.units, (op.name, used, op.units)
            next_unit[layer] = start + used
            continue
        first = next_head.get(layer, 0)
        heads = range(first, first + op.heads)
        next_head[layer] = first + op.heads
        if op.kind == "scratch":
            emit_scratch(model, layer, heads, rms, op, groups)
        else:
            emit_memory(model, layer, heads, rms, op, groups, sizes)
    emit_erasures(model, schedule, groups, next_unit)
    final_rms = residual_rms(schedule.hot_entries(2 * target.num_layers), hidden, eps)
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(embedding_table(plan, groups, hidden))
        model.lm_head.weight.copy_(lm_head_table(plan, groups, hidden, final_rms, EMIT_MARGIN))
    return model


def write_checkpoint(schedule: Schedule, protocol: TraceProtocol, model, directory,
                     precision_note: str = "") -> dict:
    """Write the checkpoint files (see the module doc); returns figures for the report."""
    from transformers import GenerationConfig

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.config.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
    model.save_pretrained(directory, safe_serialization=True)
    GenerationConfig(do_sample=False, eos_token_id=protocol.eos_id, pad_token_id=protocol.pad_id,
                     bos_token_id=protocol.bos_id).save_pretrained(directory)
    protocol.save(directory)
    tensors = {name: p for name, p in model.state_dict().items()}
    figures = {"parameters": sum(t.numel() for t in tensors.values()),
               "nonzeros": sum(int(torch.count_nonzero(t)) for t in tensors.values()),
               "bytes": (directory / "model.safetensors").stat().st_size}
    report = format_schedule(schedule)
    report += (f"\ncheckpoint: {figures['parameters']} parameters, {figures['nonzeros']} "
               f"nonzero, model.safetensors {figures['bytes']} bytes, dtype "
               f"{model.config.dtype}\n")
    if precision_note:
        report += f"precision: {precision_note}\n"
    (directory / "schedule.txt").write_text(report)
    for name in ("config.json", "generation_config.json"):
        _normalise_json(directory / name)      # the same bytes whatever transformers wrote them
    return figures


def format_layout(schedule: Schedule, groups: dict[str, Group]) -> str:
    """The residual layout: every value's dims, the sublayers it is live in, its encoding."""
    end = 2 * schedule.target.num_layers
    lines = [f"residual of {schedule.target.hidden_size} dims, {schedule.dims} used "
             "(dim 0 is ONE)"]
    for name in sorted(groups, key=lambda n: (groups[n].start, schedule.ready[n])):
        group = groups[name]
        erased = schedule.erase_at.get(name)
        lines.append(f"  {group.start:>5}..{group.stop - 1:<5} {name}  {group.kind}, "
                     f"sublayers {schedule.ready[name]}..{end if erased is None else erased}")
    return "\n".join(lines) + "\n"


def _normalise_json(path: Path) -> None:
    data = json.loads(path.read_text())
    data.pop("transformers_version", None)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
