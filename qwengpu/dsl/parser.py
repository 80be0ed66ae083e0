"""Parse HDL source text into the syntax tree of `qwengpu.dsl.ast`.

The grammar is `hdl.lark` next to this file (LALR, positions propagated).  Lark's own errors
become `HdlError`s that point at the offending character, and a `VisitError` raised while
building the tree is unwrapped, so callers only ever see `HdlError` for bad input.  A comment
at the end of a `param`, `const`, `memory` or `register` line is kept as that declaration's
`doc` (`hdlc check` prints it).
"""

from __future__ import annotations

import dataclasses

from functools import lru_cache
from pathlib import Path

from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, VisitError

from qwengpu.dsl import ast
from qwengpu.errors import HdlError, Location, not_text

GRAMMAR_PATH = Path(__file__).with_name("hdl.lark")

KEYWORDS = frozenset({"machine", "param", "const", "type", "enum", "fn", "memory", "register",
                      "stage", "let", "out", "emit", "stop", "when", "for", "in", "assert",
                      "return", "match"})

# Comments and names seen by the lexer during the current parse.  Lark drops comments, and
# its contextual lexer would let a keyword through as a name where only a name can follow.
_comments: list[Token] = []
_keyword_names: list[Token] = []


def _check_name(token: Token) -> Token:
    if token.value in KEYWORDS:
        _keyword_names.append(token)
    return token


@lru_cache(maxsize=1)
def _lark() -> Lark:
    return Lark(GRAMMAR_PATH.read_text(encoding="utf-8"), parser="lalr",
                propagate_positions=True, maybe_placeholders=False,
                lexer_callbacks={"COMMENT": _comments.append, "NAME": _check_name})


def parse_number(text: str) -> int:
    """An HDL integer literal: decimal, `0x` hex or `0b` binary, `_` allowed between digits."""
    digits = text.replace("_", "")
    prefix = digits[:2].lower()
    if prefix == "0x":
        return int(digits[2:], 16)
    if prefix == "0b":
        return int(digits[2:], 2)
    return int(digits, 10)


def _describe_terminal(name: str) -> str:
    if name == "$END":
        return "end of file"
    try:
        pattern = _lark().get_terminal(name).pattern
    except KeyError:
        return name.lower()
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return {"NAME": "a name", "NUMBER": "a number", "STRING": "a string"}.get(
        name, name.lower().replace("_", " "))


OPERATOR_TERMINALS = {"OR_OP", "XOR_OP", "AND_OP", "EQ_OP", "REL_OP", "SHIFT_OP", "ADD_OP",
                      "MUL_OP", "UNARY_OP"}


def _expected_text(expected) -> str:
    described = {_describe_terminal(name) for name in expected
                 if name not in OPERATOR_TERMINALS}
    if OPERATOR_TERMINALS & set(expected):
        described.add("an operator")
    described = sorted(described)
    if len(described) > 8:
        described = described[:8] + ["..."]
    return ", ".join(described)


def _syntax_error(error: UnexpectedInput, file: str, source: str) -> HdlError:
    at_end = isinstance(error, UnexpectedEOF) or (
        not isinstance(error, UnexpectedCharacters) and error.token.type == "$END")
    if at_end:
        lines = source.splitlines() or [""]
        loc = Location(file, len(lines), len(lines[-1]) + 1)
    else:
        loc = Location(file, getattr(error, "line", 0) or 0, getattr(error, "column", 0) or 0)
    if isinstance(error, UnexpectedCharacters):
        char = source[error.pos_in_stream] if error.pos_in_stream < len(source) else "?"
        message = f"unexpected character {char!r}"
    elif isinstance(error, UnexpectedEOF):
        message = f"unexpected end of file; expected {_expected_text(error.expected)}"
    else:
        shown = "end of file" if at_end else repr(str(error.token))
        if "SEMICOLON" in error.expected:
            message = f"unexpected {shown}; is a ';' missing before it?"
        else:
            message = f"unexpected {shown}; expected {_expected_text(error.expected)}"
    return HdlError(message, loc, source)


