"""The single-step harness: one record of a compiled machine, from any state, against the
reference interpreter.

A launch puts the machine into its initial state through prompt tokens; this harness does the
same with a *random* state, so every corner of the step logic is reached without writing a
program that gets there.  It puts the compiled model into `state` through the prompt
(`qwengpu.trace.prompt.state_prompt`, exactly what a launch does), lets the checkpoint write
one record's worth of tokens with stock transformers (`model.generate(do_sample=False)`),
decodes them with the protocol (`qwengpu.runtime.decode.TraceDecoder`) and compares the record
with the interpreter's first record from the same state (`qwengpu.dsl.Simulator`).  The
model also writes the token that follows the record: the first byte of the next record, which
the model computes from the state it committed from its own record, or `<eos>` when the
machine stops; that token is checked as well.

    state = random_state(design, random.Random(seed))        # every state element
    expected = expected_record(design, state)                # the interpreter's, or None
    step = model_step(model, protocol, state, prefill=expected_ids[:k])
    compare(expected, step.record)                           # None, or the first difference

Two paths, which must agree (docs/compiler.md, "Exactness"): *decode* generates every token of
the record after the prompt; *prefill* gives the prompt plus the first `k` tokens of the
interpreter's record in one forward pass (the chunked DeltaNet path) and the model continues.
No Python in the loop computes what the model computes: project code builds the prompt and
reads the generated ids, nothing else (docs/compiler.md, "How a result is judged").

`random_state` fills every element of any design with random values in range.  For a QwenGPU
machine (specs/qwengpu.hdl at any parameters) it makes *meaningful* states instead: a program
of valid random instructions (`qwengpu.isa`), registers with edge values, preds, live masks
with a live lane, PCs in range, warp tables, `ntid`/`nctaid`, `last_warp`.  docs/single_step.md
has how to run it and the figures.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

import torch

from qwengpu.trace.protocol import TraceProtocol
from qwengpu.dsl.interp import Simulator, compile_step
from qwengpu.dsl.netlist import Design
from qwengpu.isa import ACCESSES_MEMORY, PT, RZ, Cmp, Instruction, Op, Special
from qwengpu.trace.decode import DecodeError, TraceDecoder
from qwengpu.trace.prompt import state_prompt

State = dict[str, list[int]]
Record = dict[str, int]

QWENGPU_PARAMETERS = ("LANES", "WARPS", "REGS", "PREDS", "MEM_WORDS", "PARAM_WORDS",
                      "PROG_WORDS")
INT_MIN, INT_MAX, MINUS_ONE = 0x8000_0000, 0x7FFF_FFFF, 0xFFFF_FFFF
EDGE_WORDS = (0, 1, MINUS_ONE, INT_MIN, INT_MAX, 2, 31, 32, 0xFFFF, 0x1_0000)


# ---- states ---------------------------------------------------------------------------------

def random_state(design: Design, rng: random.Random, **constraints) -> State:
    """Every state element of `design`, flat and row-major (a register as a list of one
    value), random and in range.  A keyword naming a state element fixes it (a list, or an int
    for a register).  For a QwenGPU machine the state is meaningful (module docstring) and
    takes `op=` (the opcode of the instruction the next step issues), `halted=`, and
    `fault_rate=` (how often an instruction's operand is chosen to fault, default 0.1)."""
    if is_qwengpu(design):
        state = _qwengpu_state(design, rng, constraints)
    else:
        state = {name: [rng.getrandbits(memory.width) for _ in range(memory.size)]
                 for name, memory in design.memories.items()}
        state.update({name: [rng.getrandbits(register.width)]
                      for name, register in design.registers.items()})
    for name, value in constraints.items():
        if name in state:
            state[name] = [value] if isinstance(value, int) else list(value)
        elif not is_qwengpu(design) or name not in ("op", "fault_rate"):
            raise TypeError(f"random_state: {design.name} has no state element {name!r}")
    return state


def is_qwengpu(design: Design) -> bool:
    """Whether `design` is a QwenGPU machine (its shape parameters and `prog` of 64 bits)."""
    prog = design.memories.get("prog")
    return all(p in design.params for p in QWENGPU_PARAMETERS) and prog is not None \
        and prog.width == 64


def _qwengpu_state(design: Design, rng: random.Random, constraints: dict) -> State:
    p = design.params
    lanes, warps, regs, preds = p["LANES"], p["WARPS"], p["REGS"], p["PREDS"]
    prog_words, mem_words, param_words = p["PROG_WORDS"], p["MEM_WORDS"], p["PARAM_WORDS"]
    fault_rate = constraints.get("fault_rate", 0.1)
    shape = _Shape(regs, preds, prog_words, mem_words, param_words, fault_rate)

    def word() -> int:
        if rng.random() < 0.5:
            return rng.choice(EDGE_WORDS)
        if rng.random() < 0.3:
            return 4 * rng.randrange(mem_words)          # a valid byte address
        return rng.getrandbits(32)

    live = [int(rng.random() < 0.7) for _ in range(warps * lanes)]
    if not any(live):
        live[rng.randrange(len(live))] = 1
    # PCs: lanes of a warp often share a PC (converged), sometimes diverge.
    pcs = []
    for _ in range(warps):
        base = rng.randrange(prog_words)
        pcs += [base if rng.random() < 0.6 else rng.randrange(prog_words) for _ in range(lanes)]
    state = {
        "prog": [_random_instruction(rng, shape).encode() for _ in range(prog_words)],
        "mem": [word() for _ in range(mem_words)],
        "params": [word() for _ in range(param_words)],
        "regs": [word() for _ in range(warps * lanes * regs)],
        "preds": [rng.getrandbits(1) for _ in range(warps * lanes * preds)],
        "pc": pcs,
        "live": live,
        "warp_ctaid": [rng.randrange(4) for _ in range(warps)],
        "warp_tid0": [lanes * rng.randrange(2 * warps) for _ in range(warps)],
        "ntid": [rng.choice((lanes, lanes * warps, rng.randrange(1, 64)))],
        "nctaid": [rng.randrange(1, 5)],
        "last_warp": [rng.randrange(warps)],
        "halted": [int(constraints.get("halted", 0))],
        "trap": [0],
    }
    # Blocks of consecutive warps, each with a window of shared memory; threads' windows of
    # local memory; some warps waiting at a barrier.
    per_block = rng.randrange(1, warps + 1)
    shared_words = rng.randrange(mem_words + 1)
    local_words = rng.randrange(min(mem_words, 8) + 1)
    shared_base = [rng.randrange(mem_words) for _ in range(-(-warps // per_block))]
    state.update({
        "warp_block": [w // per_block for w in range(warps)],
        "warp_shared": [shared_base[w // per_block] for w in range(warps)],
        "thread_local": [rng.randrange(mem_words) for _ in range(warps * lanes)],
        "waiting": [int(rng.random() < 0.2) for _ in range(warps)],
        "shared_words": [shared_words],
        "local_words": [local_words],
    })
    # A reachable state: the last warp of a block to arrive at a barrier releases it, so some
    # warp with live lanes in each block is not waiting.
    for block in set(state["warp_block"]):
        alive = [w for w in range(warps) if state["warp_block"][w] == block
                 and any(live[w * lanes:(w + 1) * lanes])]
        if alive and all(state["waiting"][w] for w in alive):
            state["waiting"][rng.choice(alive)] = 0
    if "op" in constraints:
        # The issuing warp and PC depend on live, pc and last_warp only, not on the program:
        # one interpreter step tells where it fetches, then that slot gets the wanted opcode.
        probe = expected_record(design, {**state, "halted": [0]})
        if probe is not None:
            state["prog"][probe["pc"]] = _random_instruction(
                rng, shape, op=int(constraints["op"])).encode()
    extra = set(state) ^ (set(design.memories) | set(design.registers))
    if extra:
        raise ValueError(f"{design.name}: the QwenGPU state generator does not match the "
                         f"design's state ({sorted(extra)})")
    return state


@dataclass(frozen=True)
class _Shape:
    regs: int
    preds: int
    prog_words: int
    mem_words: int
    param_words: int
    fault_rate: float


def _random_instruction(rng: random.Random, shape: _Shape, op: int | None = None
                        ) -> Instruction:
    """A valid instruction (operands in range, some guards); `op` may be any 6-bit opcode,
    an invalid one included (it traps, as docs/isa.md says)."""
    if op is None:
        op = rng.randrange(1, len(Op))
    faulty = rng.random() < shape.fault_rate

    def reg() -> int:
        return RZ if rng.random() < 0.1 else rng.randrange(shape.regs)

    def pred() -> int:
        return PT if rng.random() < 0.15 else rng.randrange(shape.preds)

    def immediate() -> int:
        return rng.choice((0, 1, MINUS_ONE, INT_MIN, INT_MAX, rng.randrange(40),
                           rng.getrandbits(32)))

    fields = {"d": reg(), "a": reg(), "b": reg(), "c": reg(), "bimm": rng.random() < 0.4,
              "imm": immediate()}
    if op in (Op.SHL, Op.SHR_U, Op.SHR_S) and rng.random() < 0.7:
        fields["imm"] = rng.randrange(36)
    if op == Op.SETP:
        fields.update(d=pred(), c=rng.randrange(len(Cmp)) if rng.random() < 0.9
                      else rng.randrange(len(Cmp), 16))
    elif op == Op.SELP:
        fields["c"] = pred()
    elif op in (Op.PAND, Op.POR, Op.PXOR, Op.PNOT):
        fields.update(d=pred(), a=pred(), b=pred())
    elif op in ACCESSES_MEMORY:
        word = rng.randrange(shape.mem_words)
        fields["imm"] = 4 * word
        fields["space"] = rng.choice((0, 0, 1, 2)) if not faulty or rng.random() < 0.7 else 3
        if fields["space"] and rng.random() < 0.7:
            fields["imm"] = 4 * rng.randrange(8)   # an offset into a small window
        if op in (Op.ST_U8, Op.ST_U16):
            fields["imm"] += rng.randrange(4)      # any byte (st.u16: odd ones misalign)
        if rng.random() < 0.6:
            fields["a"] = RZ                       # an absolute address
        if faulty:
            fields["imm"] = rng.choice((4 * shape.mem_words, 4 * word + rng.randrange(1, 4),
                                        MINUS_ONE - 3))
    elif op == Op.VOTE:
        fields["a"] = pred()
    elif op == Op.BRA:
        fields["imm"] = rng.randrange(shape.prog_words)
    elif op == Op.S2R:
        fields["imm"] = rng.randrange(len(Special)) if not faulty else len(Special)
    elif op == Op.LDP:
        fields["imm"] = rng.randrange(shape.param_words) if not faulty else shape.param_words
    if rng.random() < 0.3:                         # a guard: @p or @!p
        fields.update(pg=rng.randrange(min(shape.preds, PT)), pn=rng.random() < 0.5)
    return Instruction(op=op, **fields)


# ---- the interpreter's record ---------------------------------------------------------------

_STEPS: dict[int, tuple[Design, object]] = {}


def simulator(design: Design, state: State) -> Simulator:
    """A simulator of `design` holding `state` (the compiled step is kept per design)."""
    cached = _STEPS.get(id(design))
    if cached is None or cached[0] is not design:
        cached = _STEPS[id(design)] = (design, compile_step(design))
    sim = Simulator(design, cached[1])
    for name in design.memories:
        sim.load_memory(name, state[name])
    for name in design.registers:
        sim.set_register(name, state[name][0])
    return sim


def expected_record(design: Design, state: State) -> Record | None:
    """The interpreter's first record from `state`, or None when the machine stops there."""
    return simulator(design, state).step()


def expected_ids(protocol: TraceProtocol, design: Design, state: State) -> list[int]:
    """The interpreter's first record from `state` as token ids, then the token after it
    (the next record's first byte, or eos); just eos when the machine stops at once."""
    records = simulator(design, state).run(2)
    ids = protocol.encode_records(records[:1], eos=not records)
    if len(records) == 2:
        ids.append(protocol.encode_record(records[1])[0])
    elif records:
        ids.append(protocol.eos_id)
    return ids


# ---- the model's record ---------------------------------------------------------------------

@dataclass
class ModelStep:
    """What the model wrote from a state: `record` (None: it wrote eos at once), `ids` (the
    whole trace part: the prefill given, then the generated ids), `after` (the id it wrote
    after the record: the next record's first byte or eos; None if it stopped first), and
    `error` (the decoder's message when the ids are not a well-formed trace)."""

    record: Record | None
    ids: list[int]
    after: int | None
    error: str | None = None


@torch.no_grad()
def model_step(model, protocol: TraceProtocol, state: State,
               prefill: Sequence[int] = ()) -> ModelStep:
    """Put `model` into `state` through the prompt, give `prefill` (the first tokens of the
    record) after it, and let stock transformers write the rest of the record and one token
    more, greedily; decode the ids with the protocol."""
    prompt = state_prompt(protocol, state) + list(prefill)
    wanted = protocol.tokens_per_record + 1 - len(prefill)
    device = next(model.parameters()).device
    out = model.generate(torch.tensor([prompt], device=device), max_new_tokens=wanted,
                         do_sample=False, attention_mask=torch.ones(1, len(prompt),
                                                                    dtype=torch.long,
                                                                    device=device))
    ids = list(prefill) + out[0, len(prompt):].tolist()
    decoder = TraceDecoder(protocol, offset=len(prompt) - len(prefill))
    record, after, error = None, None, None
    try:
        for position, token_id in enumerate(ids):
            done = decoder.feed(token_id)
            if done is not None or decoder.ended:
                record = done
                after = ids[position + 1] if done is not None and position + 1 < len(ids) \
                    else None
                break
        else:
            decoder.finish()
    except DecodeError as failure:
        error = str(failure)
    return ModelStep(record, ids, after, error)


def model_record(model, protocol: TraceProtocol, state: State,
                 prefill: Sequence[int] = ()) -> Record | None:
    """The record the model writes from `state` (None: eos, the machine stopped);
    `DecodeError` when its output is not a well-formed record."""
    step = model_step(model, protocol, state, prefill)
    if step.error:
        raise DecodeError(step.error)
    return step.record


def compare(expected: Record | None, got: Record | None) -> str | None:
    """The first field (in record order) where `got` differs from `expected`, in words, or
    None when they agree.  None stands for "the machine stopped" (eos)."""
    if expected is None or got is None:
        if expected is got:
            return None
        return ("expected <eos> (the machine stops), got a record" if expected is None else
                "expected a record, got <eos>")
    for name, value in expected.items():
        if got.get(name) != value:
            return f"field {name}: expected {value:#x}, got {_hex(got.get(name))}"
    return None


def _hex(value: int | None) -> str:
    return "nothing" if value is None else f"{value:#x}"


def check_step(model, protocol: TraceProtocol, design: Design, state: State,
               prefill_tokens: int = 0) -> str | None:
    """Run one step in the model (with the first `prefill_tokens` tokens of the interpreter's
    record given) and compare: None when record and following token agree, else the first
    difference in words."""
    want = expected_ids(protocol, design, state)
    expected = expected_record(design, state)
    step = model_step(model, protocol, state, want[:prefill_tokens] if expected else [])
    if step.error:
        return f"the model's output is not a record: {step.error}; ids " \
               f"{_texts(protocol, step.ids)}"
    difference = compare(expected, step.record)
    if difference:
        return difference
    if expected is not None and step.after != want[-1]:
        return (f"after the record: expected {protocol.describe(want[-1]).text}, got "
                f"{'nothing' if step.after is None else protocol.describe(step.after).text}")
    return None


def _texts(protocol: TraceProtocol, ids: Sequence[int]) -> str:
    return " ".join(protocol.describe(i).text if 0 <= i < protocol.vocab_size else str(i)
                    for i in ids)


# ---- figures --------------------------------------------------------------------------------

def model_size(schedule) -> dict[str, int]:
    """The shape the schedule builds and its parameter count (instantiated on the meta
    device: no memory), so a caller can decide before building whether it fits."""
    from transformers import Qwen3_5ForCausalLM

    from qwengpu.backend_torch.model import make_config

    target, protocol = schedule.target, schedule.plan.protocol
    config = make_config(target.num_layers, target.hidden_size, target.intermediate_size,
                         target.layer_types, protocol.vocab_size,
                         linear_num_key_heads=target.linear_heads,
                         linear_num_value_heads=target.linear_heads,
                         linear_key_head_dim=target.key_head_dim,
                         linear_value_head_dim=target.value_head_dim,
                         num_attention_heads=target.attention_heads,
                         num_key_value_heads=target.kv_heads, head_dim=target.head_dim)
    with torch.device("meta"):
        model = Qwen3_5ForCausalLM(config)
    parameters = sum(math.prod(t.shape) for t in model.parameters())
    return {"hidden": target.hidden_size, "intermediate": target.intermediate_size,
            "deltanet_heads": target.linear_heads, "layers": target.num_layers,
            "vocab": protocol.vocab_size, "parameters": parameters,
            "fp32_bytes": 4 * parameters, "bf16_bytes": 2 * parameters,
            "peak_live_dims": schedule.peak_live_dims}
