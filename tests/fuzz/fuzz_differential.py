"""The differential check of the fuzz tests: one case through the loader and the reference.

`check_case` compiles a `FuzzCase` with the PTX loader, runs it on the reference interpreter
(`run_launch_sim`) and through `ptx_reference.py`, and returns a description of the first
disagreement (None when every word of every buffer agrees).  `shrink_case` makes a failing
case small by delta debugging over its instruction lines, keeping only candidates that are
still valid (the reference runs them without error, the loader accepts them) and still fail;
`failure_report` is the message a test shows, with the PTX and the launch JSON to save under
`tests/fuzz/regressions/`.  Used by `test_ptx_fuzz.py` and `bench/soak_ptx.py`.
"""

from __future__ import annotations

import dataclasses
import json
import re

from qwengpu.errors import UserError
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.geometry import Geometry
from qwengpu.ptx.parser import parse_ptx
from qwengpu.ptx.program import MachineLimits
from qwengpu.ptx.ranges import default_facts
from qwengpu.runtime.launch import launch_for_program, machine_limits, run_launch_sim
from qwengpu.runtime.machine_state import load_machine

import ptx_reference
from ptx_generator import KERNEL, FuzzCase

WORD = 0xFFFF_FFFF
MAX_RECORDS = 200_000               # the generated kernels need a few thousand at most
SHRINK_TRIES = 1500
INSTRUCTION = re.compile(r"^\t(?!\.)(.*);$")
REGISTER_SOURCE = re.compile(r"(?<=, )%[vct]\d+\b")
LABEL = re.compile(r"^([\w$]+):$")


class LoaderRefused(Exception):
    """The loader refused the kernel or the launch (a PtxError, CapacityError, ...)."""


def does_not_fit(refusal: LoaderRefused) -> bool:
    """The refusal says the kernel needs more instruction slots, or (registers spilled to
    local memory) more memory words, than the machine has: a clear error, not a bug."""
    return "instruction slots" in str(refusal) or "(MEM_WORDS)" in str(refusal)


def run_loader(case: FuzzCase) -> tuple[dict[str, list[int]], str | None]:
    """The buffers (unsigned words) after the launch on the reference interpreter, and what
    went wrong if the machine trapped or the loader crashed (a bug: shrunk like a mismatch)."""
    try:
        module = parse_ptx(case.ptx, "fuzz.ptx")
        machine = load_machine(None, dict(case.machine)) if case.machine else None
        limits = machine_limits(machine) if machine else MachineLimits()
        program = compile_kernel(module, KERNEL, limits, facts=shape_facts(module, case))
        launch = launch_for_program(program, case.grid, case.block, case.buffers, case.args,
                                    limits=limits)
        result = run_launch_sim(launch, max_records=MAX_RECORDS, machine=machine)
    except UserError as error:
        raise LoaderRefused(str(error)) from error
    except Exception as error:               # noqa: BLE001 - an internal error of qwengpu
        return {}, f"the loader crashed: {type(error).__name__}: {error}"
    words = {name: [word & WORD for word in result.memory[region.base_word:
                                                          region.base_word + region.words]]
             for name, region in launch.buffers.items()}
    return words, None if result.trap is None else f"the machine trapped: {result.trap.message}"


def shape_facts(module, case: FuzzCase):
    """What the loader compiles a launch of 2 or 3 dimensions for (a launch file's compile
    does the same); None for a 1-D one, which any program runs."""
    if isinstance(case.grid, int) and isinstance(case.block, int):
        return None
    kernel = module.kernels[KERNEL]
    return dataclasses.replace(default_facts(kernel, MachineLimits(), 8),
                               geometry=Geometry.of(ptx_reference.dim3(case.block),
                                                    ptx_reference.dim3(case.grid)))


def run_reference(case: FuzzCase) -> dict[str, list[int]]:
    return ptx_reference.run_ptx(case.ptx, case.grid, case.block, case.buffers, case.args)


def check_case(case: FuzzCase) -> str | None:
    """None when both sides agree; otherwise what differs.  Errors of either side propagate
    (`PtxReferenceError`, `LoaderRefused`): a generated kernel must be valid for both."""
    expected = run_reference(case)
    got, failure = run_loader(case)
    if failure is not None:
        return failure
    for name, words in expected.items():
        for index, (want, have) in enumerate(zip(words, got[name])):
            if want != have:
                return (f"{name}[{index}] = {have:#010x} on the machine, {want:#010x} by "
                        f"the PTX reference")
    return None


