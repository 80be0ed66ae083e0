"""`hdlc splice --check-base BASE`: whether a base can be spliced, in seconds, writing nothing.

On a min-shape test base (the reduced machine, `compile_helpers.REDUCED`): a base the tests
splice is reported spliceable with the figures the splice then reports; an isotropic base (its
embedding as `Qwen3_5ForCausalLM(config)` initialises one: no shared direction) is refused,
exit 1, with how many text tokens stand on the wrong side and the proof; a folder that is not
a checkpoint and a mixed-up command line are clear errors; nothing is written anywhere.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from bases import MIN_SHAPE, make_base  # noqa: E402
from compile_helpers import REDUCED_FLAGS  # noqa: E402
from qwengpu.cli import main  # noqa: E402



@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("bases")
    return {"shared": make_base(folder / "shared", MIN_SHAPE),
            "isotropic": make_base(folder / "isotropic", MIN_SHAPE, shared=0.0)}


def check(base, capsys, *extra):
    """`hdlc splice --check-base BASE` with the reduced machine: (exit status, out, err);
    the base's folder is as it was."""
    before = sorted(path.name for path in Path(base).parent.rglob("*"))
    capsys.readouterr()
    code = main(["splice", "--check-base", str(base), *REDUCED_FLAGS, *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    assert sorted(path.name for path in Path(base).parent.rglob("*")) == before
    return code, out, err


def test_a_base_that_can_be_spliced(bases, capsys):
    code, out, err = check(bases["shared"], capsys)
    assert code == 0, err
    assert "(text form, untied embeddings, 4 layers, hidden 2112, float32)" in out
    assert "residual: the machine uses 2048 of 2112 dims; 64 are left for the text gate" in out
    assert "machine tokens at ids" in out
    assert "text gate: margin " in out and "no text token on the wrong side" in out
    assert out.rstrip().endswith("result: can be spliced (hdlc splice --base BASE -o OUT_DIR)")


def test_an_isotropic_base_is_refused_with_the_reason(bases, capsys):
    code, out, err = check(bases["isotropic"], capsys)
    assert code == 1
    assert out.rstrip().endswith("result: cannot be spliced")
    assert f"error: {bases['isotropic']}: cannot be spliced: the base's text embeddings " \
           "cannot be gated off: on the 64 residual dims the machine leaves free no " \
           "hyperplane has all" in err
    assert "on the wrong side of the best found" in err and "convex combination" in err
    assert "fewer lanes" not in err                  # the reduced machine has one lane


def test_a_refusal_names_a_machine_of_fewer_lanes_where_there_is_one():
    from types import SimpleNamespace

    from qwengpu.splice.check_base import fewer_lanes_hint

    hint = fewer_lanes_hint(SimpleNamespace(params={"LANES": 4, "WARPS": 8}))
    assert "try -P LANES=2" in hint and "Gate dims from the machine's size" in hint
    assert "try -P LANES=1" in fewer_lanes_hint(SimpleNamespace(params={"LANES": 2}))
    assert fewer_lanes_hint(SimpleNamespace(params={"LANES": 1})) == ""
    assert fewer_lanes_hint(SimpleNamespace(params={})) == ""       # a spec without lanes


def test_a_folder_that_is_not_a_checkpoint(tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not a model\n")
    code, _, err = check(tmp_path / "notes", capsys)
    assert code == 1 and f"error: {tmp_path / 'notes'}: no config.json, not a checkpoint" in err


def test_check_base_with_an_output_is_refused(bases, tmp_path, capsys):
    code, _, err = check(bases["shared"], capsys, "-o", str(tmp_path / "out"))
    assert code == 1 and "--check-base writes nothing: give it without --base and -o" in err
    assert not (tmp_path / "out").exists()


def test_splice_without_a_base(capsys):
    capsys.readouterr()
    assert main(["splice", "-o", "somewhere"]) == 1
    assert "splice needs --base BASE_DIR and -o OUT_DIR" in capsys.readouterr().err
