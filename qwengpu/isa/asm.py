"""QwenGPU assembly: the text form of a program and its launch, read by `hdlc sim`.

One instruction per line, in exactly the syntax `qwengpu.isa.format_instruction` prints (so
its output assembles back to the same `Instruction`), plus labels, comments and directives
that describe the launch:

    .grid 2                 ; blocks (default 1)
    .block 8                ; threads per block (default: one warp, LANES)
    .param 0 16             ; kernel parameter word 0 = 16
    .mem 4 1 -2 0x30        ; global memory words 4, 5, 6 (word addresses)
    loop:                   ; a label, usable as a branch target
        @!p0 add r1, r1, -1 // guard, mnemonic, operands
        ld r2, [r1+8]
        bra loop

The grammar is `asm.lark`; every mistake is an `AsmError` at its line and column.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput

from qwengpu.dsl.parser import parse_number   # numbers are written as in the HDL
from qwengpu.isa import DEFAULT_ISA, LANES, MASK32, PT, PREDS, REGS, RZ, Instruction, Op, Special
from qwengpu.isa.machine import MachineIsa, Opcode
from qwengpu.isa.syntax import Operand, suffix
from qwengpu.errors import Location, UserError, not_text

GRAMMAR_PATH = Path(__file__).with_name("asm.lark")


class AsmError(UserError):
    """A mistake in an assembly program."""


def mnemonic_table(isa: MachineIsa) -> dict[str, tuple[Opcode, dict[str, int]]]:
    """mnemonic -> (opcode, the fields its suffixes fix), every suffix value spelled out
    (`setp.lt`, `setp.cmp12`, `ld.shared`, ...)."""
    table = {}
    for opcode in isa.opcodes.values():
        choices = []
        for field_name, enum in opcode.syntax.placeholders:
            width = isa.fields[field_name].width
            choices.append([(field_name, value, suffix(enum, isa.enums[enum],
                                                       isa.enum_texts.get(enum, {}), value))
                            for value in range(1 << width)])
        for combination in itertools.product(*choices):
            fixed = {field_name: value for field_name, value, _text in combination}
            texts = iter(text for _field, _value, text in combination)
            name = re.sub(r"\{\w+:\w+\}", lambda _match: next(texts), opcode.syntax.mnemonic)
            table[name] = (opcode, fixed)
    return table


MNEMONICS = mnemonic_table(DEFAULT_ISA)
SPECIALS = {special.name.lower(): int(special) for special in Special}
DIRECTIVES = ("grid", "block", "param", "mem", "shared", "local")
# What an enum operand is called in messages.
_ENUM_WORDS = {"Special": "a special register"}


@dataclass
class AsmProgram:
    """An assembled program and the launch its directives describe."""

    file: str
    source: str
    instructions: list[Instruction] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)        # source line of each instruction
    labels: dict[str, int] = field(default_factory=dict)
    grid: int = 1
    block: int = LANES
    params: list[int] = field(default_factory=list)       # words, already modulo 2**32
    memory: list[int] = field(default_factory=list)       # words from address 0 up
    shared_words: int = 0      # shared memory a block has (laid out after the memory image)
    local_words: int = 0       # local memory a thread has (after the blocks' shared memory)


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(GRAMMAR_PATH.read_text(encoding="utf-8"), parser="lalr",
                propagate_positions=True)


class _Assembler:
    def __init__(self, source: str, file: str, isa: MachineIsa = DEFAULT_ISA):
        self.isa = isa
        self.mnemonics = MNEMONICS if isa is DEFAULT_ISA else mnemonic_table(isa)
        self.program = AsmProgram(file, source)
        self.file = file
        self.source = source
        self.label_uses: list[tuple[int, Token]] = []
        self.directive_locs: dict[str, Location] = {}
        self.param_locs: dict[int, Location] = {}
        self.memory_locs: dict[int, Location] = {}

    def error(self, message: str, where) -> AsmError:
        """An `AsmError` at `where`: a token, a tree or a tree's meta."""
        if isinstance(where, Tree):
            where = _start(where)
        loc = Location(self.file, getattr(where, "line", 0) or 0,
                       getattr(where, "column", 0) or 0)
        return AsmError(message, loc, self.source)

    def run(self) -> AsmProgram:
        try:
            tree = _lark().parse(self.source if self.source.endswith("\n")
                                 else self.source + "\n")
        except UnexpectedInput as error:
            raise self._syntax_error(error) from None
        for line in tree.children:
            for item in line.children:
                getattr(self, "_" + item.data)(item)
        for position, token in self.label_uses:
            if str(token) not in self.program.labels:
                raise self.error(f"unknown label '{token}'", token)
            target = self.program.labels[str(token)]
            self.program.instructions[position] = self.program.instructions[position].with_imm(
                target)
        return self.program

    def _syntax_error(self, error: UnexpectedInput) -> AsmError:
        if isinstance(error, UnexpectedCharacters):
            char = self.source[error.pos_in_stream]
            return self.error(f"unexpected character {char!r}", error)
        if isinstance(error, UnexpectedEOF):
            return AsmError("unexpected end of file", Location(self.file), self.source)
        token = error.token
        if token.type == "_NL":
            return self.error("unexpected end of line", token)
        return self.error(f"unexpected {str(token)!r}", token)

    # ---- lines

    def _label(self, tree: Tree) -> None:
        token = tree.children[0]
        name = str(token)
        if name in self.program.labels:
            raise self.error(f"label '{name}' is already defined", token)
        if name.lower() in self.mnemonics or _register_index(name) is not None:
            raise self.error(f"'{name}' cannot be a label (it is a mnemonic or a register)",
                             token)
        self.program.labels[name] = len(self.program.instructions)

    def _directive(self, tree: Tree) -> None:
        name_token, *numbers = tree.children
        name = str(name_token)
        values = [self._number(n) for n in numbers]
        if name not in DIRECTIVES:
            raise self.error(f"unknown directive .{name} (directives: "
                             f"{', '.join('.' + d for d in DIRECTIVES)})", name_token)
        if name in ("shared", "local"):
            self._expect_count(tree, name, values, 1)
            if values[0] < 0:
                raise self.error(f".{name} is a number of words, not {values[0]}", numbers[0])
            setattr(self.program, f"{name}_words", values[0])
        elif name in ("grid", "block"):
            self._expect_count(tree, name, values, 1)
            if name in self.directive_locs:
                raise self.error(f".{name} is already given (at {self.directive_locs[name]})",
                                 tree.meta)
            if values[0] < 1:
                raise self.error(f".{name} must be at least 1, not {values[0]}", numbers[0])
            self.directive_locs[name] = Location(self.file, tree.meta.line, tree.meta.column)
            setattr(self.program, name, values[0])
        elif name == "param":
            self._expect_count(tree, name, values, 2)
            index, value = values
            self._set_words(self.program.params, self.param_locs, index, [value],
                            numbers, "parameter")
        else:
            if len(values) < 2:
                raise self.error(".mem takes a word address and at least one value", tree.meta)
            self._set_words(self.program.memory, self.memory_locs, values[0], values[1:],
                            numbers, "memory word")

    def _expect_count(self, tree: Tree, name: str, values: list[int], count: int) -> None:
        if len(values) != count:
            raise self.error(f".{name} takes {count} number{'s' if count > 1 else ''}, "
                             f"got {len(values)}", tree.meta)

    def _set_words(self, words: list[int], locs: dict[int, Location], start: int,
                   values: list[int], tokens: list[Tree], what: str) -> None:
        if start < 0:
            raise self.error(f"a {what} address cannot be negative", tokens[0])
        for offset, (value, token) in enumerate(zip(values, tokens[1:])):
            address = start + offset
            if address in locs:
                raise self.error(f"{what} {address} is already set (at {locs[address]})", token)
            locs[address] = Location(self.file, token.meta.line, token.meta.column)
            words.extend([0] * (address + 1 - len(words)))
            words[address] = self._word(value, token)

    def _word(self, value: int, where) -> int:
        if not -(1 << 31) <= value <= MASK32:
            raise self.error(f"{value} does not fit in 32 bits", where)
        return value & MASK32

    def _number(self, tree: Tree) -> int:
        sign = 1
        tokens = tree.children
        if len(tokens) == 2:
            sign = -1 if str(tokens[0]) == "-" else 1
        return sign * parse_number(str(tokens[-1]))

    def _instruction(self, tree: Tree) -> None:
        children = list(tree.children)
        guard = children.pop(0) if children and isinstance(children[0], Tree) \
            and children[0].data == "guard" else None
        mnemonic = children.pop(0)
        operands = children[0].children if children else []
        key = str(mnemonic).lower()
        if key not in self.mnemonics:
            raise self.error(f"unknown instruction '{mnemonic}'", mnemonic)
        opcode, fixed = self.mnemonics[key]
        fields: dict[str, int | bool] = dict(fixed)
        if guard is not None:
            *negate, pred = guard.children
            fields["pn"] = bool(negate)
            fields["pg"] = self._pred(pred)
        kinds = opcode.syntax.operands
        if len(operands) != len(kinds):
            where = operands[len(kinds)] if len(operands) > len(kinds) else mnemonic
            raise self.error(f"{key} takes {len(kinds)} operand{'s' if len(kinds) != 1 else ''}"
                             f", got {len(operands)}", _start(where))
        for kind, operand in zip(kinds, operands):
            self._operand(kind, operand, fields)
        op = Op[opcode.name] if self.isa is DEFAULT_ISA else opcode.value
        self.program.instructions.append(Instruction(op=op, **fields))
        self.program.lines.append(mnemonic.line)

    # ---- operands

    def _operand(self, kind: Operand, operand, fields: dict) -> None:
        if kind.kind == "reg":
            fields[kind.field] = self._reg(self._symbol(operand, "a register"))
        elif kind.kind == "pred":
            fields[kind.field] = self._pred(self._symbol(operand, "a predicate"))
        elif kind.kind == "B":
            if isinstance(operand, Tree) and operand.data == "number":
                fields["bimm"] = True
                fields["imm"] = self._word(self._number(operand), _start(operand))
            else:
                fields["b"] = self._reg(self._symbol(operand, "a register or an immediate"))
        elif kind.kind == "address":
            fields["a"], fields["imm"] = self._address(operand)
        elif kind.kind == "target":
            if isinstance(operand, Tree) and operand.data == "number":
                fields["imm"] = self._unsigned(operand, "a branch target")
            else:
                token = self._symbol(operand, "a label or an instruction index")
                self.label_uses.append((len(self.program.instructions), token))
        elif kind.kind == "enum":
            members = {name.lower(): value for name, value in self.isa.enums[kind.enum].items()}
            what = _ENUM_WORDS.get(kind.enum, f"a member of {kind.enum}")
            if isinstance(operand, Tree) and operand.data == "number":
                fields[kind.field] = self._unsigned(operand, what)
            else:
                token = self._symbol(operand, what)
                if str(token).lower() not in members:
                    raise self.error(f"unknown {what.removeprefix('a ')} '{token}' (one of: "
                                     f"{', '.join(members)})", token)
                fields[kind.field] = members[str(token).lower()]
        elif kind.kind == "imm":
            if not (isinstance(operand, Tree) and operand.data == "number"):
                raise self.error("expected a number", _start(operand))
            fields["imm"] = self._unsigned(operand, "a number")
        else:  # pragma: no cover - qwengpu.isa.syntax only makes the kinds above
            raise AssertionError(kind)

    def _symbol(self, operand, expected: str) -> Token:
        if isinstance(operand, Tree) and operand.data == "symbol":
            return operand.children[0]
        raise self.error(f"expected {expected}", _start(operand))

    def _reg(self, token: Token) -> int:
        index = _register_index(str(token))
        if index is None:
            raise self.error(f"expected a register (r0..r{REGS - 1} or rz), got '{token}'",
                             token)
        return index

    def _pred(self, token: Token) -> int:
        name = str(token).lower()
        if name == "pt":
            return PT
        if name.startswith("p") and name[1:].isdigit() and int(name[1:]) < PREDS:
            return int(name[1:])
        raise self.error(f"expected a predicate (p0..p{PREDS - 1} or pt), got '{token}'", token)

    def _unsigned(self, tree: Tree, what: str) -> int:
        value = self._number(tree)
        if not 0 <= value <= MASK32:
            raise self.error(f"{what} must be 0..{MASK32}, not {value}", _start(tree))
        return value

    def _address(self, operand) -> tuple[int, int]:
        if isinstance(operand, Tree) and operand.data == "absolute_address":
            return RZ, self._word(self._number(operand.children[0]), _start(operand))
        if not (isinstance(operand, Tree) and operand.data == "address"):
            raise self.error("expected an address like [r1+4]", _start(operand))
        base, *offset = operand.children
        value = 0
        if offset:
            sign, number = offset
            value = parse_number(str(number)) * (-1 if str(sign) == "-" else 1)
        return self._reg(base), self._word(value, base)


def _register_index(name: str) -> int | None:
    name = name.lower()
    if name == "rz":
        return RZ
    if name.startswith("r") and name[1:].isdigit() and int(name[1:]) < REGS \
            and (name[1:] == "0" or not name[1:].startswith("0")):
        return int(name[1:])
    return None


def _start(item) -> object:
    """Something with .line and .column for an operand (a token or a tree)."""
    if isinstance(item, Token):
        return item
    if isinstance(item, Tree):
        if getattr(item.meta, "line", None):
            return item.meta
        return _start(item.children[0])
    return item


def assemble(source: str, file: str = "<asm>", isa: MachineIsa = DEFAULT_ISA) -> AsmProgram:
    """Assemble program text for a machine's ISA; raises `AsmError` at the first mistake."""
    return _Assembler(source, file, isa).run()


def assemble_file(path: str | Path, isa: MachineIsa = DEFAULT_ISA) -> AsmProgram:
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as error:
        raise AsmError(f"cannot read program: {error.strerror}", Location(str(path))) from None
    except UnicodeDecodeError as error:
        raise AsmError(f"cannot read program: {not_text(error)}", Location(str(path))) from None
    return assemble(source, str(path), isa)
