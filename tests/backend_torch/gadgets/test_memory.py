"""Gated DeltaNet memories on stock transformers: long random write/read sequences, exact reads.

Every test token is its own vocabulary entry whose embedding holds that token's inputs (write
enable, write address, value, read addresses), so the sequence runs through the model as plain
token ids, in one forward (chunked prefill, chunks of 64) and token by token with the cache
(recurrent decode).  The expected reads come from a Python dict of slots, not from the model.
"""

import random
from types import SimpleNamespace

import pytest
import torch

from qwengpu.backend_torch.gadgets.memory import INIT_WINDOW, Memory, address, fixed_address, \
    latch, pair_address, when
from qwengpu.backend_torch.model import FULL, LINEAR, decode_logits, prefill_logits
from qwengpu.backend_torch.residual import BINARY, ResidualLayout, decode_many, \
    decode_word_many, deviation


def residuals(model, count, layers=(0,)):
    """Per path, the residual after each decoder layer in `layers`, `[count, hidden]` each."""
    ids = torch.arange(count)
    out = {}
    for path, run in (("prefill", prefill_logits), ("decode", decode_logits)):
        states = run(model, ids, hidden_states=True).hidden_states
        out[path] = [states[layer + 1][0] for layer in layers]
    return out


def at_layer(streams, index):
    return {path: per_layer[index] for path, per_layer in streams.items()}


def check_reads(streams, word, expected, dtype_name, bounds, skip=0):
    """Every read exact in every path, within `bounds`; returns (worst deviation, least
    margin)."""
    expected = torch.tensor(expected)[skip:]
    worst, least = 0.0, float("inf")
    for path, stream in streams.items():
        stream = stream[skip:]
        values, margins = decode_word_many(word, stream)
        wrong = (values != expected).nonzero().flatten()
        assert not len(wrong), (f"{path} {dtype_name} {word.name}: {len(wrong)} wrong reads, "
                                f"first at token {wrong[0].item() + skip}")
        worst = max(worst, deviation(word, stream, expected).max().item())
        least = min(least, margins.min().item())
    assert worst <= bounds["max_deviation"], f"{word.name}: deviation {worst:.3g}"
    assert least >= bounds["min_margin"], f"{word.name}: margin {least:.3g}"
    return worst, least


