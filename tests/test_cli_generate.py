"""`hdlc compile` then `hdlc generate`: a compiled machine runs itself under stock transformers
and every record agrees with the reference interpreter (the command's `--check`)."""

import json

import pytest

from qwengpu.cli import main


@pytest.fixture(scope="module")
def counter_model(tmp_path_factory):
    directory = tmp_path_factory.mktemp("counter")
    assert main(["compile", "specs/counter.hdl", "--target", "min", "-o", str(directory)]) == 0
    return directory


def test_generate_from_reset_matches_the_interpreter(counter_model, capsys):
    capsys.readouterr()
    assert main(["generate", "specs/counter.hdl", "--model", str(counter_model), "--check",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [record["count"] for record in result["records"]] == list(range(11))
    assert result["tokens"] == 12                      # one byte a record, then <eos>


def test_generate_from_a_given_state(counter_model, tmp_path, capsys):
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"count": [8]}))
    capsys.readouterr()
    assert main(["generate", "specs/counter.hdl", "--model", str(counter_model), "--state",
                 str(state), "--check", "--json"]) == 0
    assert [r["count"] for r in json.loads(capsys.readouterr().out)["records"]] == [8, 9, 10]


def test_generate_rejects_an_unknown_state_element(counter_model, tmp_path, capsys):
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"nothing": [1]}))
    assert main(["generate", "specs/counter.hdl", "--model", str(counter_model), "--state",
                 str(state)]) == 1
    assert "no state element 'nothing'" in capsys.readouterr().err
