"""Writing the spliced checkpoint: the compiled layers, then the base's own, in the base's form.

The directory holds what the base's held (processor files, chat template, generation config,
vision weights: unchanged) and:

- `config.json`: the base's, its text part with `45 + L` layers (`layer_types`: the compiled
  layers' then the base's), the grown vocabulary, untied embeddings, `dtype` float32 (what
  the checkpoint loads as: a bf16 tensor widens to it exactly);
- the safetensors shards and `model.safetensors.index.json`: compiled layer i as decoder
  layer i in float32 (its binary values are exact in float32 only), base layer j as layer
  `45 + j` with its tensors unchanged, in the base's own dtype (a bf16 base's layers stay
  bf16: half the bytes), the embedding and `lm_head` in float32, the base's rows with the
  machine's at the placement's ids (a tied base's `lm_head` is its embedding, written out);
- the base's tokenizer with the machine's tokens (`vocab.extend_tokenizer`);
- `protocol.json`, `machine.json` (what `hdlc run --model DIR` needs), `splice.json` (the id
  offset and the figures) and `splice.txt` (the report and the machine's schedule).

Everything is written into a `.partial` directory beside the output, renamed when complete,
so a failed splice leaves nothing behind.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import torch

from qwengpu.errors import make_parent_folders
from qwengpu.backend_torch.schedule import format_schedule
from qwengpu.backend_torch.target import NUM_LAYERS
from qwengpu.runtime.machine_file import write_machine_file
from qwengpu.runtime.spliced import SPLICE_FILE
from qwengpu.trace.protocol import PROTOCOL_FILE
from qwengpu.splice.vocab import extend_tokenizer

SHARD_BYTES = 2 << 30
OUTPUT_PROJECTIONS = ("mlp.down_proj.weight", "linear_attn.out_proj.weight",
                      "self_attn.o_proj.weight")
HIDDEN_VECTORS = ("input_layernorm.weight", "post_attention_layernorm.weight")
INPUT_PROJECTIONS = ("mlp.gate_proj.weight", "mlp.up_proj.weight", "linear_attn.in_proj_qkv.weight",
                     "linear_attn.in_proj_z.weight", "linear_attn.in_proj_b.weight",
                     "linear_attn.in_proj_a.weight", "self_attn.q_proj.weight",
                     "self_attn.k_proj.weight", "self_attn.v_proj.weight")


def permute_hidden(model, permutation: torch.Tensor):
    """The compiled decoder layers' tensors (`layers.I.NAME`), moved from machine dims to
    base dims (`permutation[machine_dim] = base_dim`), one at a time: each parameter's memory
    is given back as its permuted copy is handed on (a 2B-shaped machine is 10 GB in
    float32, and must not be held twice)."""
    inverse = torch.empty_like(permutation)
    inverse[permutation] = torch.arange(len(permutation))
    layers = model.model.layers
    for name, parameter in list(layers.named_parameters()):
        tensor = parameter.detach()
        own = name.split(".", 1)[1]
        if own in OUTPUT_PROJECTIONS:
            tensor = tensor[inverse, :]
        elif own in HIDDEN_VECTORS:
            tensor = tensor[inverse]
        elif own in INPUT_PROJECTIONS:
            tensor = tensor[:, inverse]
        else:
            tensor = tensor.clone()
        parameter.data = torch.empty(0)
        yield f"layers.{name}", tensor.contiguous()


def spliced_config(base, layer_types: list[str], vocab_size: int) -> dict:
    config = copy.deepcopy(base.config)
    text = config["text_config"] if base.multimodal else config
    base_types = text.get("layer_types") or [
        "full_attention" if (i + 1) % int(text.get("full_attention_interval", 4)) == 0
        else "linear_attention" for i in range(base.num_layers)]
    text["num_hidden_layers"] = NUM_LAYERS + base.num_layers
    text["layer_types"] = list(layer_types) + list(base_types)
    text["vocab_size"] = vocab_size
    config["tie_word_embeddings"] = text["tie_word_embeddings"] = False
    for part in (config, text):
        part.pop("torch_dtype", None)
        part["dtype"] = "float32"
    return config


def _tensors(base, layers, embedding, machine_lm, placement):
    """(name, tensor) of the spliced checkpoint, one at a time: the compiled layers, the
    embedding and `lm_head` in float32, the base's other tensors in their own dtype."""
    prefix = base.text_prefix
    for name, tensor in layers:
        yield prefix + name, tensor.float()
    for name in sorted(base.files):
        layer = base.layer_of(name)
        if layer is not None:
            rest = name[len(prefix + "layers."):].split(".", 1)[1]
            yield f"{prefix}layers.{NUM_LAYERS + layer}.{rest}", base.tensor(name)
        elif name not in (base.embedding_name, "lm_head.weight"):
            yield name, base.tensor(name)
    for name, rows in ((base.embedding_name, embedding),
                       ("lm_head.weight", machine_lm)):
        table = torch.zeros(placement.vocab_size, rows.shape[1])
        source = base.tensor(base.embedding_name if name != "lm_head.weight"
                             else base.lm_head_name).float()
        table[:source.shape[0]] = source
        table[placement.offset:placement.offset + placement.count] = rows.float()
        yield name, table


