"""The differential check of the cooperative fuzz: one case through the loader and the
cooperative evaluator.

`check_case` compiles a `CooperativeCase` with the PTX loader, runs it on the reference
interpreter (`run_launch_sim`) and through `cooperative_reference.py`, and returns a
description of the first word that differs (None when every word of every buffer agrees).
A kernel the loader refuses for want of room (registers, slots, memory: a `CapacityError`)
raises `DoesNotFit`; the tests and the soak count it as skipped.  `shrink_case` makes a
failing case small with `fuzz_differential.py`'s delta debugging over instruction lines,
keeping only candidates whose result PTX still defines (the evaluator runs them) and that
still fail; `failure_report` is the message a test shows, with the PTX and the launch JSON.
"""

from __future__ import annotations

import json

from qwengpu.errors import CapacityError, UserError
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx
from qwengpu.runtime.launch import launch_for_program, run_launch_sim

import cooperative_reference
from cooperative_launch import KERNEL, CooperativeCase
from fuzz_differential import Shrinker

WORD = 0xFFFF_FFFF
MAX_RECORDS = 200_000
SHRINK_TRIES = 1500
REGRESSIONS = "tests/fuzz/regressions/cooperative"


class DoesNotFit(Exception):
    """The loader refused the kernel for want of room in the machine (a CapacityError)."""


class LoaderRefused(Exception):
    """The loader refused the kernel otherwise: the generator wrote what it does not take."""


def run_machine(case: CooperativeCase) -> tuple[dict[str, list[int]], str | None]:
    """The buffers after the launch on the reference interpreter, and what went wrong if the
    machine trapped or the loader crashed (a bug, shrunk like a mismatch)."""
    try:
        program = compile_kernel(parse_ptx(case.ptx, "fuzz.ptx"), KERNEL)
        launch = launch_for_program(program, case.grid, case.block, case.buffers, case.args)
        result = run_launch_sim(launch, max_records=MAX_RECORDS)
    except CapacityError as error:
        raise DoesNotFit(str(error)) from error
    except UserError as error:
        raise LoaderRefused(str(error)) from error
    except Exception as error:               # noqa: BLE001 - an internal error of qwengpu
        return {}, f"the loader crashed: {type(error).__name__}: {error}"
    words = {name: [word & WORD for word in result.memory[region.base_word:
                                                          region.base_word + region.words]]
             for name, region in launch.buffers.items()}
    return words, None if result.trap is None else f"the machine trapped: {result.trap.message}"


def run_reference(case: CooperativeCase, reference=None) -> dict[str, list[int]]:
    run = (reference or cooperative_reference).run_ptx
    return run(case.ptx, case.grid, case.block, case.buffers, case.args)


def check_case(case: CooperativeCase, reference=None) -> str | None:
    """None when both sides agree; otherwise what differs.  The evaluator's errors
    (`PtxReferenceError`, `NotDefined`) and `DoesNotFit`/`LoaderRefused` propagate: a
    generated kernel must be defined and accepted.  `reference`: another evaluator module
    (the tests' deliberately wrong ones)."""
    return compare(run_reference(case, reference), *run_machine(case))


def compare(expected: dict[str, list[int]], got: dict[str, list[int]],
            failure: str | None) -> str | None:
    """The first difference between the evaluator's buffers and the machine's run."""
    if failure is not None:
        return failure
    for name, words in expected.items():
        for index, (want, have) in enumerate(zip(words, got[name])):
            if want != have:
                return (f"{name}[{index}] = {have:#010x} on the machine, {want:#010x} by "
                        f"the cooperative evaluator")
    return None


class CooperativeShrinker(Shrinker):
    """fuzz_differential's delta debugging, judged by this check."""

    def __init__(self, case: CooperativeCase, tries: int, reference=None):
        super().__init__(case, tries)
        self.reference = reference

    def accept(self, candidate: CooperativeCase) -> bool:
        self.tries -= 1
        if self.tries < 0 or not self.still_fails(candidate):
            return False
        self.case = candidate
        return True

    def still_fails(self, candidate: CooperativeCase) -> bool:
        try:
            return check_case(candidate, self.reference) is not None
        except (cooperative_reference.PtxReferenceError, DoesNotFit, LoaderRefused):
            return False


def shrink_case(case: CooperativeCase, tries: int = SHRINK_TRIES,
                reference=None) -> CooperativeCase:
    """A smaller case that still fails: fewer threads, fewer lines, immediate operands."""
    shrinker = CooperativeShrinker(case, tries, reference)
    shrinker.fewer_threads()
    while shrinker.tries > 0 and (shrinker.remove_lines() | shrinker.simplify_operands()):
        pass
    shrinker.drop_unused_labels()
    return shrinker.case


def failure_report(case: CooperativeCase, difference: str, reference=None) -> str:
    small = shrink_case(case, reference=reference)
    small_difference = check_case(small, reference) or difference
    launch = json.dumps(small.launch_json(f"coop_{case.seed}.ptx"))
    return (f"seed {case.seed}: {difference}\nshrunk: {small_difference}\n"
            f"save as {REGRESSIONS}/coop_{case.seed}.ptx:\n{small.ptx}\n"
            f"and {REGRESSIONS}/coop_{case.seed}.json:\n{launch}\n")
