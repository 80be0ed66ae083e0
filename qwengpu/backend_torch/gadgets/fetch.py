"""The program store: 128 instruction slots in three Gated DeltaNet heads, fetched by PC.

The launch prompt writes the program; generation reads it.  The store keeps each instruction
*decoded into one-hot fields*, the form the decode stage needs (a register field is directly
half of a register-file address, the opcode directly selects ALU results):

| head | value groups (dims) | written by the prompt tokens |
|---|---|---|
| `ctl` | `op` (31), `bimm` (2), `pn` (2), `d`, `a`, `b`, `c` (16 each): 99 | `@:PC o:OP.BIMM.PN da:D.A bc:B.C` |
| `lo` | `pg` (8), `imm` digits 0..3 (64): 72 | `@:PC pg:PG ib:BYTE0 ib1:BYTE1` |
| `hi` | `imm` digits 4..7 (64) | `@:PC ib:BYTE2 ib3:BYTE3` |

Each head is written at the last token of its group (`bc`, `ib1`, `ib3`): the conv window
reaches back to the `@` token for the key (the slot) and to the data tokens for the value, so
no earlier layer is involved and the whole store sits in one layer.  All payload tokens put
their nibbles in the two shared input groups `tok.n0` / `tok.n1` (a byte: low / high digit; a
pair of register fields: first / second; a PC: low / high digit), so the prompt vocabulary
costs few residual dims.  A slot never written reads the all-zero instruction (`invalid`:
trap 1), from the init tokens.  A slot's first write may skip a `hi` group whose two
bytes are 0 (`program_prompt` does).

The fetch port is the replica's query: the PC, one-hot (128) or as a (high 3 bits, low 4
bits) pair of groups.  Three heads, no MLP units; the outputs are the fields above, written
into groups of the same sizes (`FetchedFields`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from qwengpu.backend_torch.gadgets.memory import Memory, MixerCost, SlotAddress, address, \
    pair_address, when
from qwengpu.backend_torch.gadgets.tokens import Field, TokenInterface, TokenKind, \
    hex_field, onehot_field
from qwengpu.backend_torch.residual import Group, ResidualLayout, Word
from qwengpu.isa import PROG_WORDS, Instruction, Op

N0, N1 = "n0", "n1"                   # the shared nibble groups of payload tokens
OPCODES = len(Op)


def op_label(value: int) -> str:
    return Op(value).name.lower().replace("_", ".")


def _nibbles(name: str, first: str, second: str) -> TokenKind:
    return TokenKind(name, (onehot_field(first, 16, N0), onehot_field(second, 16, N1)))


def _byte(name: str) -> TokenKind:
    return TokenKind(name, (hex_field("byte", 2, (N0, N1)),))


PROGRAM_KINDS = (
    TokenKind("@", (Field("pc", PROG_WORDS, (N0, N1)),)),
    TokenKind("o", (onehot_field("op", OPCODES, label=op_label), onehot_field("bimm", 2),
                    onehot_field("pn", 2))),
    _nibbles("da", "d", "a"),
    _nibbles("bc", "b", "c"),
    TokenKind("pg", (onehot_field("pg", 8, N0),)),
    _byte("ib"),
    _byte("ib1"),
    _byte("ib3"),
)


def instruction_tokens(vocab, slot: int, item: int | Instruction, *, skip_zero_hi: bool = False
                       ) -> list[int]:
    """Token ids that write one instruction (a word or an `Instruction`) into `slot`.

    `skip_zero_hi` leaves out the `hi` group when the immediate's high half is 0: right only
    for a slot that still holds its init value."""
    ins = item if isinstance(item, Instruction) else Instruction.decode(item)
    imm = ins.imm & 0xFFFF_FFFF
    byte = [(imm >> (8 * i)) & 0xFF for i in range(4)]
    ids = [vocab.id("@", slot), vocab.id("o", int(ins.op), int(ins.bimm), int(ins.pn)),
           vocab.id("da", ins.d, ins.a), vocab.id("bc", ins.b, ins.c),
           vocab.id("@", slot), vocab.id("pg", ins.pg), vocab.id("ib", byte[0]),
           vocab.id("ib1", byte[1])]
    if byte[2] or byte[3] or not skip_zero_hi:
        ids += [vocab.id("@", slot), vocab.id("ib", byte[2]), vocab.id("ib3", byte[3])]
    return ids


def program_prompt(vocab, program: Sequence[int | Instruction], *, skip_zero_hi: bool = True
                   ) -> list[int]:
    """Token ids that write `program` into fresh slots 0, 1, ... (the rest read 0)."""
    if len(program) > PROG_WORDS:
        from qwengpu.errors import CapacityError
        raise CapacityError(f"program of {len(program)} instructions; {PROG_WORDS} slots")
    return [token for slot, item in enumerate(program)
            for token in instruction_tokens(vocab, slot, item, skip_zero_hi=skip_zero_hi)]


@dataclass(frozen=True)
class FetchedFields:
    """The groups a fetch writes: the instruction's fields, one-hot."""

    op: Group
    bimm: Group
    pn: Group
    d: Group
    a: Group
    b: Group
    c: Group
    pg: Group
    imm: Word

    @classmethod
    def alloc(cls, layout: ResidualLayout, prefix: str = "fetch") -> "FetchedFields":
        sizes = {"op": OPCODES, "bimm": 2, "pn": 2, "d": 16, "a": 16, "b": 16, "c": 16, "pg": 8}
        groups = {name: layout.alloc(f"{prefix}.{name}", size) for name, size in sizes.items()}
        return cls(imm=layout.alloc_word(f"{prefix}.imm"), **groups)

    def per_head(self) -> list[list]:
        digits = self.imm.digits
        return [[self.op, self.bimm, self.pn, self.d, self.a, self.b, self.c],
                [self.pg, *digits[:4]], list(digits[4:])]

    def expected(self, word: int) -> dict[Group | Word, int]:
        ins = Instruction.decode(word)
        return {self.op: int(ins.op), self.bimm: int(ins.bimm), self.pn: int(ins.pn),
                self.d: ins.d, self.a: ins.a, self.b: ins.b, self.c: ins.c, self.pg: ins.pg,
                self.imm: ins.imm}