def test_register_file_random_long(mixer, dtype_name):
    """A (warp, register) register file with two read ports, a second memory in the same
    layer and a replica in the next layer: 600 random tokens, ~300 writes, every read exact."""
    rnd = random.Random(1234)
    layout = ResidualLayout(960)
    init, write = layout.alloc_bit("init"), layout.alloc_bit("we")
    warp, reg = layout.alloc("w.warp", 8), layout.alloc("w.reg", 16)
    value = layout.alloc_word("w.value")
    reads = [(layout.alloc(f"r{i}.warp", 8), layout.alloc(f"r{i}.reg", 16)) for i in range(3)]
    mem_write, mem_addr = layout.alloc_bit("m.we"), layout.alloc("m.addr", 128)
    mem_read_hi, mem_read_lo = layout.alloc("m.raddr_hi", 8), layout.alloc("m.raddr_lo", 16)
    live = list(layout.groups.values())
    outs = [layout.alloc_word(f"out{i}") for i in range(4)]

    regs = Memory("regs", pair_address(warp, reg), [value], [when(write, 1)], init)
    # Global memory: 126 words written at a one-hot word address (128 dims) and read at an
    # address held as (high 3 bits, low 4 bits): the same slots, two encodings.
    memory = Memory("mem", address(mem_addr), [value], [when(mem_write, 1)], init)

    cases, expected = [], [[], [], [], []]
    slots, words = [0] * 128, [0] * 128
    for position in range(INIT_WINDOW + 600):
        if position < INIT_WINDOW:
            case = {init: 1, write: 0, warp: 0, reg: 0, value: 0, mem_write: 0, mem_addr: 0,
                    mem_read_hi: 0, mem_read_lo: 0}
            case.update({g: 0 for pair in reads for g in pair})
        else:
            case = {init: 0, write: int(rnd.random() < 0.5), warp: rnd.randrange(8),
                    reg: rnd.randrange(16), value: rnd.getrandbits(32),
                    mem_write: int(rnd.random() < 0.3), mem_addr: rnd.randrange(126)}
            mem_read = rnd.randrange(126)
            case[mem_read_hi], case[mem_read_lo] = divmod(mem_read, 16)
            for read_warp, read_reg in reads:
                same = rnd.random() < 0.3          # read the slot written by this token
                case[read_warp] = case[warp] if same else rnd.randrange(8)
                case[read_reg] = case[reg] if same else rnd.randrange(16)
            if rnd.random() < 0.2:
                case[mem_read_hi], case[mem_read_lo] = divmod(case[mem_addr], 16)
        if case[write]:
            slots[case[warp] * 16 + case[reg]] = case[value]
        if case[mem_write]:
            words[case[mem_addr]] = case[value]
        for index, (read_warp, read_reg) in enumerate(reads):
            expected[index].append(slots[case[read_warp] * 16 + case[read_reg]])
        expected[3].append(words[case[mem_read_hi] * 16 + case[mem_read_lo]])
        cases.append(case)

    dtype = mixer.DTYPES[dtype_name]
    model = mixer.model(layout, [LINEAR, LINEAR, FULL], dtype, cases, heads=4)
    rms = layout.rms(live)
    regs.install(model, 0, [0], rms, pair_address(*reads[0]), [outs[0]])
    regs.install(model, 0, [2], rms, pair_address(*reads[1]), [outs[1]])
    memory.install(model, 0, [3], rms, pair_address(mem_read_hi, mem_read_lo), [outs[3]])
    # The replica in layer 1 sees layer 0's outputs in the residual: a larger rms.
    regs.install(model, 1, [1], layout.rms(live + outs[:2] + outs[3:]), pair_address(*reads[2]),
                 [outs[2]])
    streams = residuals(model, len(cases), layers=(0, 1))
    figures = {}
    for index, word in enumerate(outs):
        figures[word.name] = check_reads(at_layer(streams, int(index == 2)), word,
                                         expected[index], dtype_name, mixer.BOUNDS[dtype_name])
    writes = sum(case[write] for case in cases)
    assert writes > 250
    print(f"\nregister file {dtype_name}: {writes} writes, (deviation, margin) {figures}")


def test_write_then_read_same_token(mixer, dtype_name):
    """A token that writes slot s and reads s sees its own write; the old value is gone."""
    layout = ResidualLayout(320)
    init, write = layout.alloc_bit("init"), layout.alloc_bit("we")
    addr, value, read = layout.alloc("addr", 16), layout.alloc_word("value"), \
        layout.alloc("read", 16)
    live = list(layout.groups.values())
    out = layout.alloc_word("out")
    memory = Memory("m", address(addr), [value], [when(write, 1)], init)
    launch = {init: 1, write: 0, addr: 0, value: 0, read: 0}
    sequence = [launch] * INIT_WINDOW + [
        {init: 0, write: 1, addr: 5, value: 0xDEADBEEF, read: 5},
        {init: 0, write: 0, addr: 5, value: 0x12345678, read: 5},     # no write: old value
        {init: 0, write: 1, addr: 5, value: 0x0BADF00D, read: 5},     # overwrite, same token
        {init: 0, write: 1, addr: 6, value: 0x11111111, read: 5},
        {init: 0, write: 0, addr: 0, value: 0, read: 7},              # never written: init 0
    ]
    expected = [0] * INIT_WINDOW + [0xDEADBEEF, 0xDEADBEEF, 0x0BADF00D, 0x0BADF00D, 0]
    model = mixer.model(layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], sequence, heads=4)
    memory.install(model, 0, [1], layout.rms(live), address(read), [out])
    check_reads(at_layer(residuals(model, len(sequence)), 0), out, expected, dtype_name,
                mixer.BOUNDS[dtype_name])



