"""Small random-weight Qwen3.5 "base" checkpoints, written to disk the way users download them.

`hdlc splice` puts compiled layers in front of a real Qwen3.5 checkpoint's own layers; real
weights cannot be downloaded here, so the tests build stand-ins with `make_base`: a byte-level
BPE tokenizer trained on `TEXT_SAMPLE` (Qwen's split regex, `<|endoftext|>`, `<|im_start|>`,
`<|im_end|>` and Qwen's four vision tokens appended as special tokens), a chat template, a
generation config, and the weights of either the text-only `Qwen3_5ForCausalLM` or the released
multimodal `Qwen3_5ForConditionalGeneration` (a one-block vision tower, stand-in processor
configs), tied or untied, float32 or bfloat16, optionally sharded.

The weights are random but scaled like a trained model's so that text logits look real:
embedding rows share a mean direction (entries N(0, 0.02)) plus per-row noise N(0, 0.08), so
tied logits have a spread of about 3 and a top logit near 17 (mostly for the input token
itself, as in any random tied model); an untied `lm_head` has entries N(0, 3 / sqrt(hidden))
for the same spread (top logit near 10); zero-centred RMSNorm weights (the scale
is 1 + w) are N(0, 0.1) and the DeltaNet's gated norm (scale w) is 1 + N(0, 0.1); linear
weights are N(0, 0.02); the DeltaNet's causal-conv taps are N(0, 0.2) (trained taps are
O(0.1-1), and N(0, 0.02) would all but silence the recurrence); `A_log` and `dt_bias` follow
transformers' init (log U(0.01, 16) and ones).  Every text parameter is drawn from one
generator seeded with `seed`, in name order, so the same arguments give byte-identical files.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import torch
from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
from transformers import (GenerationConfig, PreTrainedTokenizerFast, Qwen3_5Config,
                          Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration,
                          Qwen3_5TextConfig)
from transformers.models.qwen3_5.tokenization_qwen3_5 import PRETOKENIZE_REGEX

TEXT_SAMPLE = """\
The lighthouse keeper climbed the spiral stairs at dusk, counting each of the 217 steps as \
his father had taught him. Outside, the wind pushed grey waves against the rocks; inside, the \
lamp's brass fittings smelled of oil and old paper. He wrote in the log: "Visibility 4 miles, \
barometer falling (29.82 inHg), two fishing boats returned before 18:30."

Nobody remembers exactly when the village café opened. Some say 1952, others insist it was \
the spring after the flood -- the year the bridge washed out and the school moved to the hall \
on Elm Street. Either way, its menu hasn't changed much: coffee ($2.50), tea ($2.00), and a \
slice of apple pie that costs more than both together.

def moving_average(values, window=3):
    \"\"\"Return the running mean of `values` over `window` items.\"\"\"
    if window <= 0:
        raise ValueError(f"window must be positive, got {window}")
    total = sum(values[:window])
    result = [total / window]
    for i in range(window, len(values)):
        total += values[i] - values[i - window]
        result.append(total / window)
    return result

print(moving_average([3, 1, 4, 1, 5, 9, 2, 6], window=4))  # [2.25, 2.75, 4.75, 4.25, 5.5]

Questions people ask most often: Is the tide table accurate? (Usually, within ten minutes.) \
Can I walk to the island at low water? Yes -- but only between March and October, and never \
alone! What's the best time to visit? Early morning, when the fog lifts and the gulls are \
quiet.

In 2023 the council counted 1,048 residents, 312 households and 47 registered boats; the \
population has grown by roughly 3.5% per year since 2015. A new report recommends three \
changes: (1) repair the harbour wall, (2) extend the bus route to the station, and (3) keep \
the library open until 8 p.m. on Thursdays.

SELECT name, COUNT(*) AS visits FROM guests WHERE year >= 2020 GROUP BY name ORDER BY visits DESC;

