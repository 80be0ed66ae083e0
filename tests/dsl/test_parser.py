"""The parser: every construct reaches the typed syntax tree with its source location."""

from __future__ import annotations

import pytest

from qwengpu.dsl import ast
from qwengpu.dsl.parser import parse, parse_file, parse_number
from qwengpu.errors import HdlError

SOURCE = """\
machine demo;
param N = 4;            // how many
const HALF = N / 2;
type Word = u32;
enum Op : u2 { A, B = 2, C }
memory table[N][2] : Word;   // a table
register count : u(HALF + 1) = 1;
fn twice(x : Word) : Word = x + x;
stage s {
    let y : Word = match count { 0 | 1 => 5, -1 => 6, _ => 7 };
    out z[0] = {y[7:0], y[31:8]} >>> 2;
    for i in 0..N { table[i][1] <= ~y when !(count == 1); }
    emit count, twice = twice(y);
    stop when count[0] ? Op.A : table[0][0] != 0;
    assert N > 1, "N too small";
}
"""


def test_every_declaration_kind_is_parsed():
    spec = parse(SOURCE, "demo.hdl")
    kinds = [type(item).__name__ for item in spec.items]
    assert kinds == ["MachineDecl", "ParamDecl", "ConstDecl", "TypeDecl", "EnumDecl",
                     "MemoryDecl", "RegisterDecl", "FnDecl", "StageDecl"]


def test_locations_and_trailing_comment_docs():
    spec = parse(SOURCE, "demo.hdl")
    param = spec.items[1]
    assert (param.loc.file, param.loc.line, param.loc.column) == ("demo.hdl", 2, 1)
    assert param.doc == "how many"
    assert spec.items[5].doc == "a table"
    assert spec.items[2].doc is None
    stage = spec.items[8]
    let = stage.body[0]
    assert (let.loc.line, let.loc.column) == (10, 5)
    assert let.value.loc.line == 10


def test_an_expression_spans_its_whole_text():
    """An operator's location is its token (errors point there); its span runs from the
    first character of its left operand to the end of its right one."""
    spec = parse(SOURCE, "demo.hdl")
    lines = SOURCE.splitlines()

    def text(loc):
        first_line, first_column, last_line, end_column = loc.span
        assert first_line == last_line
        return lines[first_line - 1][first_column - 1:end_column - 1]
    stage = spec.items[8]
    shifted = stage.body[1].value
    assert (shifted.loc.line, shifted.loc.column) == (11, 34)       # the `>>>`
    assert text(shifted.loc) == "{y[7:0], y[31:8]} >>> 2"
    condition = stage.body[4].condition
    assert text(condition.loc) == "count[0] ? Op.A : table[0][0] != 0"
    assert text(condition.if_true.loc) == "Op.A"
    assert text(condition.if_false.loc) == "table[0][0] != 0"
    negated = stage.body[2].body[0].enable
    assert text(negated.loc) == "!(count == 1"     # the parentheses are no node of the tree
    assert negated.loc == type(negated.loc)("demo.hdl", 12, 44)    # spans do not compare


def test_expression_structure():
    spec = parse(SOURCE, "demo.hdl")
    stage = spec.items[8]
    match = stage.body[0].value
    assert isinstance(match, ast.Match)
    assert [len(arm.patterns) for arm in match.arms] == [2, 1, 0]
    assert isinstance(match.arms[1].patterns[0], ast.Unary)
    out = stage.body[1]
    assert out.is_out and out.target.name == "z" and len(out.target.indices) == 1
    assert isinstance(out.value, ast.Binary) and out.value.op == ">>>"
    assert isinstance(out.value.left, ast.Concat)
    assert isinstance(out.value.left.parts[0], ast.Slice)
    loop = stage.body[2]
    assert isinstance(loop, ast.For) and isinstance(loop.body[0], ast.Write)
    assert loop.body[0].enable is not None
    emit = stage.body[3]
    assert [f.name for f in emit.fields] == ["count", "twice"]
    assert isinstance(emit.fields[0].value, ast.Name)
    stop = stage.body[4]
    assert isinstance(stop.condition, ast.Ternary)
    assert isinstance(stop.condition.if_true, ast.Member)
    assert stage.body[5].message == "N too small"


def test_precedence_is_c_like():
    spec = parse("stage s { let x = a | b ^ c & d == e < f << g + h * i; }")
    node = spec.items[0].body[0].value
    chain = []
    while isinstance(node, ast.Binary):
        chain.append(node.op)
        node = node.right
    assert chain == ["|", "^", "&", "==", "<", "<<", "+", "*"]


@pytest.mark.parametrize("text, value", [("12", 12), ("0x1F", 31), ("0b101", 5),
                                         ("1_000", 1000), ("0xFFFF_FFFF", 0xFFFF_FFFF),
                                         ("007", 7)])
def test_numbers(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("source, message, line, column", [
    ("param N = 4\nparam M = 5;", "unexpected 'param'; is a ';' missing", 2, 1),
    ("stage s { let x = 1 $ 2; }", "unexpected character '$'", 1, 21),
    ("stage s {", "unexpected end of file", 1, 10),
    ("stage s { let = 4; }", "unexpected '='", 1, 15),
    ("register r : u8;\nstage s { r <= (r + ; }", "unexpected ';'", 2, 21),
])
def test_syntax_errors_are_located(source, message, line, column):
    with pytest.raises(HdlError) as caught:
        parse(source, "bad.hdl")
    error = caught.value
    assert message in error.message
    assert (error.loc.line, error.loc.column) == (line, column)
    assert error.render().splitlines()[0].startswith(f"bad.hdl:{line}:{column}: error: ")


def test_keywords_are_reserved():
    with pytest.raises(HdlError):
        parse("param for = 1;")


def test_missing_file_is_an_hdl_error(tmp_path):
    with pytest.raises(HdlError, match="cannot read spec"):
        parse_file(tmp_path / "nope.hdl")