def test_init_reaches_every_slot_of_a_binary_address(mixer, dtype_name):
    """The init token writes 0 into every slot whatever its binary address and write
    condition hold (a binary form falls below 0 by up to its bits, not by 1 as a one-hot
    one): slots far from the init token's address and a condition that mismatches in every
    bit still read 0 afterwards, so a prompt may leave them out (docs/state.md)."""
    layout = ResidualLayout(320)
    init = layout.alloc_bit("init")
    mode, addr = layout.alloc("mode", 3, kind=BINARY), layout.alloc("addr", 3, kind=BINARY)
    value, read = layout.alloc_word("value"), layout.alloc("read", 16)
    live = list(layout.groups.values())
    out = layout.alloc_word("out")
    memory = Memory("m", address(addr), [value], [when(mode, 5)], init)
    # on the init tokens the condition mode == 5 (0b101) is false in all 3 bits (mode 0b010)
    launch = {init: 1, mode: 2, addr: 0, value: 0x5A5A5A5A, read: 0}
    sequence = [launch] * INIT_WINDOW + [
        {init: 0, mode: 5, addr: 7, value: 0xDEADBEEF, read: 7},      # far from address 0
        {init: 0, mode: 2, addr: 3, value: 0x12345678, read: 7},      # condition false
        {init: 0, mode: 4, addr: 3, value: 0x12345678, read: 3},      # false in one bit
    ] + [{init: 0, mode: 0, addr: 0, value: 0, read: slot} for slot in range(7)]
    expected = [0x5A5A5A5A] * INIT_WINDOW + [0xDEADBEEF, 0xDEADBEEF, 0x5A5A5A5A] + \
        [0x5A5A5A5A] * 7
    model = mixer.model(layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], sequence, heads=4)
    memory.install(model, 0, [1], layout.rms(live), address(read), [out])
    check_reads(at_layer(residuals(model, len(sequence)), 0), out, expected, dtype_name,
                mixer.BOUNDS[dtype_name])

def test_latch_and_taps(mixer, dtype_name):
    """A latch keeps the latest value written by tokens of one kind; a memory whose value is
    gathered from the three previous tokens (conv taps) and whose key is 3 tokens back."""
    rnd = random.Random(7)
    layout = ResidualLayout(320)
    init, kind = layout.alloc_bit("init"), layout.alloc("kind", 3)
    nibble, slot = layout.alloc("nibble", 16), layout.alloc("slot", 16)
    read = layout.alloc("read", 16)
    live = list(layout.groups.values())
    latched = layout.alloc("latched", 16)
    gathered = [layout.alloc(f"gathered{i}", 16) for i in range(4)]
    # kind 1 tokens set the latch; kind 2 tokens end a 4-token write group `slot n n n`.
    hold = latch("hold", [nibble], [when(kind, 1)], init)
    group_write = Memory("taps", address(slot, tap=3),
                         [(nibble, 3), (nibble, 2), (nibble, 1), (nibble, 0)],
                         [when(kind, 2)], init)
    launch = {init: 1, kind: 0, nibble: 0, slot: 0, read: 0}
    sequence = [launch] * INIT_WINDOW
    for _ in range(150):
        if rnd.random() < 0.3:
            head = rnd.randrange(16)
            for index in range(4):
                sequence.append({init: 0, kind: 2 if index == 3 else 0, nibble: rnd.randrange(16),
                                 slot: head if index == 0 else rnd.randrange(16),
                                 read: rnd.randrange(16)})
        else:
            sequence.append({init: 0, kind: rnd.choice([0, 1]), nibble: rnd.randrange(16),
                             slot: rnd.randrange(16), read: rnd.randrange(16)})
    want_latch, want_slots = [], []
    current, table = 0, [[0] * 4 for _ in range(16)]
    for position, case in enumerate(sequence):
        if case[kind] == 1:
            current = case[nibble]
        if case[kind] == 2:
            window = sequence[position - 3:position + 1]
            table[window[0][slot]] = [token[nibble] for token in window]
        want_latch.append(current)
        want_slots.append(table[case[read]])
    model = mixer.model(layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], sequence, heads=4)
    rms = layout.rms(live)
    hold.install(model, 0, [0], rms, fixed_address(), [latched])
    group_write.install(model, 0, [1], rms, address(read), gathered)
    streams = at_layer(residuals(model, len(sequence)), 0)
    for path, stream in streams.items():
        got, margin = decode_many(latched, stream)
        assert got.tolist() == want_latch, path
        assert margin.min() >= mixer.BOUNDS[dtype_name]["min_margin"]
        # The value channels read taps 1..3: valid once the init window is complete.
        for index, group in enumerate(gathered):
            got, margin = decode_many(group, stream[INIT_WINDOW - 1:])
            assert got.tolist() == [row[index] for row in want_slots[INIT_WINDOW - 1:]], path
            assert margin.min() >= mixer.BOUNDS[dtype_name]["min_margin"]


