"""The README stays true: every `hdlc` subcommand it names exists, every repository path it
names is there, its main job is the one the tests run, and its test command is the one
`.ci/run` runs."""

import re
from pathlib import Path

from qwengpu.cli import build_parser
from readme_job import COMPILE, OUTPUT, RUN

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


def test_the_main_job_is_the_one_the_tests_run():
    """The set-up command compiles and runs exactly what tests/engine/test_whole_machine.py
    compiles and runs (tests/readme_job.py)."""
    setup = next(line for line in README.splitlines() if line.startswith("python3 -m pip"))
    steps = [step.strip() for step in setup.split("&&")]
    assert f"hdlc {' '.join(COMPILE)} -o {OUTPUT}" in steps
    run = RUN[:2] + ["--backend", "model", "--model", OUTPUT] + RUN[4:]
    assert f"hdlc {' '.join(run)}" in steps, steps
