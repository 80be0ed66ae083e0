#!/usr/bin/env python3
"""Regenerate every examples/**/expected.json from the example's independent model.

Each example folder holds kernel.cu, kernel.ptx, launch.json, model.py and expected.json.
model.py is a plain-Python, per-thread reading of kernel.cu (helpers in _int32.py); it never
uses the project's code, so the expectations are independent of the PTX loader and of the
machine.  For each example:

- `model.EXPECT_ERROR` set      -> {"error": EXPECT_ERROR}  (the launch must be refused)
- the model raises AddressFault -> {"trap": "address"}      (the machine must trap)
- otherwise                     -> {"buffers": {name: [int32, ...]}} in launch order.

`model.MACHINE`, where set, is the `-P` parameters of the machine an example is written for
(`machine_params`: a reduced one, or one with more instruction slots); the tests run it there
as well as on the default machine, where `model.DEFAULT_MACHINE_ERROR`, if set, is the error
the default machine refuses it with (`default_machine_error`).

    python examples/make_expected.py           # rewrite the expected.json files
    python examples/make_expected.py --check   # exit 1 if any is missing or stale
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from _int32 import AddressFault  # noqa: E402


def example_dirs(root: Path = HERE) -> list[Path]:
    """Every folder under examples/ with a launch.json, sorted (unseen/ ones included)."""
    return sorted(p.parent for p in root.rglob("launch.json"))


def load_model(example: Path):
    name = "examples_model_" + "_".join(example.relative_to(HERE).parts)
    spec = importlib.util.spec_from_file_location(name, example / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def machine_params(example: Path) -> dict[str, int] | None:
    """The example's `model.MACHINE` (the -P parameters of its reduced machine), or None."""
    return getattr(load_model(example), "MACHINE", None)


def default_machine_error(example: Path) -> str | None:
    """The error the default machine refuses an example with that needs its `MACHINE`."""
    return getattr(load_model(example), "DEFAULT_MACHINE_ERROR", None)


def compute_expected(example: Path) -> dict:
    launch = json.loads((example / "launch.json").read_text())
    module = load_model(example)
    error = getattr(module, "EXPECT_ERROR", None)
    try:
        result = module.model(launch)
    except AddressFault:
        if error:
            raise
        return {"trap": "address"}
    if error:
        return {"error": error}
    buffers = result["buffers"]
    if list(buffers) != list(launch["buffers"]):
        raise AssertionError(f"{example}: model returned buffers {list(buffers)}")
    return {"buffers": buffers}


def render(expected: dict) -> str:
    """JSON with one buffer per line, so diffs stay readable."""
    if "buffers" not in expected:
        return json.dumps(expected) + "\n"
    lines = ['{', '  "buffers": {']
    items = list(expected["buffers"].items())
    for i, (name, words) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"    {json.dumps(name)}: {json.dumps(words)}{comma}")
    lines += ["  }", "}"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if an expected.json is missing or stale")
    args = parser.parse_args(argv)
    stale = []
    for example in example_dirs():
        text = render(compute_expected(example))
        target = example / "expected.json"
        current = target.read_text() if target.exists() else None
        rel = example.relative_to(HERE)
        if current == text:
            continue
        if args.check:
            stale.append(str(rel))
        else:
            target.write_text(text)
            print(f"wrote {rel}/expected.json")
    if stale:
        print("stale expected.json: " + ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
