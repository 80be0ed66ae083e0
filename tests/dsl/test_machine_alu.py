"""Every arithmetic, logic, compare and predicate opcode of QwenGPU v1, edge values included.

Each program loads per-thread operands from memory, applies one instruction and stores the
result; the expected words come from the plain-Python models below (signed Python integers,
written from docs/isa.md), one per thread.
"""

from __future__ import annotations

import pytest

from machine_harness import INT_MAX, INT_MIN, MASK32, launch, mem_line, s32, u32, unsigned_words


def model(op: str, x: int, y: int, z: int = 0) -> int:
    """What one thread computes, from docs/isa.md (x, y, z are unsigned words)."""
    sx, sy = s32(x), s32(y)
    results = {
        "add": x + y, "sub": x - y, "mul": x * y,
        "mulhi.s": (sx * sy) >> 32, "mulhi.u": (x * y) >> 32, "mad": x * y + z,
        "abs": abs(sx),
        "min.s": min(sx, sy), "min.u": min(x, y), "max.s": max(sx, sy), "max.u": max(x, y),
        "and": x & y, "or": x | y, "xor": x ^ y,
        "shl": x << y if y < 32 else 0,
        "shr.u": x >> y if y < 32 else 0,
        "shr.s": sx >> min(y, 31),
    }
    return results[op] & MASK32


WORD_XS = [INT_MIN, -1, INT_MAX, 0, 5, -7, 123456789, INT_MIN]
WORD_YS = [-1, 1, 1, 0, -3, 2, 987654321, INT_MIN]
WORD_ZS = [3, -1, INT_MIN, 7, 0, 100, -5, 1]
SHIFT_XS = [INT_MIN, -1, 0x1234_5678, -8, 1, INT_MAX, -100, 0x8000_0001]
SHIFT_YS = [0, 31, 32, 33, 1, 4, -1, 16]

BINARY = ["add", "sub", "mul", "mulhi.s", "mulhi.u", "min.s", "min.u", "max.s", "max.u",
          "and", "or", "xor"]
SHIFTS = ["shl", "shr.u", "shr.s"]


def operand_program(body: str, xs, ys, zs=(0,) * 8) -> str:
    """8 threads; thread t has x = xs[t] in r2, y = ys[t] in r3, z = zs[t] in r5, and stores
    r4 to word 24 + t."""
    return f"""
.block 8
{mem_line(0, xs)}
{mem_line(8, ys)}
{mem_line(16, zs)}
    s2r r0, tid
    shl r1, r0, 2
    ld r2, [r1+0]
    ld r3, [r1+32]
    ld r5, [r1+64]
    {body}
    st [r1+96], r4
    exit
"""


def expect(op, xs, ys, zs=(0,) * 8):
    return [model(op, u32(x), u32(y), u32(z)) for x, y, z in zip(xs, ys, zs)]


@pytest.mark.parametrize("op", BINARY + SHIFTS)
def test_binary_op_with_register_operand(op):
    xs, ys = (SHIFT_XS, SHIFT_YS) if op in SHIFTS else (WORD_XS, WORD_YS)
    result = launch(operand_program(f"{op} r4, r2, r3", xs, ys))
    assert not result.trapped
    assert unsigned_words(result, 24, 8) == expect(op, xs, ys)


@pytest.mark.parametrize("immediate", [0, 1, -1, 31, 32, 33, INT_MIN, 0x7FFF_0001])
@pytest.mark.parametrize("op", BINARY + SHIFTS)
def test_binary_op_with_immediate_operand(op, immediate):
    xs = SHIFT_XS if op in SHIFTS else WORD_XS
    result = launch(operand_program(f"{op} r4, r2, {immediate}", xs, [0] * 8))
    assert unsigned_words(result, 24, 8) == expect(op, xs, [immediate] * 8)


def test_mad_register_and_immediate():
    result = launch(operand_program("mad r4, r2, r3, r5", WORD_XS, WORD_YS, WORD_ZS))
    assert unsigned_words(result, 24, 8) == expect("mad", WORD_XS, WORD_YS, WORD_ZS)
    result = launch(operand_program("mad r4, r2, -3, r5", WORD_XS, [0] * 8, WORD_ZS))
    assert unsigned_words(result, 24, 8) == expect("mad", WORD_XS, [-3] * 8, WORD_ZS)


def test_abs_including_int_min():
    xs = [INT_MIN, -1, 0, 1, INT_MAX, -INT_MAX, -12345, 12345]
    result = launch(operand_program("abs r4, r2", xs, [0] * 8))
    assert unsigned_words(result, 24, 8) == [u32(abs(x)) if x != INT_MIN else u32(INT_MIN)
                                             for x in xs]


