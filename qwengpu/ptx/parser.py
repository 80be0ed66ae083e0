"""Parse PTX text into the IR of `qwengpu.ptx.ir`, with a location on every instruction.

The grammar is `ptx.lark` (shipped as package data).  Lark's syntax errors become `PtxError`s
that name the file, line and column and show the offending text; declarations the machine
cannot honour are kept in the IR and rejected later, where the instruction that needs them
can be named.  Nested `{ }` blocks are flattened; registers declared inside a block are
renamed so that two blocks may declare the same name.
"""

from __future__ import annotations

import functools
from importlib import resources

import lark
from lark import Token, Tree

from qwengpu.errors import Location, PtxError
from qwengpu.ptx import ir
from qwengpu.ptx.cuda_lines import CudaLines, readable

# Readable names for the grammar's terminals in "expected ..." messages.
_TERMINAL_NAMES = {
    "SEMICOLON": "';'", "COMMA": "','", "LSQB": "'['", "RSQB": "']'", "LBRACE": "'{'",
    "RBRACE": "'}'", "LPAR": "'('", "RPAR": "')'", "COLON": "':'", "AT": "'@'",
    "REGISTER": "a register", "INTEGER": "an integer", "INT": "an integer",
    "NAME": "a name", "OPCODE": "an instruction", "TYPE": "a type such as .u32",
    "LABEL_DEFINITION": "a label", "STRING": "a string", "ADDRESS_SIGN": "'+'",
    "VERSION_NUMBER": "a version number", "FLOAT_BITS": "a float literal",
    "LESSTHAN": "'<'", "MORETHAN": "'>'", "EQUAL": "'='", "VBAR": "'|'", "BANG": "'!'",
    "NOT": "'!'", "STATE_SPACE": "a state space such as .global", "LINKAGE": "'.visible'",
}


@functools.cache
def _parser() -> lark.Lark:
    grammar = resources.files("qwengpu.ptx").joinpath("ptx.lark").read_text(encoding="utf-8")
    # cache=True keeps the built LALR tables in the temp directory, keyed by the grammar.
    return lark.Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True,
                     maybe_placeholders=False, cache=True)


def parse_ptx(text: str, path: str = "<ptx>", compiled_from: str | None = None) -> ir.Module:
    """Parse a whole PTX module.  Raises `PtxError` for text that is not PTX we understand.
    `compiled_from` is the `.cu` file nvcc made the text of (then `path` names no file).

    nvcc indents with tabs; they are expanded (tab stops of 8) before parsing, so that columns
    are the ones an editor shows and an error's caret lands under the offending text."""
    text = text.expandtabs(8)
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as error:
        raise _syntax_error(error, text, path) from None
    return _ModuleBuilder(text, path, compiled_from).build(tree)


def parse_ptx_file(path: str) -> ir.Module:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError) as error:
        raise PtxError(f"cannot read PTX file: {error}", Location(path)) from None
    return parse_ptx(text, path)


def _syntax_error(error: lark.exceptions.UnexpectedInput, text: str, path: str) -> PtxError:
    line = getattr(error, "line", 0) or 0
    column = getattr(error, "column", 0) or 0
    at_end = isinstance(error, lark.exceptions.UnexpectedEOF) or (
        isinstance(error, lark.exceptions.UnexpectedToken) and error.token.type == "$END")
    if at_end:
        lines = text.splitlines() or [""]
        line, column = len(lines), len(lines[-1]) + 1
        message = "unexpected end of file"
    elif isinstance(error, lark.exceptions.UnexpectedToken):
        message = f"unexpected {str(error.token)!r}"
    else:
        found_char = text[error.pos_in_stream] if 0 <= error.pos_in_stream < len(text) else ""
        end = error.pos_in_stream
        while end < len(text) and not text[end].isspace() and text[end] not in ",;[]{}()":
            end += 1
        shown = text[error.pos_in_stream:end] or found_char
        message = f"unexpected {shown!r}"
    allowed = set(getattr(error, "expected", None) or getattr(error, "allowed", None) or ())
    expected = sorted({_TERMINAL_NAMES.get(name, name.lower().strip('_')) for name in allowed})
    if "OPCODE" in allowed and not at_end:
        message += "; expected an instruction, a label, a declaration or '}'"
    elif expected and len(expected) <= 8:
        message += "; expected " + ", ".join(expected)
    return PtxError(message, Location(path, line, column), text)


