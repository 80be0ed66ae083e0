"""The README's set-up works on a fresh clone, as the README writes it.

The repository is cloned into a temporary folder, a new virtual environment is made, and the
README's first set-up command (install, run a kernel on the interpreter, compile the whole
machine, run the kernel inside the model with `--check`) is run there by bash exactly as the
README spells it: the command is read from README.md, so the two cannot drift.  The README's
second command, the test run, is what `.ci/run` runs on its own clean clone of the repository
(tests/test_readme.py holds the two to one spelling); here it is run on this test's module
in the new environment, which shows the test dependencies the first command installs are
enough.

Slow-marked (a fresh install and a compile of the whole machine: about five minutes on 2
cores): `.ci/run` runs it on every CI run.  The clone holds what is committed, so run it on a
clean working tree.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> tuple[str, str]:
    """The README's two set-up commands: the install-and-run line and the test command."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"^```\n(.*?)^```", text, flags=re.S | re.M)
    setup = next(block.strip() for block in blocks if block.startswith("python3 -m pip"))
    tests = next(block.strip() for block in blocks if block.startswith("python3 -m pytest"))
    return setup, tests


def test_the_readme_commands_are_found():
    setup, tests = readme_commands()
    assert "hdlc compile" in setup and "--check" in setup and "\n" not in setup
    assert tests == "python3 -m pytest"


def _fresh_environment(clone: Path) -> dict[str, str]:
    venv = clone.parent / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {key: value for key, value in os.environ.items()
           if key not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    return env


@pytest.mark.slow
def test_the_readme_setup_on_a_fresh_clone(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    setup, tests = readme_commands()
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env = _fresh_environment(clone)
    done = subprocess.run(["bash", "-c", setup], cwd=clone, env=env, capture_output=True,
                          text=True)
    assert done.returncode == 0, (done.stdout[-4000:], done.stderr[-4000:])
    # the launch ran twice (interpreter, then the model with --check), and both times printed
    # the buffer the kernel's independent model expects (examples/vector_add/expected.json)
    expected = json.loads((ROOT / "examples" / "vector_add" / "expected.json").read_text())
    line = f"c = {expected['buffers']['c']}"
    assert done.stdout.count(line) == 2, done.stdout[-4000:]
    assert (clone / "out" / "qwengpu" / "config.json").is_file()
    checked = subprocess.run(["bash", "-c", f"{tests} tests/test_readme.py -p no:cacheprovider"],
                             cwd=clone, env=env, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout[-4000:]
