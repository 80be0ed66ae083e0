"""Known alignment of a kernel's addresses: which 8- and 16-byte accesses need no check.

PTX requires an access to be naturally aligned (an 8-byte `ld.global.u64` or `.v2.u32` at a
multiple of 8, a `.v4.u32` at a multiple of 16, a `.v2.u16` at a multiple of 4), and a GPU
faults on one that is not.  The machine checks word alignment itself (its `ld`/`st` trap on a
byte address that is not a multiple of 4, and the loader keeps an odd 16-bit address odd), so
only accesses wider than that need more: `select_memory._aligned` traps them as misaligned,
unless this analysis proves the address a multiple of the access's size.

It is a forward dataflow over the PTX control-flow graph (`qwengpu.ptx.cfg`) of one number per
register: how many of its low bits are known to be zero.  Sums keep the fewer, products add
them, `shl` by k adds k, `and` keeps the more, `mul.wide.u32 %rd, %r, 8` has three; where paths
meet the fewer is kept, so it settles without widening.  It starts from what every launch
gives: a buffer's address is a multiple of `buffer_alignment` (the launch lays buffers out so,
docs/launch.md), an integer argument's own value when the launch gives it, and a memory
variable's `.align`.  A block no launch reaches needs no check.
"""

from __future__ import annotations

from qwengpu.ptx import cfg, ir
from qwengpu.ptx.geometry import Geometry

_NO_DESTINATION = {"st", "bra", "ret", "exit", "bar", "barrier", "membar", "fence", "trap",
                   "red", "prefetch", "prefetchu", "setp"}
_MACHINE_CHECKED = {1: 1, 2: 2, 4: 4, 8: 4}     # element bytes -> alignment the machine checks