def test_heads_are_claimed_once(mixer):
    layout = ResidualLayout(320)
    init, write, addr = layout.alloc_bit("init"), layout.alloc_bit("we"), layout.alloc("a", 16)
    value = layout.alloc_word("v")
    out, other = layout.alloc_word("out"), layout.alloc("other", 16)
    memory = Memory("m", address(addr), [value], [when(write, 1)], init)
    model = mixer.model(layout, [LINEAR, FULL], torch.float32, [{}], heads=4)
    memory.install(model, 0, [0], 1.0, address(addr), [out])
    with pytest.raises(ValueError, match="already in use"):
        memory.install(model, 0, [0], 1.0, address(addr), [out])
    with pytest.raises(ValueError, match="do not match"):
        memory.install(model, 0, [1], 1.0, address(addr), [other])
    with pytest.raises(ValueError, match="not a linear_attention layer"):
        memory.install(model, 1, [1], 1.0, address(addr), [out])


def test_costs():
    layout = ResidualLayout(512)
    init, write = layout.alloc_bit("init"), layout.alloc_bit("we")
    warp, reg, value = layout.alloc("warp", 8), layout.alloc("reg", 16), layout.alloc_word("v")
    regs = Memory("regs", pair_address(warp, reg), [value], [when(write, 1)], init)
    assert regs.heads == 1
    cost = regs.cost(reads=3)
    assert (cost.heads, cost.dims_written, cost.mlp_units) == (3, 384, 0)
    wide = Memory("wide", address(reg), [value, layout.alloc_word("v2")], [when(write, 1)])
    assert wide.heads == 2


def register_file_bench(rnd, count, random_inputs):
    """A (warp, register) file of 128 slots with one write and one read port.  `count` tokens
    follow the init window, each with the inputs `random_inputs(rnd, bench)` draws (a dict
    over `bench.write`, `.warp`, `.reg`, `.value`, `.read_warp`, `.read_reg`); `bench.expected`
    holds the reads a Python list of slots gives, `bench.install(model)` the memory."""
    layout = ResidualLayout(384)
    bench = SimpleNamespace(layout=layout, init=layout.alloc_bit("init"),
                            write=layout.alloc_bit("we"), warp=layout.alloc("warp", 8),
                            reg=layout.alloc("reg", 16), value=layout.alloc_word("v"),
                            read_warp=layout.alloc("rwarp", 8), read_reg=layout.alloc("rreg", 16))
    live = list(layout.groups.values())
    bench.out = layout.alloc_word("out")
    inputs = (bench.init, bench.write, bench.warp, bench.reg, bench.value, bench.read_warp,
              bench.read_reg)
    bench.cases = [{group: int(group is bench.init) for group in inputs}] * INIT_WINDOW
    slots, bench.expected = [0] * 128, [0] * INIT_WINDOW
    for _ in range(count):
        case = {bench.init: 0, **random_inputs(rnd, bench)}
        if case[bench.write]:
            slots[case[bench.warp] * 16 + case[bench.reg]] = case[bench.value]
        bench.expected.append(slots[case[bench.read_warp] * 16 + case[bench.read_reg]])
        bench.cases.append(case)
    memory = Memory("regs", pair_address(bench.warp, bench.reg), [bench.value],
                    [when(bench.write, 1)], bench.init)
    bench.install = lambda model: memory.install(
        model, 0, [0], layout.rms(live), pair_address(bench.read_warp, bench.read_reg),
        [bench.out])
    return bench


