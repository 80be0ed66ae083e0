"""The assembly form of an instruction, as the spec writes it on its opcode.

Every member of the spec's `enum Op` carries a string such as `"setp{c:Cmp} pd, ra, B"`:
the mnemonic, then the operands.  This module reads those strings into `Syntax` objects,
and one function, `render`, turns an instruction into text through them; the assembler
(`qwengpu.isa.asm`), the machine listing (`qwengpu.isa.format_instruction`) and the PTX
loader's virtual code (`qwengpu.ptx.vcode`) all print through it, each with a `Renderer` that
says how its kind of operand looks.

Operand words (docs/hdl.md, "The instruction set"):

    rd ra rb rc     a register held in field d, a, b or c
    pd pa pb pc     a predicate held in field d, a, b or c
    B               register b, or an immediate (field bimm says which)
    [ra+imm]        an address: register a plus the immediate
    imm             a number in the immediate
    target          a branch target (a label, or an instruction index) in the immediate
    {field:Enum}    a member of enum Enum kept in field `field`

In the mnemonic, `{field:Enum}` is a suffix naming a member: its string when the spec gives
one (`Space.SHARED = 1 ".shared"`), else `.` and its name in lower case (`.lt`); a value no
member has is written `.enum7` (the enum's name in lower case and the value).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

FIELD_SLOTS = ("d", "a", "b", "c")
_PLACEHOLDER = re.compile(r"\{(\w+):(\w+)\}")


class SyntaxError_(ValueError):
    """An opcode's assembly string that this module cannot read."""


@dataclass(frozen=True)
class Operand:
    """One operand of an assembly form: its kind and the field (or enum) it concerns."""

    kind: str           # "reg", "pred", "B", "address", "imm", "target", "enum"
    field: str = ""     # the instruction field: d a b c for reg/pred, the enum's field
    enum: str = ""      # for "enum": the enum's name

    @property
    def text(self) -> str:
        return {"reg": f"r{self.field}", "pred": f"p{self.field}", "B": "B",
                "address": "[ra+imm]", "imm": "imm", "target": "target",
                "enum": f"{{{self.field}:{self.enum}}}"}[self.kind]


@dataclass(frozen=True)
class Syntax:
    """An opcode's assembly form: a mnemonic template and its operands."""

    text: str
    mnemonic: str                           # with `{field:Enum}` placeholders
    operands: tuple[Operand, ...]

    @property
    def placeholders(self) -> list[tuple[str, str]]:
        """(field, enum) of each suffix in the mnemonic, in order."""
        return _PLACEHOLDER.findall(self.mnemonic)

    @property
    def fields(self) -> set[str]:
        """The instruction fields the form sets."""
        used = {field for field, _enum in self.placeholders}
        for operand in self.operands:
            if operand.kind in ("reg", "pred"):
                used.add(operand.field)
            elif operand.kind == "B":
                used |= {"b", "bimm", "imm"}
            elif operand.kind == "address":
                used |= {"a", "imm"}
            elif operand.kind in ("imm", "target"):
                used.add("imm")
            elif operand.kind == "enum":
                used.add(operand.field)
        return used


def parse_syntax(text: str) -> Syntax:
    """Read an opcode's assembly string; a string that is not one is a `SyntaxError_`."""
    mnemonic, _, rest = text.strip().partition(" ")
    if not re.fullmatch(r"[a-z][\w.]*(\{\w+:\w+\}[\w.]*)*", mnemonic):
        raise SyntaxError_(f"'{mnemonic}' is not a mnemonic (letters, digits, '.' and "
                           "{field:Enum} suffixes)")
    operands = []
    for word in (w.strip() for w in rest.split(",")) if rest.strip() else ():
        operands.append(_operand(word))
    return Syntax(text, mnemonic, tuple(operands))


def _operand(word: str) -> Operand:
    if len(word) == 2 and word[0] in "rp" and word[1] in FIELD_SLOTS:
        return Operand("reg" if word[0] == "r" else "pred", word[1])
    fixed = {"B": "B", "[ra+imm]": "address", "imm": "imm", "target": "target"}
    if word in fixed:
        return Operand(fixed[word])
    match = _PLACEHOLDER.fullmatch(word)
    if match:
        return Operand("enum", match.group(1), match.group(2))
    raise SyntaxError_(f"'{word}' is not an operand (one of rd ra rb rc, pd pa pb pc, B, "
                       "[ra+imm], imm, target, {field:Enum})")


def suffix(enum_name: str, members: dict[str, int], texts: dict[str, str], value: int) -> str:
    """The mnemonic suffix that names `value` of an enum."""
    for name, number in members.items():
        if number == value:
            return texts.get(name, f".{name.lower()}")
    return f".{enum_name.lower()}{value}"


def operand_name(enum_name: str, members: dict[str, int], value: int) -> str:
    """An enum operand's text: the member's name in lower case, or the number."""
    for name, number in members.items():
        if number == value:
            return name.lower()
    return str(value)


class Renderer(Protocol):
    """How one kind of instruction prints its operands (machine code, virtual code)."""

    def field(self, name: str) -> int: ...
    def reg(self, field: str) -> str: ...
    def pred(self, field: str) -> str: ...
    def operand_b(self) -> str: ...
    def address(self) -> str: ...
    def immediate(self) -> str: ...
    def target(self) -> str: ...


def render(syntax: Syntax, renderer: Renderer, enums: dict[str, dict[str, int]],
           enum_texts: dict[str, dict[str, str]]) -> str:
    """An instruction's text, without its guard."""
    def fill(match) -> str:
        field, enum = match.group(1), match.group(2)
        return suffix(enum, enums[enum], enum_texts.get(enum, {}), renderer.field(field))

    name = _PLACEHOLDER.sub(fill, syntax.mnemonic)
    parts = []
    for operand in syntax.operands:
        if operand.kind == "reg":
            parts.append(renderer.reg(operand.field))
        elif operand.kind == "pred":
            parts.append(renderer.pred(operand.field))
        elif operand.kind == "B":
            parts.append(renderer.operand_b())
        elif operand.kind == "address":
            parts.append(renderer.address())
        elif operand.kind == "imm":
            parts.append(renderer.immediate())
        elif operand.kind == "target":
            parts.append(renderer.target())
        else:
            parts.append(operand_name(operand.enum, enums[operand.enum],
                                      renderer.field(operand.field)))
    return name + (" " + ", ".join(parts) if parts else "")