class _ToAst(Transformer):
    """Lark tree -> `qwengpu.dsl.ast` nodes (one method per grammar rule)."""

    def __init__(self, file: str, docs: dict[int, str]):
        super().__init__()
        self.file = file
        self.docs = docs

    def _loc(self, meta) -> Location:
        line, column = getattr(meta, "line", 0), getattr(meta, "column", 0)
        end = (getattr(meta, "end_line", 0), getattr(meta, "end_column", 0))
        return Location(self.file, line, column, (line, column, *end) if all(end) else None)

    def _token_loc(self, token: Token) -> Location:
        return Location(self.file, token.line, token.column,
                        (token.line, token.column, token.end_line, token.end_column))

    def _spanning(self, token: Token, first: Location, last: Location) -> Location:
        """`token`'s place (where errors point), spanning from `first` to `last` (the text
        a name is made of where the value has none)."""
        start = first.span[:2] if first.span else (first.line, first.column)
        end = last.span[2:] if last.span else (token.end_line, token.end_column)
        return Location(self.file, token.line, token.column, (*start, *end))

    def _doc(self, meta) -> str | None:
        return self.docs.get(getattr(meta, "end_line", -1))

    # ---- declarations
    @v_args(meta=True)
    def start(self, meta, items):
        return tuple(items)

    @v_args(meta=True)
    def machine_decl(self, meta, children):
        return ast.MachineDecl(str(children[0]), self._loc(meta))

    @v_args(meta=True)
    def param_decl(self, meta, children):
        return ast.ParamDecl(str(children[0]), children[1], self._doc(meta), self._loc(meta))

    @v_args(meta=True)
    def const_decl(self, meta, children):
        return ast.ConstDecl(str(children[0]), children[1], self._doc(meta), self._loc(meta))

    @v_args(meta=True)
    def type_decl(self, meta, children):
        return ast.TypeDecl(str(children[0]), children[1], self._loc(meta))

    @v_args(meta=True)
    def enum_decl(self, meta, children):
        name, type_ref, *members = children
        return ast.EnumDecl(str(name), type_ref, tuple(members), self._loc(meta))

    @v_args(meta=True)
    def enum_member(self, meta, children):
        name, *rest = children
        text = None
        if rest and isinstance(rest[-1], Token) and rest[-1].type == "STRING":
            text = str(rest.pop())[1:-1]
        value = rest[0] if rest else None
        return ast.EnumMember(str(name), value, self._loc(meta), text)

    @v_args(meta=True)
    def fn_decl(self, meta, children):
        name, params, result, body = children
        if isinstance(body, ast.Return):
            body = (body,)
        return ast.FnDecl(str(name), params, result, body, self._loc(meta))

    def fn_params(self, children):
        return tuple(children)

    @v_args(meta=True)
    def fn_param(self, meta, children):
        type_ref = children[1] if len(children) > 1 else None
        return ast.FnParam(str(children[0]), type_ref, self._loc(meta))

    @v_args(meta=True)
    def fn_expr_body(self, meta, children):
        return ast.Return(children[0], children[0].loc)

    @v_args(meta=True)
    def memory_decl(self, meta, children):
        name, dims, type_ref = children
        return ast.MemoryDecl(str(name), dims, type_ref, self._doc(meta), self._loc(meta))

    def dims(self, children):
        return tuple(children)

    @v_args(meta=True)
    def register_decl(self, meta, children):
        reset = children[2] if len(children) > 2 else None
        return ast.RegisterDecl(str(children[0]), children[1], reset, self._doc(meta),
                                self._loc(meta))

    @v_args(meta=True)
    def stage_decl(self, meta, children):
        return ast.StageDecl(str(children[0]), children[1], self._loc(meta))

    @v_args(meta=True)
    def type(self, meta, children):
        width = children[1] if len(children) > 1 else None
        return ast.TypeRef(str(children[0]), width, self._loc(meta))

    # ---- statements
    def block(self, children):
        return tuple(children)

    @v_args(meta=True)
    def target(self, meta, children):
        return ast.Target(str(children[0]), tuple(children[1:]), self._loc(meta))

    def _let(self, meta, children, is_out):
        if len(children) == 3:
            target, type_ref, value = children
        else:
            (target, value), type_ref = children, None
        return ast.Let(target, type_ref, value, is_out, self._loc(meta))

    @v_args(meta=True)
    def let_stmt(self, meta, children):
        return self._let(meta, children, is_out=False)

    @v_args(meta=True)
    def out_stmt(self, meta, children):
        return self._let(meta, children, is_out=True)

    @v_args(meta=True)
    def write_stmt(self, meta, children):
        enable = children[2] if len(children) > 2 else None
        return ast.Write(children[0], children[1], enable, self._loc(meta))

    @v_args(meta=True)
    def emit_stmt(self, meta, children):
        fields = [field for child in children
                  for field in (child if isinstance(child, tuple) else (child,))]
        return ast.Emit(tuple(fields), self._loc(meta))

    @v_args(meta=True)
    def emit_field(self, meta, children):
        name, rest = children[0], list(children[1:])
        when = rest.pop() if rest and isinstance(rest[-1], Token) else None
        value = rest[0] if rest else ast.Name(str(name), self._token_loc(name))
        return ast.EmitField(str(name), value, self._loc(meta), when and str(when),
                             when and self._token_loc(when))

    def emit_pair(self, children):
        """`(a, b)`: two small always-present fields in one token (docs/hdl.md)."""
        first, second = children
        return (first, dataclasses.replace(second, packed=True))

    def emit_when(self, children):
        return children[0]

    @v_args(meta=True)
    def stop_stmt(self, meta, children):
        return ast.Stop(children[0], self._loc(meta))

    @v_args(meta=True)
    def for_stmt(self, meta, children):
        var, start, stop, body = children
        return ast.For(str(var), start, stop, body, self._loc(meta))

    @v_args(meta=True)
    def assert_stmt(self, meta, children):
        message = str(children[1])[1:-1] if len(children) > 1 else None
        return ast.Assert(children[0], message, self._loc(meta))

    @v_args(meta=True)
    def return_stmt(self, meta, children):
        return ast.Return(children[0], self._loc(meta))

    # ---- expressions
    def number(self, children):
        token = children[0]
        return ast.Number(parse_number(str(token)), self._token_loc(token))

    def name(self, children):
        token = children[0]
        return ast.Name(str(token), self._token_loc(token))

    @v_args(meta=True)
    def member(self, meta, children):
        token = children[1]
        return ast.Member(children[0], str(token),
                          self._spanning(token, children[0].loc, self._token_loc(token)))

    @v_args(meta=True)
    def index(self, meta, children):
        return ast.Index(children[0], children[1], self._loc(meta))

    @v_args(meta=True)
    def slice(self, meta, children):
        return ast.Slice(children[0], children[1], children[2], self._loc(meta))

    @v_args(meta=True)
    def call(self, meta, children):
        return ast.Call(str(children[0]), children[1], self._loc(meta))

    def call_args(self, children):
        return tuple(children)

    def unary(self, children):
        op, operand = children
        return ast.Unary(str(op), operand,
                         self._spanning(op, self._token_loc(op), operand.loc))

    def binary(self, children):
        left, op, right = children
        return ast.Binary(str(op), left, right, self._spanning(op, left.loc, right.loc))

    @v_args(meta=True)
    def ternary(self, meta, children):
        return ast.Ternary(children[0], children[1], children[2], self._loc(meta))

    @v_args(meta=True)
    def concat(self, meta, children):
        return ast.Concat(tuple(children), self._loc(meta))

    @v_args(meta=True)
    def match(self, meta, children):
        return ast.Match(children[0], tuple(children[1:]), self._loc(meta))

    @v_args(meta=True)
    def match_arm(self, meta, children):
        *patterns, value = children
        # `_` anywhere among the patterns makes this the default arm (empty patterns).
        patterns = () if None in patterns else tuple(patterns)
        return ast.MatchArm(patterns, value, self._loc(meta))

    def default_pattern(self, children):
        return None