def test_noisy_inputs(mixer, dtype_name):
    """Inputs off their ideal one-hot values by up to 0.1 (hot and cold entries alike, as an
    upstream gadget may leave them): slot selection and write enable stay exact; the value
    read back carries the written deviation times about gain / (gain - offset)."""
    noise = 0.1
    bench = register_file_bench(random.Random(21), 300, lambda rnd, b: {
        b.write: rnd.randrange(2), b.warp: rnd.randrange(8), b.reg: rnd.randrange(16),
        b.value: rnd.getrandbits(32), b.read_warp: rnd.randrange(8),
        b.read_reg: rnd.randrange(16)})
    out, cases = bench.out, bench.cases
    model = mixer.model(bench.layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], cases, heads=4)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        weight = model.model.embed_tokens.weight
        inputs = slice(1, out.digits[0].start)       # every input group, not ONE
        jitter = (torch.rand(weight[:, inputs].shape, generator=generator) * 2 - 1) * noise
        jitter[:INIT_WINDOW] = 0                        # the init tokens come from the embedding
        weight[:, inputs] += jitter.to(weight.dtype)
    bench.install(model)
    want = torch.tensor(bench.expected)
    for path, stream in at_layer(residuals(model, len(cases)), 0).items():
        got, margin = decode_word_many(out, stream)
        assert torch.equal(got, want), f"{path}: {(got != want).sum().item()} wrong reads"
        worst = deviation(out, stream, want).max().item()
        assert worst <= 2.5 * noise, f"{path}: deviation {worst:.3g}"
        print(f"\nnoisy inputs {dtype_name} {path}: in {noise}, out {worst:.3g}, "
              f"margin {margin.min().item():.3g}")


@pytest.mark.slow
@pytest.mark.parametrize("hot_slots", [128, 2])
def test_long_sequences_do_not_drift(mixer, dtype_name, hot_slots):
    """4000 tokens (63 prefill chunks), ~2000 writes spread over all slots or hammering two
    (many equal keys inside each chunk's triangular solve): no read goes wrong and the
    deviation at the end is no larger than at the start."""
    def random_inputs(rnd, b):
        slot, read = rnd.randrange(hot_slots), rnd.randrange(min(128, hot_slots + 1))
        return {b.write: rnd.randrange(2), b.warp: slot // 16, b.reg: slot % 16,
                b.value: rnd.getrandbits(32), b.read_warp: read // 16, b.read_reg: read % 16}

    bench = register_file_bench(random.Random(hot_slots), 4000, random_inputs)
    out, cases, expected = bench.out, bench.cases, bench.expected
    model = mixer.model(bench.layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], cases)
    bench.install(model)
    streams = at_layer(residuals(model, len(cases)), 0)
    check_reads(streams, out, expected, dtype_name, mixer.BOUNDS[dtype_name])
    for path, stream in streams.items():
        per_token = deviation(out, stream, torch.tensor(expected))
        early, late = per_token[:500].max().item(), per_token[-500:].max().item()
        assert late <= max(early, 1e-6), f"{path}: deviation grew from {early:.3g} to {late:.3g}"


def test_wide_value_over_grouped_heads(mixer, dtype_name):
    """A 64-bit value in two value heads that share one key head (grouped value heads, as
    when `linear_num_value_heads` is twice `linear_num_key_heads`)."""
    rnd = random.Random(8)
    layout = ResidualLayout(640)
    init, write = layout.alloc_bit("init"), layout.alloc_bit("we")
    addr, read = layout.alloc("addr", 32), layout.alloc("read", 32)
    low, high = layout.alloc_word("low"), layout.alloc_word("high")
    live = list(layout.groups.values())
    out_low, out_high = layout.alloc_word("out_low"), layout.alloc_word("out_high")
    cases = [{init: 1, write: 0, addr: 0, read: 0, low: 0, high: 0}] * INIT_WINDOW
    slots, expected = [0] * 32, [0] * INIT_WINDOW
    for _ in range(200):
        case = {init: 0, write: rnd.randrange(2), addr: rnd.randrange(32), read: rnd.randrange(32),
                low: rnd.getrandbits(32), high: rnd.getrandbits(32)}
        if case[write]:
            slots[case[addr]] = case[high] << 32 | case[low]
        expected.append(slots[case[read]])
        cases.append(case)
    model = mixer.model(layout, [LINEAR, FULL], mixer.DTYPES[dtype_name], cases,
                        value_heads=2)
    wide = Memory("wide", address(addr), [low, high], [when(write, 1)], init)
    assert wide.heads == 2
    wide.install(model, 0, [0, 1], layout.rms(live), address(read), [out_low, out_high])
    streams = at_layer(residuals(model, len(cases)), 0)
    bounds = mixer.BOUNDS[dtype_name]
    check_reads(streams, out_low, [v & 0xFFFF_FFFF for v in expected], dtype_name, bounds)
    check_reads(streams, out_high, [v >> 32 for v in expected], dtype_name, bounds)