She closed the notebook, turned off the lamp, and listened. The sea was calm at last.
"""

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>",
                  "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]
BPE_VOCAB_SIZE = 1000
CHAT_TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
                 "{{ message['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


@dataclass(frozen=True)
class BaseShape:
    hidden_size: int
    intermediate_size: int
    num_layers: int              # the base's own decoder layers (a few)
    linear_heads: int            # DeltaNet key heads = value heads
    key_head_dim: int
    value_head_dim: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    rms_norm_eps: float = 1e-6


# The smallest shape the reduced machine (`compile_helpers.REDUCED`) splices into with room for
# the text gate: since the FPU's add it needs 2,048 residual dims where a layer has 2,048 units
# (1,730 since ISA v2, 2,448 with 1,536 units), so the base's hidden is 2,112: 64 dims free.
MIN_SHAPE = BaseShape(hidden_size=2112, intermediate_size=2048, num_layers=4, linear_heads=8,
                      key_head_dim=128, value_head_dim=128, attention_heads=2, kv_heads=1,
                      head_dim=64)
QWEN35_2B_DIMS = BaseShape(hidden_size=2048, intermediate_size=6144, num_layers=4,
                           linear_heads=16, key_head_dim=128, value_head_dim=128,
                           attention_heads=8, kv_heads=2, head_dim=256)

FULL_ATTENTION_INTERVAL = 4
PARTIAL_ROTARY_FACTOR = 0.25


def layer_types(num_layers: int) -> list[str]:
    """Qwen3.5's pattern (every 4th layer full attention), with at least one full layer:
    transformers' hybrid cache needs one."""
    types = ["full_attention" if (i + 1) % FULL_ATTENTION_INTERVAL == 0 else "linear_attention"
             for i in range(num_layers)]
    if "full_attention" not in types:
        types[-1] = "full_attention"
    return types