def parse(source: str, file: str = "<spec>") -> ast.Spec:
    """Parse a whole spec; raises `HdlError` at the first syntax error."""
    _comments.clear()
    _keyword_names.clear()
    try:
        tree = _lark().parse(source)
    except UnexpectedInput as error:
        raise _syntax_error(error, file, source) from None
    if _keyword_names:
        token = _keyword_names[0]
        raise HdlError(f"'{token}' is a keyword and cannot be used as a name",
                       Location(file, token.line, token.column), source)
    docs = {}
    for comment in _comments:
        text = str(comment)
        if text.startswith("//"):
            docs[comment.line] = text[2:].strip()
    _comments.clear()
    try:
        items = _ToAst(file, docs).transform(tree)
    except VisitError as error:
        if isinstance(error.orig_exc, HdlError):
            raise error.orig_exc from None
        raise error.orig_exc
    return ast.Spec(file, source, items)


def parse_file(path: str | Path) -> ast.Spec:
    """Read and parse a spec file; a missing file is an `HdlError` too."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as error:
        raise HdlError(f"cannot read spec: {error.strerror}", Location(str(path))) from None
    except UnicodeDecodeError as error:
        raise HdlError(f"cannot read spec: {not_text(error)}", Location(str(path))) from None
    return parse(source, str(path))
