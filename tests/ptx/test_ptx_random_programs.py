"""Seeded random straight-line PTX programs against a plain-Python reading of the same PTX.

Each program keeps eight 32-bit values and two predicates alive, applies random operations
(some guarded, some with immediates) and stores everything.  This exercises instruction
selection and register allocation together under pressure: every value is live to the end,
so a wrong interference edge or a lost guarded write shows up as a wrong word.
"""

from __future__ import annotations

import random

import pytest

from ptx_harness import BINARY_32, M32, run_rows, s32

VALUES = 8

BINARY = {
    **{op: BINARY_32[op] for op in ("add.s32", "sub.s32", "mul.lo.s32", "mul.hi.s32",
                                    "mul.hi.u32", "and.b32", "or.b32", "xor.b32", "min.s32",
                                    "max.u32")},
    "shl.b32": lambda a, b: a << b if b < 32 else 0,
    "shr.s32": lambda a, b: s32(a) >> min(b, 32),
    "shr.u32": lambda a, b: a >> b if b < 32 else 0,
}
COMPARE = {"lt.s32": lambda a, b: s32(a) < s32(b), "hs.u32": lambda a, b: a >= b,
           "ne.b32": lambda a, b: a != b}


def random_program(rng: random.Random, length: int) -> tuple[str, list[tuple]]:
    """PTX lines and the same program as steps for `evaluate`."""
    lines, steps = [], []
    for _ in range(length):
        kind = rng.random()
        d, a, b = (rng.randrange(VALUES) for _ in range(3))
        guard = rng.choice([None, None, (0, False), (1, True)])
        prefix = "" if guard is None else f"@{'!' if guard[1] else ''}%q{guard[0]} "
        if kind < 0.6:
            op = rng.choice(sorted(BINARY))
            immediate = rng.random() < 0.3
            operand = str(rng.choice([0, 1, 5, 31, 32, -1, 0x7FFF_FFFF])) if immediate \
                else f"%v{b}"
            value = int(operand) & M32 if immediate else None
            lines.append(f"    {prefix}{op} %v{d}, %v{a}, {operand};")
            steps.append(("binary", op, d, a, b, value, guard))
        elif kind < 0.75:
            op = rng.choice(sorted(COMPARE))
            target = rng.randrange(2)
            lines.append(f"    {prefix}setp.{op} %q{target}, %v{a}, %v{b};")
            steps.append(("compare", op, target, a, b, None, guard))
        elif kind < 0.9:
            selector = rng.randrange(2)
            lines.append(f"    {prefix}selp.b32 %v{d}, %v{a}, %v{b}, %q{selector};")
            steps.append(("select", selector, d, a, b, None, guard))
        else:
            c = rng.randrange(VALUES)
            lines.append(f"    {prefix}mad.lo.s32 %v{d}, %v{a}, %v{b}, %v{c};")
            steps.append(("mad", c, d, a, b, None, guard))
    return "\n".join(lines), steps


def evaluate(steps: list[tuple], values: tuple[int, ...], predicates: list[bool]) -> tuple:
    """PTX semantics of the steps: a guarded step whose guard fails changes nothing."""
    values, predicates = list(values), list(predicates)
    for kind, op, d, a, b, immediate, guard in steps:
        if guard is not None and predicates[guard[0]] == guard[1]:
            continue
        x, y = values[a], values[b] if immediate is None else immediate
        if kind == "binary":
            values[d] = BINARY[op](x, y) & M32
        elif kind == "compare":
            predicates[d] = COMPARE[op](x, y)
        elif kind == "select":
            values[d] = x if predicates[op] else y
        else:
            values[d] = (x * y + values[op]) & M32
    return tuple(values)


@pytest.mark.parametrize("seed", range(12))
def test_random_program(seed):
    rng = random.Random(seed)
    text, steps = random_program(rng, 24)
    setup = "\n".join(f"    mov.b32 %v{i}, %a{i};" for i in range(VALUES))
    finish = "\n".join(f"    mov.b32 %o{i}, %v{i};" for i in range(VALUES))
    body = ("    .reg .b32 %v<8>;\n" + setup
            + "\n    setp.ne.b32 %q0, %a0, 0;\n    setp.lt.s32 %q1, %a1, %a2;\n"
            + text + "\n" + finish)
    rows = [tuple(rng.getrandbits(32) if rng.random() < 0.7 else rng.choice(
        [0, 1, M32, 0x8000_0000, 31, 32]) for _ in range(VALUES)) for _ in range(8)]
    got = run_rows(body, rows, VALUES)
    for row, words in zip(rows, got):
        start = [row[0] != 0, s32(row[1]) < s32(row[2])]
        assert words == evaluate(steps, row, start), f"seed {seed}, row {row}\n{text}"