def parse_integer(text: str) -> int:
    """The value of a PTX integer literal: decimal, hex, octal or binary, optional `U` suffix."""
    body = text[:-1] if text.endswith(("U", "u")) else text
    negative = body.startswith("-")
    if negative:
        body = body[1:]
    if body[:2] in ("0x", "0X"):
        value = int(body[2:], 16)
    elif body[:2] in ("0b", "0B"):
        value = int(body[2:], 2)
    elif len(body) > 1 and body.startswith("0"):
        value = int(body[1:], 8)
    else:
        value = int(body)
    return -value if negative else value


class _ModuleBuilder:
    """Walks the Lark tree of one module and builds the IR."""

    def __init__(self, text: str, path: str, compiled_from: str | None = None):
        self.text = text
        self.path = path
        self.lines = text.splitlines()
        self.cuda_lines = CudaLines(text, path, compiled_from)
        self.module = ir.Module(path=path, source=text, compiled_from=compiled_from,
                                cuda_lines=self.cuda_lines)
        self.block_counter = 0
        self.registers: dict[str, str] = {}   # the kernel being built: its registers

    def loc(self, item) -> Location:
        if isinstance(item, Token):
            return Location(self.path, item.line or 0, item.column or 0)
        meta = item.meta
        if getattr(meta, "empty", True):
            return Location(self.path)
        return Location(self.path, meta.line, meta.column)

    def source_text(self, tree: Tree) -> str:
        meta = tree.meta
        return " ".join(self.text[meta.start_pos:meta.end_pos].split())

    def error(self, message: str, item) -> PtxError:
        return PtxError(message, self.loc(item), self.text)

    # ---- module level -----------------------------------------------------------------------

    def build(self, tree: Tree) -> ir.Module:
        for item in tree.children:
            kind = item.data
            if kind == "version":
                self.module.version = str(item.children[0])
            elif kind == "target":
                self.module.target = ",".join(str(child) for child in item.children)
            elif kind == "address_size":
                size = int(item.children[0])
                if size not in (32, 64):
                    raise self.error(f".address_size must be 32 or 64, not {size}", item)
                self.module.address_size = size
            elif kind == "file_directive":
                self.module.files[int(item.children[0])] = str(item.children[1])[1:-1]
            elif kind == "variable":
                variable = self.variable(item)
                self.module.variables[variable.name] = variable
            elif kind in ("entry", "function"):
                kernel = self.kernel(item, is_function=(kind == "function"))
                if kernel is None:
                    continue
                table = self.module.functions if kernel.is_function else self.module.kernels
                if kernel.name in table:
                    raise self.error(f"{readable(kernel.name)!r} is defined twice", item)
                table[kernel.name] = kernel
            # sections carry debug data only
        return self.module

    def kernel(self, tree: Tree, is_function: bool) -> ir.Kernel | None:
        name_token = next(child for child in tree.children
                          if isinstance(child, Token) and child.type == "NAME")
        params = [self.param(child) for child in tree.children
                  if isinstance(child, Tree) and child.data in ("param", "register_param")]
        returns = [self.param(child) for part in tree.children
                   if isinstance(part, Tree) and part.data == "return_params"
                   for child in part.children if isinstance(child, Tree)]
        body = next((child for child in tree.children
                     if isinstance(child, Tree) and child.data == "body"), None)
        if body is None:
            return None  # a declaration only
        seen = set()
        for param in params + returns:
            if param.name in seen:
                raise PtxError(f"parameter {param.name!r} is declared twice", param.loc, self.text)
            seen.add(param.name)
        kernel = ir.Kernel(name=str(name_token), params=params, registers={}, body=[],
                           variables={}, loc=self.loc(name_token), is_function=is_function,
                           returns=returns)
        self.registers = kernel.registers     # bare register names resolve against these
        for param in params + returns:        # a `.func`'s `.reg` parameters are registers
            if param.space == "reg":
                kernel.registers[param.name] = param.type
        self.body(body, kernel, renames={}, depth=0)
        return kernel

    def param(self, tree: Tree) -> ir.Param:
        type_name = name = None
        align = None
        length = None
        for child in tree.children:
            if isinstance(child, Token) and child.type == "TYPE":
                type_name = str(child)[1:]
            elif isinstance(child, Token) and child.type == "NAME":
                name = child
            elif isinstance(child, Tree) and child.data == "align":
                align = int(child.children[1])
            elif isinstance(child, Tree) and child.data == "array_dims":
                length = self.array_length(child)
        return ir.Param(name=str(name), type=type_name, loc=self.loc(name), array_length=length,
                        align=align, space="reg" if tree.data == "register_param" else "param")

    def array_length(self, tree: Tree) -> int:
        length = 1
        dims = [int(child) for child in tree.children if isinstance(child, Token)]
        if not dims:
            return 0  # `name[]`: an extern array of unknown size
        for dim in dims:
            length *= dim
        return length

    def variable(self, tree: Tree) -> ir.Variable:
        state_space = type_name = name = None
        align = length = initializer = None
        extern = False
        for child in tree.children:
            if isinstance(child, Token) and child.type == "STATE_SPACE":
                state_space = str(child)[1:]
            elif isinstance(child, Token) and child.type == "TYPE":
                type_name = str(child)[1:]
            elif isinstance(child, Token) and child.type == "NAME":
                name = child
            elif isinstance(child, Tree) and child.data == "linkage":
                extern = extern or str(child.children[0]) == ".extern"
            elif isinstance(child, Tree) and child.data == "align":
                align = int(child.children[1])
            elif isinstance(child, Tree) and child.data == "array_dims":
                length = self.array_length(child)
            elif isinstance(child, Tree) and child.data == "initializer":
                initializer = tuple(self.initializer(child))
        return ir.Variable(state_space=state_space, name=str(name), type=type_name,
                           loc=self.loc(name), array_length=length, initializer=initializer,
                           align=align, extern=extern)

    def initializer(self, tree) -> list:
        """Flatten `{1, {2, 3}}` into a list of ints; symbols stay as `ir.Symbol`."""
        values = []
        for child in tree.children:
            if isinstance(child, Tree) and child.data == "initializer":
                values.extend(self.initializer(child))
            elif isinstance(child, Tree) and child.data == "signed_integer":
                values.append(parse_integer(str(child.children[0])))
            elif isinstance(child, Tree) and child.data == "generic_address":
                values.append(ir.Symbol(str(child.children[0]), self.loc(child)))
            elif isinstance(child, Token):
                values.append(ir.Symbol(str(child), self.loc(child)))
        return values

    # ---- kernel bodies ----------------------------------------------------------------------

    def body(self, tree: Tree, kernel: ir.Kernel, renames: dict[str, str], depth: int):
        """Append the statements of a `{ }` block to the kernel, flattening nested blocks."""
        renames = dict(renames)
        nested = depth > 0
        for child in tree.children:
            kind = child.data
            if kind == "register_decl":
                self.register_decl(child, kernel, renames, scoped=nested)
            elif kind == "variable":
                variable = self.variable(child)
                kernel.variables[variable.name] = variable
            elif kind == "param":
                param = self.param(child)
                declared = param.name
                if nested and param.name in kernel.variables:  # each call's own `param0`
                    declared = f"{param.name}${self.block_counter}"
                    renames[param.name] = declared
                kernel.variables[declared] = ir.Variable("param", declared, param.type,
                                                         param.loc, param.array_length,
                                                         align=param.align)
            elif kind == "label":
                token = child.children[0]
                kernel.body.append(ir.Label(str(token).rstrip(" \t:"), self.loc(token)))
            elif kind == "instruction":
                kernel.body.append(self.instruction(child, renames))
            elif kind == "body":
                self.block_counter += 1
                self.body(child, kernel, renames, depth + 1)
            # pragmas change nothing on this machine; `.loc` lines are read by `CudaLines`

    def register_decl(self, tree: Tree, kernel: ir.Kernel, renames: dict[str, str], scoped: bool):
        if tree.children[0].type == "VECTOR_KIND":
            raise self.error(f"vector registers ({tree.children[0]}) are not supported; declare "
                             "a register per element (vector loads and stores take "
                             "`{%r1, %r2, ...}`)", tree.children[0])
        type_name = str(tree.children[0])[1:]
        for item in tree.children[1:]:
            base = str(item.children[0])
            names = [base]
            if len(item.children) > 1:
                count = int(item.children[1])
                names = [f"{base}{index}" for index in range(count)]
            for name in names:
                declared = name
                if scoped and name in kernel.registers:
                    declared = f"{name}${self.block_counter}"
                    renames[name] = declared
                elif name in kernel.registers:
                    raise self.error(f"register {name} is declared twice", item)
                kernel.registers[declared] = type_name

    def instruction(self, tree: Tree, renames: dict[str, str]) -> ir.Instruction:
        guard = None
        index = 0
        if isinstance(tree.children[0], Tree) and tree.children[0].data == "guard":
            guard_tree = tree.children[0]
            negated = len(guard_tree.children) == 2
            register = guard_tree.children[-1]
            guard = ir.Guard(renames.get(str(register), str(register)), negated,
                             self.loc(register))
            index = 1
        opcode_token = tree.children[index]
        parts = str(opcode_token).split(".")
        operands = tuple(self.operand(child, renames) for child in tree.children[index + 1:])
        loc = self.loc(opcode_token)
        return ir.Instruction(opcode=parts[0], modifiers=tuple(parts[1:]), operands=operands,
                              guard=guard, loc=loc, text=self.source_text(tree),
                              cuda_loc=self.cuda_lines.at(loc.line))

    def operand(self, tree, renames: dict[str, str]):
        kind = tree.data
        children = tree.children
        loc = self.loc(tree)
        if kind == "register":
            return ir.Register(renames.get(str(children[0]), str(children[0])), loc)
        if kind == "negated_register":
            return ir.NegatedRegister(renames.get(str(children[1]), str(children[1])), loc)
        if kind == "register_pair":
            return ir.RegisterPair(renames.get(str(children[0]), str(children[0])),
                                   renames.get(str(children[1]), str(children[1])), loc)
        if kind == "immediate":
            text = str(children[0].children[0])
            return ir.Immediate(parse_integer(text), text, loc)
        if kind == "float_bits":
            text = str(children[0])
            return ir.Immediate(int(text[2:], 16), text, loc)
        if kind == "symbol":
            name = renames.get(str(children[0]), str(children[0]))
            if name in self.registers:         # a register declared without `%`
                return ir.Register(name, loc)
            return ir.Symbol(name, loc)
        if kind == "memory":
            address = children[0]
            base = self.operand(address.children[0], renames)
            offset = 0
            if len(address.children) == 3:
                sign = str(address.children[1])
                offset = parse_integer(str(address.children[2].children[0]))
                if sign == "-":
                    offset = -offset
            return ir.Memory(base, offset, loc)
        if kind == "vector":
            elements = tuple(None if child.data == "sink" or child.children == ["_"]
                             else self.operand(child, renames) for child in children)
            return ir.Vector(elements, loc)
        if kind == "sink":
            return None
        if kind == "operand_list":
            return ir.OperandList(tuple(self.operand(child, renames) for child in children), loc)
        raise AssertionError(f"unknown operand kind {kind}")
