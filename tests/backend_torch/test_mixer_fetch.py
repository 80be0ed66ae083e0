"""The program store: random programs written by prompt tokens, fetched by PC, exactly.

The expected fetch of every token comes from a Python model of the store's documented
semantics (three heads, each replaced by its own write group), fed the same token stream.
"""

import random

import torch

from qwengpu.backend_torch.gadgets.fetch import PROGRAM_KINDS, FetchedFields, ProgramStore, \
    instruction_tokens, pc_address, program_prompt
from qwengpu.backend_torch.gadgets.memory import INIT_WINDOW
from qwengpu.backend_torch.gadgets.tokens import Field, TokenInterface, TokenKind, Vocabulary
from qwengpu.backend_torch.model import FULL, LINEAR, decode_logits, prefill_logits
from qwengpu.backend_torch.residual import ResidualLayout, Word, decode_many, \
    decode_word_many, deviation
from qwengpu.isa import Instruction, Op

# A test-only token kind that asks for a fetch: its PC goes to the query groups q0/q1.
FETCH_KIND = TokenKind("pcq", (Field("pc", 128, ("q0", "q1")),))


def random_instruction(rnd) -> Instruction:
    imm = rnd.getrandbits(32) if rnd.random() < 0.6 else rnd.getrandbits(8)
    return Instruction(op=Op(rnd.randrange(len(Op))), d=rnd.randrange(16), a=rnd.randrange(16),
                       b=rnd.randrange(16), c=rnd.randrange(16), bimm=rnd.random() < 0.5,
                       imm=imm, pg=rnd.randrange(8), pn=rnd.random() < 0.5)


def reference_fetches(vocab, ids) -> list[int]:
    """Per token, the word fetched at its query PC (0 for tokens that are not `pcq`)."""
    ctl, lo, hi = {}, {}, {}
    fetched = []
    for position, token in enumerate(ids):
        kind, values = vocab.tokens[token]
        window = [vocab.tokens[t] for t in ids[max(0, position - 3):position + 1]]
        if kind.name == "bc":
            (_, (slot,)), (_, op_fields), (_, (d, a)) = window[0], window[1], window[2]
            ctl[slot] = Instruction(Op(op_fields[0]), d, a, values[0], values[1],
                                    bool(op_fields[1]), 0, 0, bool(op_fields[2])).encode()
        elif kind.name == "ib1":
            (_, (slot,)), (_, (pg,)), (_, (byte0,)) = window[0], window[1], window[2]
            lo[slot] = (pg << 23) | ((byte0 | values[0] << 8) << 32)
        elif kind.name == "ib3":
            (_, (slot,)), (_, (byte2,)) = window[1], window[2]
            hi[slot] = (byte2 << 16 | values[0] << 24) << 32
        slot = values[0] if kind.name == "pcq" else 0
        fetched.append(ctl.get(slot, 0) | lo.get(slot, 0) | hi.get(slot, 0))
    return fetched


def test_fetch_random_programs(mixer, dtype_name):
    rnd = random.Random(99)
    vocab = Vocabulary([*PROGRAM_KINDS, FETCH_KIND])
    layout = ResidualLayout(512)
    tokens = TokenInterface(vocab, layout)
    init = tokens.init_bit()
    store = ProgramStore(tokens, init)
    live = list(tokens.live)
    fields = FetchedFields.alloc(layout)

    program = [random_instruction(rnd) for _ in range(48)]
    ids = [vocab.launch_id] * INIT_WINDOW + program_prompt(vocab, program[:24])
    ids += [vocab.id("pcq", rnd.randrange(128)) for _ in range(20)]
    for slot in range(24, 48):       # fetches interleaved with writes, and rewrites
        ids += instruction_tokens(vocab, slot, program[slot])
        ids.append(vocab.id("pcq", rnd.choice([slot, rnd.randrange(128)])))
        if rnd.random() < 0.3:
            again = rnd.randrange(slot)
            ids += instruction_tokens(vocab, again, random_instruction(rnd))
            ids.append(vocab.id("pcq", again))
    ids += [vocab.id("pcq", slot) for slot in rnd.sample(range(128), 128)]
    expected = reference_fetches(vocab, ids)
    assert len(ids) > 500

    model = mixer.model(layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], vocab=len(vocab),
                        heads=4)
    tokens.install_embedding(model)
    query = pc_address((tokens.group("q1"), tokens.group("q0")))
    cost = store.install(model, 0, [0, 1, 3], layout.rms(live), query, fields)
    assert (cost.heads, cost.dims_written, cost.mlp_units) == (3, 235, 0)

    # Keys read the `@` token 3 back: reads are valid once the init window is complete.
    skip = INIT_WINDOW - 1
    targets = {target: torch.tensor([fields.expected(word)[target] for word in expected[skip:]])
               for target in fields.expected(0)}
    worst, least = 0.0, float("inf")
    for path, run in (("prefill", prefill_logits), ("decode", decode_logits)):
        stream = run(model, torch.tensor(ids), hidden_states=True).hidden_states[1][0][skip:]
        for target, want in targets.items():
            read = decode_word_many if isinstance(target, Word) else decode_many
            got, margin = read(target, stream)
            wrong = (got != want).nonzero().flatten()
            assert not len(wrong), f"{path}: {target.name} wrong at {wrong[:5].tolist()}"
            worst = max(worst, deviation(target, stream, want).max().item())
            least = min(least, margin.min().item())
    assert worst <= mixer.BOUNDS[dtype_name]["max_deviation"]
    assert least >= mixer.BOUNDS[dtype_name]["min_margin"]
    print(f"\nfetch {dtype_name}: {len(ids)} tokens, deviation {worst:.3g}, margin {least:.4g}")


def test_program_prompt_shape():
    vocab = Vocabulary([*PROGRAM_KINDS])
    small = Instruction(Op.ADD, d=1, a=2, bimm=True, imm=5)
    large = Instruction(Op.ADD, d=1, a=2, bimm=True, imm=-1)
    assert len(program_prompt(vocab, [small])) == 8
    assert len(program_prompt(vocab, [large])) == 11
    text = " ".join(vocab.texts[i] for i in program_prompt(vocab, [large]))
    assert text == "@:0 o:add.1.0 da:1.2 bc:15.0 @:0 pg:7 ib:ff ib1:ff @:0 ib:ff ib3:ff"
