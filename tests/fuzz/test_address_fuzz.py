"""Differential fuzzing of the address checks: no address outside memory is read silently.

Each seed gives a kernel whose one address may leave 32 bits, or (a 64-bit load) not be a
multiple of 8 (`address_fuzz.py`), run by the loader and the machine's interpreter and by
`ptx_reference.py`, which faults on every address that is not a word of memory and on every
access not aligned to its size.  Where the reference faults, the machine must trap with the
same kind of trap; where it does not, the buffers must agree.  Measured on 400 seeds: 245
fault (58 of them misaligned), in 200 the analysis proves every access (no check left), and
with the address checks turned off 68 read a wrapped address silently, which the second test
demands, or the first would test nothing.  Each half of the seeds shows all of that (0-199:
119 fault, 31 misaligned, 105 proven, 34 wrap unchecked; 200-399: 126, 27, 95, 34): the
default run takes the first half, the extra tier the second (tests/tiers.py).
`bench/soak_ptx.py --addresses` runs the same check at scale.
"""

from __future__ import annotations

import pytest

from address_fuzz import (MISALIGNED, address_outcomes, describe_disagreement,
                          generate_address_case)
from tiers import by_default

SEEDS = 400
HALVES = by_default([range(0, SEEDS // 2), range(SEEDS // 2, SEEDS)], lambda half: half == 0,
                    ids=["seeds-0-199", "seeds-200-399"])


def _run(tmp_path, seeds: range, check: bool) -> tuple[list[str], int, int, int]:
    """What disagrees, how many launches fault, in how many every access was proven, and
    how many fault as misaligned."""
    wrong, faults, proven, misaligned = [], 0, 0, 0
    for seed in seeds:
        case = generate_address_case(seed)
        expected, got, all_proven = address_outcomes(case, tmp_path, check)
        faults += isinstance(expected, str)
        misaligned += expected == MISALIGNED
        proven += all_proven
        if expected != got:
            wrong.append(describe_disagreement(case, expected, got))
    return wrong, faults, proven, misaligned


@pytest.mark.parametrize("seeds", HALVES)
def test_every_address_outside_memory_traps_and_every_other_reads_the_same(tmp_path, seeds):
    wrong, faults, proven, misaligned = _run(tmp_path, seeds, check=True)
    count = len(seeds)
    assert not wrong, f"{len(wrong)} of {count} disagree; the first:\n{wrong[0]}"
    assert count // 5 <= faults <= 4 * count // 5          # both kinds are well represented
    assert count // 20 <= misaligned <= faults // 2        # and both kinds of fault
    assert proven >= count // 5                            # the analysis is exercised


@pytest.mark.parametrize("seeds", HALVES)
def test_without_the_checks_some_of_the_same_addresses_wrap(tmp_path, seeds):
    wrong, _, _, _ = _run(tmp_path, seeds, check=False)
    assert wrong and all("reference faults" in line for line in wrong), wrong[:1]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_generator_is_deterministic(seed):
    assert generate_address_case(seed) == generate_address_case(seed)
