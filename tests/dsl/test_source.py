"""`dsl.source.source_text`: the HDL text a location spans, as one line: comments dropped,
white space squeezed, parentheses the span cut off put back, long text cut with an ellipsis;
nothing where there is no span or no readable file."""

from __future__ import annotations

from qwengpu.dsl.parser import parse_file
from qwengpu.dsl.source import ELLIPSIS, source_text
from qwengpu.errors import Location


def test_the_text_of_an_expression(tmp_path):
    spec = tmp_path / "m.hdl"
    spec.write_text("machine m;\nregister count : u8;\nstage s {\n"
                    "    count <= (count + 1) * 3;   // step\n}\n")
    write = parse_file(spec).items[2].body[0]
    assert source_text(write.loc) == "count <= (count + 1) * 3;"
    assert source_text(write.value.loc) == "(count + 1) * 3"
    assert source_text(write.value.left.loc) == "count + 1"


def test_several_lines_become_one(tmp_path):
    spec = tmp_path / "m.hdl"
    spec.write_text("a = match x {   // first\n    0 => b,\n    _ => c\n};\n")
    loc = Location(str(spec), 1, 5, span=(1, 5, 4, 2))
    assert source_text(loc) == "match x { 0 => b, _ => c }"
    assert source_text(loc, limit=12) == "match x { 0" + ELLIPSIS
    assert len(source_text(loc, limit=12)) <= 12


def test_a_cut_parenthesis_is_put_back(tmp_path):
    spec = tmp_path / "m.hdl"
    spec.write_text("x = f((a + b) * c);\n")
    assert source_text(Location(str(spec), 1, 15, span=(1, 8, 1, 18))) == "(a + b) * c"
    assert source_text(Location(str(spec), 1, 10, span=(1, 8, 1, 13))) == "a + b"
    assert source_text(Location(str(spec), 1, 6, span=(1, 6, 1, 13))) == "((a + b))"


def test_no_text_without_a_span_or_a_file(tmp_path):
    assert source_text(None) is None
    assert source_text(Location("nowhere.hdl", 1, 1)) is None
    assert source_text(Location(str(tmp_path / "missing.hdl"), 1, 1, span=(1, 1, 1, 4))) is None
    spec = tmp_path / "m.hdl"
    spec.write_text("x\n")
    assert source_text(Location(str(spec), 9, 1, span=(9, 1, 9, 3))) is None