def _view(group: Group, size: int) -> Group:
    """The first `size` entries of a one-hot group (valid where the value is below `size`)."""
    return Group(f"{group.name}[:{size}]", group.start, size, group.scale, group.kind)


class ProgramStore:
    """Three memories (`ctl`, `lo`, `hi`) written by the program prompt (see module doc)."""

    heads = 3

    def __init__(self, tokens: TokenInterface, init: Group):
        n0, n1 = tokens.group(N0), tokens.group(N1)
        kind = tokens.kind_group
        index = tokens.vocab.kind_index
        op, bimm, pn = tokens.group("op"), tokens.group("bimm"), tokens.group("pn")
        pc_at = lambda tap: pair_address(_view(n1, PROG_WORDS // 16), n0, taps=(tap, tap))
        self.memories = [
            Memory("prog.ctl", pc_at(3),
                   [(op, 2), (bimm, 2), (pn, 2), (n0, 1), (n1, 1), (n0, 0), (n1, 0)],
                   [when(kind, index["bc"])], init),
            Memory("prog.lo", pc_at(3),
                   [(_view(n0, 8), 2), (n0, 1), (n1, 1), (n0, 0), (n1, 0)],
                   [when(kind, index["ib1"])], init),
            Memory("prog.hi", pc_at(2), [(n0, 1), (n1, 1), (n0, 0), (n1, 0)],
                   [when(kind, index["ib3"])], init),
        ]

    def install(self, model, layer: int, heads: Sequence[int], rms: float, pc: SlotAddress,
                fields: FetchedFields) -> MixerCost:
        """Put the store and its fetch port (query `pc`) into three value heads of `layer`."""
        if len(heads) != self.heads:
            raise ValueError(f"the program store needs {self.heads} heads")
        for memory, head, outputs in zip(self.memories, heads, fields.per_head()):
            memory.install(model, layer, [head], rms, pc, outputs)
        return self.cost()

    def cost(self) -> MixerCost:
        dims = sum(sum(m.output_shape()) for m in self.memories)
        return MixerCost("program_store", "linear_attention", self.heads, dims)


def pc_address(pc: Group | tuple[Group, Group]) -> SlotAddress:
    """The fetch query: a one-hot PC of 128, or a (high 3 bits, low 4 bits) pair."""
    if isinstance(pc, Group):
        return address(pc)
    high, low = pc
    return pair_address(_view(high, PROG_WORDS // 16), low)

