"""The cube algebra of binary values (`backend_torch/cubes.py`), exhaustively over small code
spaces and on seeded random sets: disjoint cubes partition exactly the accepted values (and
are few for the usual sets), and `affine_in_bits` fits exactly the tables that are affine."""

from __future__ import annotations

import random

import pytest

from qwengpu.backend_torch.cubes import affine_in_bits, disjoint_cubes


def _members(cube: dict[int, int], bits: int) -> set[int]:
    return {code for code in range(1 << bits)
            if all((code >> bit) & 1 == value for bit, value in cube.items())}


@pytest.mark.parametrize("seed", range(40))
def test_disjoint_cubes_partition_the_accepted_values(seed):
    rng = random.Random(seed)
    bits = rng.choice([1, 2, 3, 4, 7])
    domain = set(rng.sample(range(1 << bits), rng.randint(1, 1 << bits)))
    accepted = {v for v in domain if rng.random() < 0.5}
    cubes = disjoint_cubes(accepted, domain, bits)
    covered = [_members(cube, bits) & domain for cube in cubes]
    assert set().union(*covered) == accepted          # every accepted value, nothing else
    assert sum(len(c) for c in covered) == len(accepted)   # each in one cube only


def test_disjoint_cubes_are_few_for_the_usual_sets():
    assert disjoint_cubes({3}, range(16), 4) == [{0: 1, 1: 1, 2: 0, 3: 0}]
    assert disjoint_cubes(range(8, 16), range(16), 4) == [{3: 1}]
    assert disjoint_cubes(range(16), range(16), 4) == [{}]
    assert disjoint_cubes(set(), range(16), 4) == []
    # values 121..127 never occur: "index >= 120" is one cube of 7 bits
    assert len(disjoint_cubes({120}, range(121), 7)) == 1
    assert len(disjoint_cubes(range(1, 16), range(16), 4)) == 4


def test_affine_in_bits():
    assert affine_in_bits([v for v in range(16)], range(16), 4) == (0.0, [1.0, 2.0, 4.0, 8.0])
    assert affine_in_bits([3 * v + 5 for v in range(16)], range(16), 4) == \
        (5.0, [3.0, 6.0, 12.0, 24.0])
    assert affine_in_bits([v % 3 for v in range(16)], range(16), 4) is None
    # outside the domain anything goes: {0, 1, 2} -> 0, 1, 2 is affine on two bits
    assert affine_in_bits([0, 1, 2], [0, 1, 2], 2) == (0.0, [1.0, 2.0])
