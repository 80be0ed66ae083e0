"""The syntax tree's nodes (qwengpu/dsl/ast.py): plain frozen data, every node of a parsed
spec carrying `loc`, and the `Expr`, `Stmt` and `Decl` unions covering exactly the node kinds
the parser puts in expression, statement and declaration positions."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from qwengpu.dsl import ast
from qwengpu.dsl.parser import parse
from qwengpu.errors import Location

# Uses every kind of expression, statement and declaration.
SOURCE = """\
machine demo;
param N = 4;
const HALF = N / 2;
type Word = u32;
enum Op : u2 { A, B = 2 }
memory table[N][2] : Word;
register count : u(HALF + 1) = 1;
fn twice(x : Word, y) : Word { let z = x + y; return z; }
assert N > 1, "N too small";
stage s {
    let v : Word = match count { 0 | 1 => 5, _ => Op.B };
    out w[0] = {v[7:0], v[31:8]} >>> -2;
    for i in 0..N { table[i][1] <= ~v when !(count == 1); }
    emit count, t = twice(v, count ? 1 : 2);
    stop when count[0];
    assert N > 2;
}
"""

EXPRESSIONS = {ast.Number, ast.Name, ast.Member, ast.Index, ast.Slice, ast.Call, ast.Unary,
               ast.Binary, ast.Ternary, ast.Concat, ast.Match}
STATEMENTS = {ast.Let, ast.Write, ast.Emit, ast.Stop, ast.For, ast.Assert, ast.Return}
DECLARATIONS = {ast.MachineDecl, ast.ParamDecl, ast.ConstDecl, ast.TypeDecl, ast.EnumDecl,
                ast.FnDecl, ast.MemoryDecl, ast.RegisterDecl, ast.StageDecl, ast.Assert}
PARTS = {ast.TypeRef, ast.Target, ast.MatchArm, ast.EmitField, ast.EnumMember, ast.FnParam}


def nodes(value):
    """Every syntax-tree node inside `value`, depth first."""
    if isinstance(value, tuple):
        for item in value:
            yield from nodes(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, Location):
        yield value
        for field in dataclasses.fields(value):
            yield from nodes(getattr(value, field.name))


def classes() -> set[type]:
    return {value for value in vars(ast).values()
            if isinstance(value, type) and dataclasses.is_dataclass(value)
            and value.__module__ == ast.__name__}


def test_the_unions_name_the_node_kinds():
    assert set(typing.get_args(ast.Expr)) == EXPRESSIONS
    assert set(typing.get_args(ast.Stmt)) == STATEMENTS
    assert set(typing.get_args(ast.Decl)) == DECLARATIONS
    assert classes() == EXPRESSIONS | STATEMENTS | DECLARATIONS | PARTS | {ast.Spec}


def test_every_node_is_frozen_and_located():
    for cls in classes() - {ast.Spec}:
        assert cls.__dataclass_params__.frozen, cls
        assert "loc" in {field.name for field in dataclasses.fields(cls)}, cls


def test_a_parsed_spec_uses_every_kind_and_locates_every_node():
    spec = parse(SOURCE, "demo.hdl")
    seen = list(nodes(spec.items))
    assert {type(node) for node in seen} == classes() - {ast.Spec}
    for node in seen:
        assert node.loc.file == "demo.hdl" and node.loc.line >= 1 and node.loc.column >= 1
    for item in spec.items:
        assert type(item) in DECLARATIONS
    bodies = [node.body for node in seen if isinstance(node, (ast.StageDecl, ast.FnDecl,
                                                                 ast.For))]
    assert len(bodies) == 3
    assert all(type(statement) in STATEMENTS for body in bodies for statement in body)


def test_nodes_are_values():
    here = Location("t.hdl", 1, 2)
    one = ast.Binary("+", ast.Name("a", here), ast.Number(1, here), here)
    same = ast.Binary("+", ast.Name("a", here), ast.Number(1, here), here)
    assert one == same and hash(one) == hash(same)
    assert one != ast.Binary("-", ast.Name("a", here), ast.Number(1, here), here)
    with pytest.raises(dataclasses.FrozenInstanceError):
        one.op = "-"


def test_a_spec_holds_its_file_and_source():
    spec = ast.Spec("x.hdl", "machine x;")
    assert spec.items == ()
    parsed = parse("machine x;\n", "x.hdl")
    assert (parsed.file, parsed.source) == ("x.hdl", "machine x;\n")
    assert parsed.items == (ast.MachineDecl("x", Location("x.hdl", 1, 1)),)