def still_fails(case: FuzzCase) -> bool:
    """Valid for both sides, and they disagree."""
    try:
        return check_case(case) is not None
    except (ptx_reference.PtxReferenceError, LoaderRefused):
        return False


def instruction_lines(lines: list[str]) -> list[int]:
    """Indices of the lines of the body that are instructions (not declarations or labels)."""
    return [index for index, line in enumerate(lines) if INSTRUCTION.match(line)]


def with_lines(case: FuzzCase, lines: list[str]) -> FuzzCase:
    return dataclasses.replace(case, ptx="\n".join(lines))


class Shrinker:
    """Delta debugging of one failing case within a budget of candidate runs."""

    def __init__(self, case: FuzzCase, tries: int):
        self.case = case
        self.tries = tries

    def accept(self, candidate: FuzzCase) -> bool:
        self.tries -= 1
        if self.tries < 0 or not still_fails(candidate):
            return False
        self.case = candidate
        return True

    def fewer_threads(self):
        case = self.case
        if not (isinstance(case.grid, int) and isinstance(case.block, int)):
            return                          # a shape of more dimensions stays as it is
        for grid, block in sorted({(1, 1), (1, case.block), (case.grid, 1)}):
            if grid * block < case.grid * case.block and \
                    self.accept(dataclasses.replace(case, grid=grid, block=block)):
                return

    def remove_lines(self) -> bool:
        """Drop chunks of instruction lines, halving the chunk down to single lines."""
        changed = False
        chunk = max(1, len(instruction_lines(self.lines)) // 2)
        while chunk >= 1 and self.tries > 0:
            position, removed = 0, False
            while position < len(instruction_lines(self.lines)) and self.tries > 0:
                chosen = set(instruction_lines(self.lines)[position:position + chunk])
                kept = [line for index, line in enumerate(self.lines) if index not in chosen]
                if self.accept(with_lines(self.case, kept)):
                    removed = changed = True
                else:
                    position += chunk
            if not removed:
                chunk //= 2
        return changed

    def simplify_operands(self) -> bool:
        """Replace register sources of arithmetic lines with the immediates 0 or 1."""
        changed = False
        for index in instruction_lines(self.lines):
            occurrence = 0
            while self.tries > 0:
                line = self.lines[index]
                if "[" in line or " bra " in line:
                    break
                sources = list(REGISTER_SOURCE.finditer(line))
                if occurrence >= len(sources):
                    break
                match = sources[occurrence]
                for immediate in ("0", "1"):
                    candidate = list(self.lines)
                    candidate[index] = line[:match.start()] + immediate + line[match.end():]
                    if self.accept(with_lines(self.case, candidate)):
                        changed = True
                        break
                else:
                    occurrence += 1
        return changed

    @property
    def lines(self) -> list[str]:
        return self.case.ptx.split("\n")

    def drop_unused_labels(self):
        text = self.case.ptx
        kept = [line for line in self.lines if not (LABEL.match(line) and
                text.count(f"bra {LABEL.match(line).group(1)};") == 0)]
        self.case = with_lines(self.case, kept)


def shrink_case(case: FuzzCase, tries: int = SHRINK_TRIES) -> FuzzCase:
    """A smaller case that still fails: fewer threads, fewer lines, immediate operands."""
    shrinker = Shrinker(case, tries)
    shrinker.fewer_threads()
    while shrinker.tries > 0 and (shrinker.remove_lines() | shrinker.simplify_operands()):
        pass
    shrinker.drop_unused_labels()
    return shrinker.case


def failure_report(case: FuzzCase, difference: str) -> str:
    small = shrink_case(case)
    small_difference = check_case(small) or difference
    launch = json.dumps(small.launch_json(f"seed_{case.seed}.ptx"))
    return (f"seed {case.seed}: {difference}\nshrunk: {small_difference}\n"
            f"save as tests/fuzz/regressions/seed_{case.seed}.ptx:\n{small.ptx}\n"
            f"and tests/fuzz/regressions/seed_{case.seed}.json:\n{launch}\n")