def access_bytes(ins: ir.Instruction) -> tuple[int, int] | None:
    """(bytes the access covers, bytes of one element) of a global `ld`/`st`, else None."""
    if ins.opcode not in ("ld", "st") or ins.has("param", "shared", "local"):
        return None
    types = [modifier for modifier in ins.modifiers if modifier in ir.TYPE_WIDTHS]
    if not types or types[-1] == "pred":
        return None
    element = max(ir.type_width(types[-1]) // 8, 1)
    count = 4 if ins.has("v4") else 2 if ins.has("v2") else 1
    return element * count, element


def needs_alignment_check(ins: ir.Instruction) -> bool:
    """An access wider than the machine's own alignment check covers."""
    sizes = access_bytes(ins)
    return sizes is not None and sizes[0] > _MACHINE_CHECKED.get(sizes[1], 4)


def buffer_alignment(kernel: ir.Kernel) -> int:
    """The alignment (bytes) a launch gives this kernel's buffers: its widest access's, from
    4 (a word) to 16, so that a kernel of word accesses lays memory out as before."""
    widest = max((sizes[0] for ins in kernel.body if isinstance(ins, ir.Instruction)
                  if (sizes := access_bytes(ins)) is not None), default=4)
    return min(max(widest, 4), 16)


def variable_alignment(variable: ir.Variable) -> int:
    """Where a launch places a memory variable: at a multiple of its `.align` (of its
    element's size without one), from 4 to 16 bytes."""
    return min(max(variable.align or variable.element_bytes, 4), 16)


def aligned_accesses(kernel: ir.Kernel, param_alignment: dict[str, int],
                     variable_alignment: dict[str, int],
                     special_constants: dict[str, int] | None = None) -> set[int]:
    """`id()`s of the accesses needing a check (`needs_alignment_check`) whose address is
    proven a multiple of their size.  Alignments are in bytes; a parameter not named may hold
    anything; `special_constants` are the special registers the launch's shape makes
    constants (default: a 1-D launch's, `qwengpu.ptx.geometry.Geometry.constants`)."""
    analysis = _Analysis(kernel, param_alignment, variable_alignment,
                         Geometry().constants(1) if special_constants is None
                         else special_constants)
    proven = set()
    for block, entry in zip(analysis.blocks, analysis.states):
        state = dict(entry) if entry is not None else None
        for ins in block.statements:
            if needs_alignment_check(ins) and (state is None or analysis.aligned(state, ins)):
                proven.add(id(ins))
            if state is not None:
                analysis.step(state, ins)
    return proven


def _zero_bits(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return width if value == 0 else (value & -value).bit_length() - 1


class _Analysis:
    def __init__(self, kernel: ir.Kernel, params: dict[str, int], variables: dict[str, int],
                 special_constants: dict[str, int]):
        self.kernel, self.special_constants = kernel, special_constants
        self.params = {name: _zero_bits(alignment, 64) for name, alignment in params.items()}
        self.variables = {name: _zero_bits(alignment, 64)
                          for name, alignment in variables.items()}
        self.blocks = cfg.blocks(kernel.body)
        self.states: list[dict[str, int] | None] = [None] * len(self.blocks)
        self.states[0] = {}
        work = [0]
        while work:
            index = work.pop()
            state = dict(self.states[index])
            for ins in self.blocks[index].statements:
                self.step(state, ins)
            for successor in self.blocks[index].successors:
                old = self.states[successor]
                new = state if old is None else {name: min(bits, old[name])
                                                 for name, bits in state.items() if name in old}
                if new != old:
                    self.states[successor] = dict(new)
                    if successor not in work:
                        work.append(successor)

    def aligned(self, state: dict[str, int], ins: ir.Instruction) -> bool:
        size = access_bytes(ins)[0]
        memory = next((operand for operand in ins.operands if isinstance(operand, ir.Memory)),
                      None)
        if memory is None:
            return False
        if isinstance(memory.base, ir.Immediate):
            return (memory.base.value + memory.offset) % size == 0
        bits = self.read(state, memory.base, 64)
        return memory.offset % size == 0 and (1 << min(bits, 62)) % size == 0

    def read(self, state: dict[str, int], operand, width: int) -> int:
        if isinstance(operand, ir.Immediate):
            return _zero_bits(operand.value, width)
        if isinstance(operand, ir.Symbol):
            return self.variables.get(operand.name, 0)
        if isinstance(operand, ir.Register):
            if operand.name in self.special_constants:
                return _zero_bits(self.special_constants[operand.name], width)
            return min(state.get(operand.name, 0), width)
        return 0

    def step(self, state: dict[str, int], ins: ir.Instruction):
        if ins.opcode in _NO_DESTINATION or not ins.operands:
            return
        first = ins.operands[0]
        if not isinstance(first, ir.Register):
            for name in _names(first):
                state.pop(name, None)
            return
        bits = self._value(state, ins)
        if ins.guard is not None:
            bits = min(bits, state.get(first.name, 0))
        state[first.name] = bits

    def _value(self, state: dict[str, int], ins: ir.Instruction) -> int:
        types = [modifier for modifier in ins.modifiers if modifier in ir.TYPE_WIDTHS]
        if not types or "cc" in ins.modifiers or ins.opcode in ("addc", "subc", "madc"):
            return 0
        width = ir.type_width(types[-1])
        op, sources = ins.opcode, ins.operands[1:]

        def read(index: int) -> int:
            return self.read(state, sources[index], width) if index < len(sources) else 0

        if op in ("mov", "cvta", "neg", "cvt") and len(sources) == 1:
            return min(read(0), ir.type_width(types[0]))
        if op == "ld" and ins.has("param") and len(sources) == 1:
            memory = sources[0]
            if isinstance(memory, ir.Memory) and isinstance(memory.base, ir.Symbol) \
                    and memory.offset == 0:
                return min(self.params.get(memory.base.name, 0), width)
            return 0
        wide = 2 * width if "wide" in ins.modifiers else width
        if op in ("add", "sub", "or", "xor", "min", "max", "selp") and len(sources) >= 2:
            return min(read(0), read(1))
        if op == "and" and len(sources) == 2:
            return max(read(0), read(1))
        if op == "mul" and "hi" not in ins.modifiers and len(sources) == 2:
            return min(read(0) + read(1), wide)
        if op == "mad" and "hi" not in ins.modifiers and len(sources) == 3:
            return min(read(0) + read(1), self.read(state, sources[2], wide), wide)
        if op == "shl" and len(sources) == 2 and isinstance(sources[1], ir.Immediate):
            return min(read(0) + (sources[1].value & 0xFFFF_FFFF), width)
        return 0


def _names(operand) -> list[str]:
    if isinstance(operand, ir.RegisterPair):
        return [operand.first, operand.second]
    if isinstance(operand, ir.Vector):
        return [element.name for element in operand.elements if isinstance(element, ir.Register)]
    return []
