"""The cube algebra of binary residual values: which sets of values one AND term can read.

A binary group holds a value as one signed dim per bit (`residual.BINARY`).  A set of values
is readable by one AND term only when it is a *cube* (some bits fixed, the rest free);
`disjoint_cubes` splits any set into disjoint cubes (values outside the domain being free),
and `affine_in_bits` fits a table as an affine function of the bits (what a weighted sum
can read).  Pure functions, shared by the gadget forms (`gadgets/core.py`) and the choice of
encodings (`encodings.py`).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import Iterable, Sequence


def bits_for(count: int) -> int:
    return max(1, (count - 1).bit_length())


def disjoint_cubes(accepted: Iterable[int], domain: Iterable[int], bits: int
                   ) -> list[dict[int, int]]:
    """Cubes (`{bit: value}`) that together hold exactly the values of `domain` in `accepted`,
    each such value in one cube only; codes outside `domain` never occur and are free.  The
    fewest cubes a recursive split on single bits can give."""
    domain = frozenset(domain)
    accepted = frozenset(accepted) & domain
    return [dict(cube) for cube in _cover(accepted, domain - accepted, bits)]


@lru_cache(maxsize=65536)
def _cover(accepted: frozenset, rejected: frozenset, bits: int) -> tuple:
    if not accepted:
        return ()
    if not rejected:
        return ((),)
    if len(accepted) == 1:
        (value,) = accepted
        return (tuple((bit, (value >> bit) & 1) for bit in range(bits)),)
    accept_mask = sum(1 << v for v in accepted)
    reject_mask = sum(1 << v for v in rejected)
    by_bit = [sum(1 << code for code in range(1 << bits) if (code >> bit) & 1)
              for bit in range(bits)]
    full = (1 << (1 << bits)) - 1
    memo: dict[tuple, tuple] = {}

    def best(fixed: tuple, mask: int) -> tuple:
        if fixed in memo:
            return memo[fixed]
        if not mask & accept_mask:
            result: tuple = ()
        elif not mask & reject_mask:
            result = (fixed,)
        else:
            result = None
            taken = {bit for bit, _ in fixed}
            for bit in range(bits):
                if bit in taken:
                    continue
                split = ()
                for value in (0, 1):
                    part = mask & (by_bit[bit] if value else full ^ by_bit[bit])
                    split += best(tuple(sorted(fixed + ((bit, value),))), part)
                if result is None or len(split) < len(result):
                    result = split
        memo[fixed] = result
        return result

    return best((), full)


def affine_in_bits(weights: Sequence[float], domain: Sequence[int], bits: int
                   ) -> tuple[float, list[float]] | None:
    """`(constant, slopes)` with `weights[i] == constant + sum(slopes[k] * bit_k(domain[i]))`
    for every `i`, exactly (rational elimination), or None when no such line exists.  A
    compile asks for the same table many times (the reduced machine: 2,640 fits, 159
    tables), so the fits of the last 4,096 tables are kept."""
    fit = _affine_fit(tuple(weights), tuple(domain), bits)
    return None if fit is None else (fit[0], list(fit[1]))


@lru_cache(maxsize=4096)
def _affine_fit(weights: tuple, domain: tuple, bits: int) -> tuple[float, tuple] | None:
    rows = [[Fraction(1)] + [Fraction((v >> k) & 1) for k in range(bits)] + [Fraction(w)]
            for v, w in zip(domain, weights)]
    width = bits + 1
    pivots, row = [], 0
    for col in range(width):
        pick = next((r for r in range(row, len(rows)) if rows[r][col] != 0), None)
        if pick is None:
            continue
        rows[row], rows[pick] = rows[pick], rows[row]
        pivot = rows[row][col]
        rows[row] = [x / pivot for x in rows[row]]
        for r in range(len(rows)):
            if r != row and rows[r][col] != 0:
                factor = rows[r][col]
                rows[r] = [a - factor * b for a, b in zip(rows[r], rows[row])]
        pivots.append(col)
        row += 1
    if any(all(x == 0 for x in r[:width]) and r[width] != 0 for r in rows):
        return None
    solution = [Fraction(0)] * width
    for r, col in enumerate(pivots):
        solution[col] = rows[r][width]
    return float(solution[0]), tuple(float(x) for x in solution[1:])