def _write_shards(directory: Path, tensors) -> None:
    """Each shard written as soon as it holds SHARD_BYTES (only one is ever in memory), then
    named `model-0000I-of-0000N.safetensors` once N is known, and the index."""
    from safetensors.torch import save_file

    files, weight_map, total = [], {}, 0
    current, size = {}, 0

    def flush():
        file = directory / f"model-{len(files) + 1:05d}.safetensors"
        save_file(current, str(file), metadata={"format": "pt"})
        files.append(file)
        for name in current:
            weight_map[name] = len(files) - 1

    for name, tensor in tensors:
        current[name] = tensor
        size += tensor.numel() * tensor.element_size()
        total += tensor.numel() * tensor.element_size()
        if size >= SHARD_BYTES:
            flush()
            current, size = {}, 0
    if current:
        flush()
    names = []
    for index, file in enumerate(files):
        name = f"model-{index + 1:05d}-of-{len(files):05d}.safetensors"
        file.rename(directory / name)
        names.append(name)
    index = {"metadata": {"total_size": total},
             "weight_map": {name: names[shard] for name, shard in sorted(weight_map.items())}}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")


def write_spliced(base, output: Path, layers, layer_types, embedding, machine_lm, placement,
                  compiled, report, say) -> None:
    partial = output.parent / f".{output.name}.partial"
    if partial.exists():
        shutil.rmtree(partial)
    make_parent_folders(output, "spliced checkpoint")
    partial.mkdir()
    try:
        for path in sorted(base.directory.iterdir()):
            if path.is_file() and not path.name.startswith("model.safetensors") and \
                    not path.name.endswith(".safetensors"):
                shutil.copy2(path, partial / path.name)
        config = spliced_config(base, layer_types, placement.vocab_size)
        (partial / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
        _write_shards(partial, _tensors(base, layers, embedding, machine_lm, placement))
        say("write: tokenizer")
        extend_tokenizer(base.directory, compiled.protocol.texts, placement.offset, partial)
        protocol = compiled.protocol
        (partial / PROTOCOL_FILE).write_text(json.dumps(protocol.to_json(), indent=1) + "\n")
        write_machine_file(partial, compiled.spec, compiled.params)
        figures = {key: value for key, value in report.figures.items()}
        (partial / SPLICE_FILE).write_text(json.dumps(
            {"offset": placement.offset, "count": placement.count,
             "vocab_size": placement.vocab_size, "compiled_layers": NUM_LAYERS,
             "multimodal": base.multimodal, "figures": figures}, indent=1) + "\n")
        (partial / "splice.txt").write_text(report.text() + "\n" +
                                            format_schedule(compiled.schedule))
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    partial.rename(output)