def train_tokenizer() -> Tokenizer:
    """Byte-level BPE on TEXT_SAMPLE, pre-tokenised like Qwen3.5's, specials appended last."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRETOKENIZE_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=BPE_VOCAB_SIZE, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator([TEXT_SAMPLE], trainer=trainer)
    tokenizer.add_special_tokens(SPECIAL_TOKENS)
    return tokenizer


def save_tokenizer(directory: Path) -> PreTrainedTokenizerFast:
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=train_tokenizer(), eos_token="<|im_end|>", pad_token="<|endoftext|>",
        unk_token=None, bos_token=None, chat_template=CHAT_TEMPLATE, model_max_length=262144)
    tokenizer.save_pretrained(directory)
    # The released file names Qwen2Tokenizer (transformers would write TokenizersBackend, a
    # name older versions cannot load); every class gives the same ids from tokenizer.json.
    config_path = directory / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "Qwen2Tokenizer"
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return tokenizer


def mrope_section(head_dim: int) -> list[int]:
    """Qwen3.5's [11, 11, 10] split of the rotary half-dimension (32 at head_dim 256),
    scaled to `head_dim`."""
    half = int(head_dim * PARTIAL_ROTARY_FACTOR) // 2
    side = round(half * 11 / 32)
    return [side, side, half - 2 * side]


def text_config(shape: BaseShape, vocab_rows: int, tied: bool, dtype: torch.dtype,
                token_ids: dict[str, int]) -> Qwen3_5TextConfig:
    return Qwen3_5TextConfig(
        vocab_size=vocab_rows, hidden_size=shape.hidden_size,
        intermediate_size=shape.intermediate_size, num_hidden_layers=shape.num_layers,
        layer_types=layer_types(shape.num_layers), num_attention_heads=shape.attention_heads,
        num_key_value_heads=shape.kv_heads, head_dim=shape.head_dim,
        linear_num_key_heads=shape.linear_heads, linear_num_value_heads=shape.linear_heads,
        linear_key_head_dim=shape.key_head_dim, linear_value_head_dim=shape.value_head_dim,
        linear_conv_kernel_dim=4, rms_norm_eps=shape.rms_norm_eps, hidden_act="silu",
        max_position_embeddings=262144, tie_word_embeddings=tied,
        rope_parameters={"rope_type": "default", "rope_theta": 10000000.0,
                         "partial_rotary_factor": PARTIAL_ROTARY_FACTOR,
                         "mrope_interleaved": True, "mrope_section": mrope_section(shape.head_dim)},
        eos_token_id=token_ids["<|endoftext|>"], pad_token_id=None, bos_token_id=None,
        dtype=dtype)


def multimodal_config(text: Qwen3_5TextConfig, tied: bool, dtype: torch.dtype,
                      token_ids: dict[str, int]) -> Qwen3_5Config:
    """The released layout: the text config under `text_config`, a one-block vision tower."""
    vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=16,
                  temporal_patch_size=2, spatial_merge_size=2, out_hidden_size=text.hidden_size,
                  num_position_embeddings=64)
    config = Qwen3_5Config(
        text_config=text.to_dict(), vision_config=vision, tie_word_embeddings=tied,
        image_token_id=token_ids["<|image_pad|>"], video_token_id=token_ids["<|video_pad|>"],
        vision_start_token_id=token_ids["<|vision_start|>"],
        vision_end_token_id=token_ids["<|vision_end|>"], dtype=dtype)
    config.architectures = ["Qwen3_5ForConditionalGeneration"]
    return config


@torch.no_grad()
def fill_text_weights(model, generator: torch.Generator, hidden_size: int, tied: bool,
                      shared: float = 0.02) -> None:
    """Trained-like scales for every text parameter (the module docstring says which);
    `shared` is the std of the embedding rows' shared direction's entries."""
    def normal(shape, std, mean=0.0):
        return torch.randn(shape, generator=generator, dtype=torch.float32) * std + mean

    for name, parameter in sorted(model.named_parameters()):
        if ".visual." in name:
            continue
        shape = parameter.shape
        if name.endswith("embed_tokens.weight"):
            value = normal(shape[1:], shared) + normal(shape, 0.08)
        elif name == "lm_head.weight":
            value = normal(shape, 3.0 / math.sqrt(hidden_size))
        elif name.endswith("linear_attn.norm.weight"):
            value = normal(shape, 0.1, mean=1.0)
        elif name.endswith("norm.weight"):
            value = normal(shape, 0.1)
        elif name.endswith("conv1d.weight"):
            value = normal(shape, 0.2)
        elif name.endswith("A_log"):
            value = (torch.rand(shape, generator=generator) * (16 - 0.01) + 0.01).log()
        elif name.endswith("dt_bias"):
            value = torch.ones(shape)
        elif name.endswith(("proj.weight", "proj_a.weight", "proj_b.weight", "proj_z.weight",
                                "proj_qkv.weight")):
            value = normal(shape, 0.02)
        else:
            raise AssertionError(f"no initial scale for {name}")
        parameter.copy_(value)
    if tied:
        model.tie_weights()


def write_processor_configs(directory: Path) -> None:
    """Stand-ins for the released image and video processor files (splice copies them)."""
    common = {"patch_size": 16, "temporal_patch_size": 2, "merge_size": 2,
              "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
              "processor_class": "Qwen3VLProcessor"}
    image = {**common, "image_processor_type": "Qwen2VLImageProcessorFast",
             "size": {"longest_edge": 16777216, "shortest_edge": 65536}}
    video = {**common, "video_processor_type": "Qwen3VLVideoProcessor",
             "size": {"longest_edge": 25165824, "shortest_edge": 4096}, "fps": 2}
    for file_name, content in [("preprocessor_config.json", image),
                               ("video_preprocessor_config.json", video)]:
        (directory / file_name).write_text(json.dumps(content, indent=2, sort_keys=True) + "\n")


def make_base(directory, shape: BaseShape = MIN_SHAPE, *, tied: bool = False,
              multimodal: bool = False, dtype: torch.dtype = torch.float32, seed: int = 0,
              vocab_rows: int | None = None, max_shard_size: str | None = None,
              shared: float = 0.02) -> Path:
    """Write a random-weight Qwen3.5 base checkpoint (tokenizer, configs, safetensors) into
    `directory` and return it.  The embedding has `vocab_rows` rows, by default the
    tokenizer's size rounded up to a multiple of 64 (like Qwen's, a few rows unused); its rows
    share a direction whose entries have std `shared` (0: isotropic, as transformers would
    initialise them)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = save_tokenizer(directory)
    token_ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL_TOKENS}
    vocab_rows = vocab_rows or -(-len(tokenizer) // 64) * 64
    if vocab_rows < len(tokenizer):
        raise ValueError(f"vocab_rows {vocab_rows} < tokenizer size {len(tokenizer)}")

    torch.manual_seed(seed)                    # the vision tower keeps transformers' init
    text = text_config(shape, vocab_rows, tied, dtype, token_ids)
    if multimodal:
        model = Qwen3_5ForConditionalGeneration(multimodal_config(text, tied, dtype, token_ids))
        write_processor_configs(directory)
    else:
        model = Qwen3_5ForCausalLM(text)
    fill_text_weights(model, torch.Generator().manual_seed(seed), shape.hidden_size, tied,
                      shared)
    model = model.to(dtype).eval()
    model.generation_config = GenerationConfig(
        eos_token_id=[token_ids["<|im_end|>"], token_ids["<|endoftext|>"]],
        pad_token_id=token_ids["<|endoftext|>"], do_sample=False)
    save_options = {} if max_shard_size is None else {"max_shard_size": max_shard_size}
    model.save_pretrained(directory, safe_serialization=True, **save_options)
    return directory


def text_ids(directory) -> list[int]:
    """The base tokenizer's ids of TEXT_SAMPLE."""
    from transformers import AutoTokenizer
    return AutoTokenizer.from_pretrained(directory)(TEXT_SAMPLE)["input_ids"]