def test_mulhi_signed_and_unsigned_differ_on_negative_operands():
    xs = [-1, -1, INT_MIN, INT_MIN, 0x10000, -0x10000, 3, -3]
    ys = [-1, 1, INT_MIN, -1, 0x10000, 0x10000, -1, -1]
    signed = launch(operand_program("mulhi.s r4, r2, r3", xs, ys))
    unsigned = launch(operand_program("mulhi.u r4, r2, r3", xs, ys))
    assert unsigned_words(signed, 24, 8) == [u32((x * y) >> 32) for x, y in zip(xs, ys)]
    assert unsigned_words(unsigned, 24, 8) == [(u32(x) * u32(y)) >> 32 for x, y in zip(xs, ys)]
    assert unsigned_words(signed, 24, 2) == [0, 0xFFFF_FFFF]      # -1*-1 = 1; -1*1 = -1
    assert unsigned_words(unsigned, 24, 1) == [0xFFFF_FFFE]       # (2^32-1)^2 >> 32


COMPARE_XS = [INT_MIN, -1, 5, 0, INT_MAX, 3, 7, INT_MIN]
COMPARE_YS = [1, 0, 5, -1, INT_MIN, 7, 3, INT_MIN]


def compare_model(code: str, x: int, y: int) -> int:
    sx, sy, ux, uy = s32(x), s32(y), u32(x), u32(y)
    table = {"eq": ux == uy, "ne": ux != uy, "lt": sx < sy, "le": sx <= sy, "gt": sx > sy,
             "ge": sx >= sy, "lo": ux < uy, "ls": ux <= uy, "hi": ux > uy, "hs": ux >= uy}
    return int(table.get(code, False))


COMPARISONS = ["eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs", "cmp10", "cmp15"]


@pytest.mark.parametrize("code", COMPARISONS)
def test_setp_every_comparison_signed_and_unsigned(code):
    body = f"setp.{code} p1, r2, r3\n    selp r4, r5, 0, p1"
    result = launch(operand_program(body, COMPARE_XS, COMPARE_YS, [1] * 8))
    assert unsigned_words(result, 24, 8) == [compare_model(code, x, y)
                                             for x, y in zip(COMPARE_XS, COMPARE_YS)]


@pytest.mark.parametrize("code", ["lt", "lo", "ge", "hs"])
def test_setp_with_immediate(code):
    body = f"setp.{code} p1, r2, -5\n    selp r4, r5, 0, p1"
    result = launch(operand_program(body, COMPARE_XS, [0] * 8, [1] * 8))
    assert unsigned_words(result, 24, 8) == [compare_model(code, x, -5) for x in COMPARE_XS]


def test_selp_register_and_immediate_operands():
    xs = [10, 20, 30, 40, 50, 60, 70, 80]
    ys = [-1, -2, -3, -4, -5, -6, -7, -8]
    zs = [0, 1, 1, 0, 1, 0, 0, 1]                   # the selector, via setp.ne
    body = "setp.ne p3, r5, 0\n    selp r4, r2, r3, p3"
    result = launch(operand_program(body, xs, ys, zs))
    assert unsigned_words(result, 24, 8) == [u32(x if z else y) for x, y, z in zip(xs, ys, zs)]
    body = "setp.ne p3, r5, 0\n    selp r4, r2, -99, p3"
    result = launch(operand_program(body, xs, ys, zs))
    assert unsigned_words(result, 24, 8) == [u32(x if z else -99) for x, z in zip(xs, zs)]


@pytest.mark.parametrize("op", ["pand", "por", "pxor", "pnot"])
def test_predicate_logic(op):
    xs = [-1, -1, 1, 1, -5, 0, INT_MIN, 7]
    ys = [-1, 1, -1, 1, 0, -5, INT_MIN, 7]
    operands = "p3, p1" if op == "pnot" else "p3, p1, p2"
    body = (f"setp.lt p1, r2, 0\n    setp.lt p2, r3, 0\n    {op} {operands}\n"
            f"    selp r4, r5, 0, p3")
    result = launch(operand_program(body, xs, ys, [1] * 8))
    functions = {"pand": lambda a, b: a & b, "por": lambda a, b: a | b,
                 "pxor": lambda a, b: a ^ b, "pnot": lambda a, b: 1 - a}
    assert unsigned_words(result, 24, 8) == [functions[op](int(x < 0), int(y < 0))
                                             for x, y in zip(xs, ys)]


def test_pt_reads_true_and_writes_to_pt_and_rz_are_dropped():
    body = ("setp.ne pt, r2, r2\n"          # would make pt false if the write landed
            "    pand p3, pt, pt\n"
            "    add rz, r2, 1\n"            # dropped
            "    add r6, rz, 0\n"            # rz still reads 0
            "    selp r4, r6, 1000, p3")
    result = launch(operand_program(body, list(range(8)), [0] * 8))
    assert unsigned_words(result, 24, 8) == [0] * 8
    setp_record = next(r for r in result.records if r["pc"] == 5)
    assert setp_record["pwen"] == 0
    add_record = next(r for r in result.records if r["pc"] == 7)
    # no lane writes: the record leaves `rd` out, and it reads 0
    assert add_record["rwen"] == 0 and add_record["rd"] == 0
