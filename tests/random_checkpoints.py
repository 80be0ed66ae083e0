"""Random Qwen3.5 checkpoints (not QwenGPUs), and stock transformers' answers on them.

A random model exercises every piece of the decoder that compiled QwenGPU checkpoints leave
idle or trivial: live full attention (GQA, partial rotary, q/k norms, the output gate), a
DeltaNet decay other than 1 and a beta other than 0 or 1, grouped DeltaNet value heads, dense
matrices, random norm weights and conv taps.  Its logits have no margins, so the tests compare
logits within a float32 tolerance, and ids where the engine and transformers must agree.
`save_random_qwen` writes one with a QwenGPU vocabulary (the model backend's plumbing is
tested on it).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig

VOCAB = 97
LAYER_TYPES = ["linear_attention", "full_attention", "linear_attention", "full_attention"]


def random_config(**overrides) -> Qwen3_5TextConfig:
    settings = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96,
                    num_hidden_layers=4, layer_types=LAYER_TYPES, num_attention_heads=4,
                    num_key_value_heads=2, head_dim=16, linear_num_key_heads=2,
                    linear_num_value_heads=4, linear_key_head_dim=8, linear_value_head_dim=12,
                    linear_conv_kernel_dim=4, rms_norm_eps=1e-6, tie_word_embeddings=False,
                    rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                     "partial_rotary_factor": 0.25},
                    dtype="float32", eos_token_id=None)
    settings.update(overrides)
    return Qwen3_5TextConfig(**settings)


def random_model(seed: int = 0, **overrides) -> Qwen3_5ForCausalLM:
    """A Qwen3.5 text model with random weights everywhere, norms and DeltaNet gates too."""
    torch.manual_seed(seed)
    model = Qwen3_5ForCausalLM(random_config(**overrides)).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name:
                parameter.normal_(0.0, 0.3)
            elif "A_log" in name:
                parameter.uniform_(-2.0, 1.0)          # decays well away from 1
            elif "dt_bias" in name:
                parameter.normal_(0.0, 1.0)
    return model


def save(model, directory: Path, **kwargs) -> Path:
    model.save_pretrained(directory, **kwargs)
    return directory


@torch.no_grad()
def stock_logits(model, ids: list[int]) -> torch.Tensor:
    """[len(ids), vocab] logits of one forward over the whole sequence (chunked DeltaNet)."""
    return model(torch.tensor([ids])).logits[0]


@torch.no_grad()
def stock_generate(model, prompt: list[int], new_tokens: int) -> list[int]:
    ids = torch.tensor([prompt])
    output = model.generate(ids, attention_mask=torch.ones_like(ids), do_sample=False,
                            max_new_tokens=new_tokens, min_new_tokens=new_tokens,
                            pad_token_id=0)
    return output[0, len(prompt):].tolist()


def as_multimodal(text_dir: Path, directory: Path) -> Path:
    """The released multimodal layout of a text checkpoint: config.json with a `text_config`
    (model_type qwen3_5), the decoder's tensors under `model.language_model.`, a vision
    tensor beside them (the engine leaves it alone)."""
    from safetensors.torch import load_file, save_file

    directory.mkdir(parents=True, exist_ok=True)
    text = json.loads((text_dir / "config.json").read_text())
    config = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
              "text_config": text, "vision_config": {"depth": 1}, "tie_word_embeddings":
              text.get("tie_word_embeddings", False)}
    (directory / "config.json").write_text(json.dumps(config))
    tensors = load_file(str(text_dir / "model.safetensors"))
    renamed = {(name.replace("model.", "model.language_model.", 1)
                if name.startswith("model.") else name): tensor
               for name, tensor in tensors.items()}
    renamed["model.visual.patch_embed.proj.weight"] = torch.ones(4, 3)
    save_file(renamed, str(directory / "model.safetensors"))
    return directory


# float32 rounding of a few hundred products and sums per logit (logits are O(1)); the
# measured difference between the engine and transformers is about 2e-7.
TOLERANCE = 2e-5


def prompt_of(seed: int, length: int) -> list[int]:
    return torch.randint(0, VOCAB, (length,), generator=torch.Generator().manual_seed(seed)
                         ).tolist()


def engine_logits(engine, ids: list[int], chunk: int | None = None) -> np.ndarray:
    """[len(ids), vocab] logits of a sparse engine, the prompt given `chunk` tokens at a
    time (default all)."""
    state = engine.new_state(1)
    chunk = chunk or len(ids)
    pieces = []
    for start in range(0, len(ids), chunk):
        piece = ids[start:start + chunk]
        pieces.append(engine.forward(state, piece, [0] * len(piece), range(len(piece)),
                                     logits=True))
    return np.concatenate(pieces, axis=1).T


def save_random_qwen(directory, protocol) -> None:
    """A tiny Qwen3.5 with random weights and `protocol`'s vocabulary, saved in `directory`
    (the model backend's plumbing is tested on it; it is not a QwenGPU)."""
    from qwengpu.backend_torch.model import FULL, LINEAR, make_config

    config = make_config(2, 32, 64, [LINEAR, FULL], protocol.vocab_size,
                         linear_num_key_heads=1, linear_num_value_heads=1,
                         linear_key_head_dim=16, linear_value_head_dim=16,
                         num_attention_heads=1, num_key_value_heads=1, head_dim=16,
                         eos_token_id=protocol.eos_id)
    torch.manual_seed(0)
    Qwen3_5ForCausalLM(config).save_pretrained(directory)

