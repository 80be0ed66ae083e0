"""The README stays true: every `hdlc` subcommand it names exists, every repository path it
names is there, and its test command is the one `.ci/run` runs."""

import re
from pathlib import Path

from qwengpu.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_every_hdlc_subcommand_in_the_readme_exists():
    parser = build_parser()
    subcommands = next(action for action in parser._actions if action.dest == "command").choices
    named = set(re.findall(r"\bhdlc ([a-z]+)", README))
    assert named and named <= set(subcommands), named - set(subcommands)


def test_every_path_in_the_readme_exists():
    paths = set(re.findall(r"\b((?:examples|specs|docs|tests|bench|qwengpu)/[\w./-]*\w)", README))
    missing = sorted(path for path in paths if not (ROOT / path).exists())
    assert paths and not missing, missing


def test_ci_runs_the_readme_test_command():
    assert "python3 -m pytest\n" in README
    assert "python3 -m pytest" in (ROOT / ".ci" / "run").read_text()
