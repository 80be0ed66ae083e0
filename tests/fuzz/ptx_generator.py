"""Seeded random PTX kernels for the differential fuzz tests (`generate_case(seed)`).

Each kernel is valid PTX inside what docs/ptx.md says the loader accepts, and inside the
default machine: at most 8 warps of 4 lanes, 126 words of memory, 15 registers and 7
predicates per lane, 128 instruction slots, 8 parameter words.  Its shape:

- parameters `in`, `out` (pointers) and `n`; thread `g = ctaid * ntid + tid` returns at once
  when `g >= n`, otherwise reads its row of `in` and works on six 32-bit values `%v0..%v5`
  and three predicates `%p0..%p2`;
- a body of random statements: 32-bit arithmetic, logic and shifts (immediate or register
  amounts, so PTX's clamping is hit), compares, selects, guarded instructions, loads of its
  row and of data-dependent words of `in` (through `mul.wide`, both signs), stores into its
  row of `out`, if/else diamonds and if-only branches on data- or tid-dependent conditions,
  early returns, and loops of 1..4 iterations (counters `%c0`, `%c1`, nested two deep, a
  start that may come from the data, test at the top or the bottom, `break`s);
- `prmt` (every mode, immediate and register selectors) and `dp4a`/`dp2a` (every signedness),
  at most a couple a kernel (each is some 20 machine instructions);
- in some kernels a thread's own `.local` array of four words (`__local_depot0` through
  `%SPL`): stores at constant offsets, loads at data-dependent ones, and generic accesses
  through `cvta.local`;
- in some kernels **register pressure**: 14 to 16 values instead of six, all live to the end,
  so the register allocator spills (those launches have at most four threads, so that their
  windows of local memory fit);
- an epilogue that folds every value (and the local array) into the words it stores, so each
  value is observed.

Threads are independent: no shared memory, no barriers, and each writes only its own row of
`out`, which is what `ptx_reference.py` requires.  `%p3` and `%t0..%t1`, `%rd4..%rd6` are
scratch: every use is right after its definition, which keeps the live values to the pool of
values, two row pointers, the loop counters and `%SPL`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

KERNEL = "fuzz"
VALUES = 6                          # the pool of values, and 14..18 under register pressure
PRESSURE_VALUES = (14, 16)
LOCAL_ARRAY_WORDS = 4
PRMT_MODES = ["", "", "", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"]
POOL_PREDICATES = 3
SCRATCH_PREDICATE = "%p3"
MEMORY_WORDS = 126
MAX_WARPS = 8
LANES = 4
BODY_INSTRUCTIONS = 54              # PTX instructions in the random body (~105 slots at most)
MAX_LOOP_DEPTH = 2
MAX_BRANCH_DEPTH = 3

IMMEDIATES = [0, 1, 2, 3, 5, 7, 31, 32, 33, 100, 0xFF, 0xFFFF, 0x1_0000, 0x7FFF_FFFF,
              0x8000_0000, 0x8000_0001, 0xFFFF_FFFE, 0xFFFF_FFFF, 0x1234_5678]
SHIFT_AMOUNTS = [0, 1, 3, 8, 16, 31, 32, 33, 64]
EDGE_WORDS = [0, 1, 2, 3, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0xFFFF_FFFE, 31, 32, 33]

BINARY_OPS = ["add.s32", "add.u32", "sub.s32", "sub.u32", "mul.lo.s32", "mul.lo.u32",
              "mul.hi.s32", "mul.hi.u32", "and.b32", "or.b32", "xor.b32", "min.s32",
              "min.u32", "max.s32", "max.u32"]
SHIFT_OPS = ["shl.b32", "shr.u32", "shr.s32", "shr.b32"]
# Floats (`generate_case(seed, floats=True)`): the `.f32` instructions the loader runs, each
# with the machine instructions it costs counted against the body (units of about 2 slots).
FLOAT_COMPARES = ["eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu",
                  "geu", "num", "nan"]
FLOAT_SCALES = ["0f3F000000", "0fBF000000", "0f40000000", "0fC0000000", "0f40800000",
                "0f41000000"]                              # ±0.5, ±2, 4, 8: no routine
# one routine a kernel at most (its body is 52 to 72 of the 128 slots), used once or twice
FLOAT_ROUTINES = {"mul.rn.f32": 28, "div.rn.f32": 38, "sqrt.rn.f32": 34, "rcp.rn.f32": 34}
# `generate_case(seed, fma=True)`: the fma routine (143 instructions) in every kernel, for a
# machine of 256 instruction slots (WIDE_MACHINE): 64 slots more for the body, the routine
# counted as 72 units; one block of one warp and no extra register pressure, as what the
# routine's registers push out of them spills to local memory
FMA_ROUTINE, FMA_COST, WIDE_MACHINE = "fma.rn.f32", 72, (("PROG_WORDS", 256),)
FLOAT_EDGE_WORDS = [0x0000_0000, 0x8000_0000, 0x3F80_0000, 0xBF80_0000, 0x3F00_0000,
                    0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0x7F80_0001, 0x0000_0001,
                    0x807F_FFFF, 0x0080_0000, 0x4B80_0001, 0x4B00_0001, 0x4F00_0000,
                    0xCF00_0000, 0x4F80_0000, 0x3FC0_0000, 0x4020_0000, 0xC020_0000,
                    0x7F7F_FFFF, 0x3400_0000]

COMPARES = [f"setp.{cmp}.s32" for cmp in ("eq", "ne", "lt", "le", "gt", "ge")] + \
           [f"setp.{cmp}.u32" for cmp in ("eq", "ne", "lt", "le", "gt", "ge",
                                          "lo", "ls", "hi", "hs")] + \
           ["setp.eq.b32", "setp.ne.b32"]


@dataclass
class FuzzCase:
    """A kernel and a launch of it: what both sides of the differential test run."""

    seed: int
    ptx: str
    grid: int
    block: int
    buffers: dict[str, list[int]]
    args: list
    machine: tuple = ()                   # the -P parameters of its machine ((name, value))

    def launch_json(self, source: str) -> dict:
        """A launch file's contents (docs/launch.md) for this case, with `source` the .ptx."""
        return {"source": source, "kernel": KERNEL, "grid": self.grid, "block": self.block,
                "buffers": self.buffers, "args": self.args}


class KernelWriter:
    """Writes one random kernel; `remaining` counts the body instructions still allowed."""

    def __init__(self, rng: random.Random, in_words: int, row_in: int, row_out: int,
                 values: int = VALUES, local_array: bool = False, floats: bool = False,
                 fma: bool = False):
        self.rng = rng
        self.in_words = in_words
        self.row_in = row_in
        self.row_out = row_out
        self.values = values
        self.local_array = local_array
        # byte ops cost some 20 machine instructions each: a kernel has room for two
        self.byte_ops = 2 if rng.random() < 0.4 else 0
        self.remaining = BODY_INSTRUCTIONS - 14 * self.byte_ops - 4 * (values - VALUES) \
            - 14 * local_array
        self.labels = 0
        self.loop_ends: list[str] = []       # labels a `break` may jump to, innermost last
        self.loop_counters: list[str] = []
        self.floats = floats
        self.extra_cost = 0                  # a float statement's machine work beyond its lines
        self.routine, self.routine_uses = None, 0
        if floats:
            self.remaining -= 4                  # the flushes and NaN tests float ops need
        if fma:
            self.routine, self.routine_uses = FMA_ROUTINE, rng.choice([1, 1, 2])
            self.remaining = max(self.remaining + 32 - FMA_COST - 4 * (self.routine_uses - 1),
                                 8)                    # room for the fma's use at least
        elif floats and rng.random() < 0.6:
            self.routine = rng.choice(sorted(FLOAT_ROUTINES))
            self.routine_uses = rng.choice([1, 1, 2])
            self.remaining -= FLOAT_ROUTINES[self.routine] + 4 * (self.routine_uses - 1)

    # operands ------------------------------------------------------------------------------

    def value(self) -> str:
        return f"%v{self.rng.randrange(self.values)}"

    def source(self) -> str:
        """A value, a live loop counter or (sometimes) an immediate."""
        roll = self.rng.random()
        if roll < 0.2:
            return self.immediate()
        if roll < 0.3 and self.loop_counters:
            return self.rng.choice(self.loop_counters)
        return self.value()

    def register_source(self) -> str:
        if self.loop_counters and self.rng.random() < 0.1:
            return self.rng.choice(self.loop_counters)
        return self.value()

    def immediate(self) -> str:
        word = self.rng.choice(IMMEDIATES)
        style = self.rng.random()
        if style < 0.4 and word >> 31:
            return str(word - (1 << 32))
        if style < 0.7:
            return str(word)
        return hex(word)

    def predicate(self) -> str:
        return f"%p{self.rng.randrange(POOL_PREDICATES)}"

    def guard(self, probability: float = 0.2) -> str:
        if self.rng.random() >= probability:
            return ""
        return f"@{'!' if self.rng.random() < 0.4 else ''}{self.predicate()} "

    def label(self, kind: str) -> str:
        self.labels += 1
        return f"$L__{kind}_{self.labels}"

    # statements ------------------------------------------------------------------------------

    def arithmetic(self) -> list[str]:
        roll, guard = self.rng.random(), self.guard()
        if roll < 0.55:
            op = self.rng.choice(BINARY_OPS)
            first = self.register_source() if self.rng.random() < 0.9 else self.immediate()
            return [f"{guard}{op} {self.value()}, {first}, {self.source()};"]
        if roll < 0.75:
            return self.shift(guard)
        if roll < 0.85:
            return [f"{guard}mad.lo.{self.rng.choice(['s32', 'u32'])} {self.value()}, "
                    f"{self.register_source()}, {self.source()}, {self.source()};"]
        if roll < 0.92:
            return [f"{guard}not.b32 {self.value()}, {self.register_source()};"]
        special = self.rng.choice(["%tid.x", "%ntid.x", "%ctaid.x", "%nctaid.x"])
        source = special if self.rng.random() < 0.6 else self.source()
        return [f"{guard}mov.u32 {self.value()}, {source};"]

    def shift(self, guard: str) -> list[str]:
        op, roll = self.rng.choice(SHIFT_OPS), self.rng.random()
        if roll < 0.5:
            return [f"{guard}{op} {self.value()}, {self.register_source()}, "
                    f"{self.rng.choice(SHIFT_AMOUNTS)};"]
        if roll < 0.75:                      # a register amount, mostly past 32: the clamp
            return [f"{guard}{op} {self.value()}, {self.register_source()}, {self.value()};"]
        return [f"and.b32 %t1, {self.register_source()}, {self.rng.choice([31, 63])};",
                f"{guard}{op} {self.value()}, {self.register_source()}, %t1;"]

    def compare(self) -> list[str]:
        op = self.rng.choice(COMPARES)
        first = self.register_source() if self.rng.random() < 0.9 else self.immediate()
        return [f"{self.guard(0.1)}{op} {self.predicate()}, {first}, {self.source()};"]

    def select(self) -> list[str]:
        op = self.rng.choice(["selp.b32", "selp.s32", "selp.u32"])
        return [f"{self.guard(0.1)}{op} {self.value()}, {self.source()}, {self.source()}, "
                f"{self.predicate()};"]

    def load_row(self) -> list[str]:
        word = self.rng.randrange(self.row_in)
        offset = f"+{4 * word}" if word else ""
        return [f"{self.guard(0.15)}ld.global.u32 {self.value()}, [%rd2{offset}];"]

    def load_indexed(self) -> list[str]:
        """A word of `in` chosen by data: from its start (`mul.wide.u32` of 0..k-1) or back
        from its end (`mul.wide.s32` of -k..-1)."""
        span = 1 << min(3, self.in_words.bit_length() - 1)
        lines = ["ld.param.u64 %rd4, [fuzz_param_0];", "cvta.to.global.u64 %rd4, %rd4;"]
        if self.rng.random() < 0.5:
            lines += [f"and.b32 %t0, {self.register_source()}, {span - 1};",
                      "mul.wide.u32 %rd5, %t0, 4;"]
        else:
            lines += [f"add.s64 %rd4, %rd4, {4 * self.in_words};",
                      f"or.b32 %t0, {self.register_source()}, {-span};",
                      "mul.wide.s32 %rd5, %t0, 4;"]
        return lines + ["add.s64 %rd6, %rd4, %rd5;",
                        f"{self.guard(0.15)}ld.global.u32 {self.value()}, [%rd6];"]

    def store(self) -> list[str]:
        word = self.rng.randrange(self.row_out)
        offset = f"+{4 * word}" if word else ""
        return [f"{self.guard(0.3)}st.global.u32 [%rd3{offset}], {self.value()};"]

    def byte_op(self) -> list[str]:
        """prmt (a mode, a register or immediate selector) or dp4a/dp2a."""
        self.byte_ops -= 1
        guard = self.guard(0.15)
        if self.rng.random() < 0.5:
            mode = self.rng.choice(PRMT_MODES)
            selector = self.register_source() if self.rng.random() < 0.5 else \
                hex(self.rng.getrandbits(16))
            return [f"{guard}prmt.b32{mode} {self.value()}, {self.register_source()}, "
                    f"{self.register_source()}, {selector};"]
        types = f".{self.rng.choice(['u32', 's32'])}.{self.rng.choice(['u32', 's32'])}"
        op = self.rng.choice(["dp4a", "dp2a.lo", "dp2a.hi"])
        return [f"{guard}{op}{types} {self.value()}, {self.register_source()}, "
                f"{self.source()}, {self.source()};"]

    def local_access(self) -> list[str]:
        """A word of the thread's local array: stored at a constant offset, loaded at a
        data-dependent one, or either through a generic address (cvta.local)."""
        word, roll = self.rng.randrange(LOCAL_ARRAY_WORDS), self.rng.random()
        if roll < 0.3:
            return [f"{self.guard(0.2)}st.local.u32 [%SPL+{4 * word}], {self.value()};"]
        if roll < 0.6:
            return [f"and.b32 %t0, {self.register_source()}, {LOCAL_ARRAY_WORDS - 1};",
                    "mul.wide.u32 %rd5, %t0, 4;", "add.s64 %rd6, %SPL, %rd5;",
                    f"{self.guard(0.2)}ld.local.u32 {self.value()}, [%rd6];"]
        access = f"st.u32 [%rd6+{4 * word}], {self.value()};" if roll < 0.8 else \
            f"ld.u32 {self.value()}, [%rd6+{4 * word}];"
        return ["cvta.local.u64 %rd6, %SPL;", f"{self.guard(0.2)}{access}"]

    def float_op(self) -> list[str]:
        """A `.f32` instruction on the pool's words read as binary32 (ptx_float_reference.py
        is its meaning), with its cost beyond one line in `extra_cost`."""
        roll, guard = self.rng.random(), self.guard(0.15)
        ftz = ".ftz" if self.rng.random() < 0.25 else ""
        if roll < 0.3:
            op = self.rng.choice(["add", "sub"])
            rounding = self.rng.choice(["", ".rn"])
            sat = ".sat" if self.rng.random() < 0.15 else ""
            self.extra_cost = 1 + 3 * bool(ftz) + 2 * bool(sat)
            second = self.value() if self.rng.random() < 0.85 else \
                f"0f{self.rng.choice(FLOAT_EDGE_WORDS):08X}"          # a float immediate
            return [f"{guard}{op}{rounding}{ftz}{sat}.f32 {self.value()}, "
                    f"{self.register_source()}, {second};"]
        if roll < 0.45:
            comparison = self.rng.choice(FLOAT_COMPARES)
            self.extra_cost = 5 + 2 * bool(ftz)
            return [f"{self.guard(0.1)}setp.{comparison}{ftz}.f32 {self.predicate()}, "
                    f"{self.register_source()}, {self.value()};"]
        if roll < 0.55:
            op = self.rng.choice(["min", "max"])
            self.extra_cost = 5 + 2 * bool(ftz)
            return [f"{guard}{op}{ftz}.f32 {self.value()}, {self.register_source()}, "
                    f"{self.value()};"]
        if roll < 0.62:
            op = self.rng.choice(["neg", "abs"])
            self.extra_cost = 2 * bool(ftz)
            return [f"{guard}{op}{ftz}.f32 {self.value()}, {self.register_source()};"]
        if roll < 0.67:
            return [f"{self.guard(0.1)}selp.f32 {self.value()}, {self.value()}, "
                    f"{self.value()}, {self.predicate()};"]
        if roll < 0.74:
            self.extra_cost = 7
            return [f"{guard}mul.rn{ftz}.f32 {self.value()}, {self.register_source()}, "
                    f"{self.rng.choice(FLOAT_SCALES)};"]
        self.extra_cost = 13
        kind = self.rng.random()
        if kind < 0.35:
            rounding = self.rng.choice(["rn", "rz", "rm", "rp"])
            return [f"{guard}cvt.{rounding}.f32.{self.rng.choice(['s32', 'u32'])} "
                    f"{self.value()}, {self.register_source()};"]
        rounding = self.rng.choice(["rni", "rzi", "rmi", "rpi"])
        destination = self.rng.choice(["s32", "u32", "f32"])
        return [f"{guard}cvt.{rounding}{ftz}.{destination}.f32 {self.value()}, "
                f"{self.register_source()};"]

    def routine_op(self) -> list[str]:
        """A use of the kernel's routine (a multiply, division, root, reciprocal or fma): its
        body was counted when the kernel chose it, a use costs a call's few instructions."""
        self.routine_uses -= 1
        ftz = ".ftz" if self.rng.random() < 0.25 else ""
        op = self.routine.replace(".rn", ".rn" + ftz)
        operands = 1 if self.routine.startswith(("sqrt", "rcp")) else \
            3 if self.routine == FMA_ROUTINE else 2
        sources = [self.register_source() for _ in range(operands)]
        self.extra_cost = 3
        return [f"{self.guard(0.15)}{op} {self.value()}, {', '.join(sources)};"]

    def condition(self) -> tuple[list[str], str]:
        """Lines that set a branch predicate, and the predicate (with `!` when negated)."""
        negate = "!" if self.rng.random() < 0.3 else ""
        roll = self.rng.random()
        if roll < 0.3:
            return [], negate + self.predicate()
        if roll < 0.55:                      # divergence inside a warp: on the thread index
            op = self.rng.choice(["setp.lt.u32", "setp.eq.s32", "setp.ne.s32", "setp.gt.s32"])
            bit = self.rng.choice(["", f"and.b32 %t0, %t0, {self.rng.choice([1, 2, 3])};"])
            lines = ["mov.u32 %t0, %tid.x;"] + ([bit] if bit else [])
            return lines + [f"{op} {SCRATCH_PREDICATE}, %t0, {self.rng.randrange(4)};"], \
                negate + SCRATCH_PREDICATE
        op = self.rng.choice(COMPARES)
        return [f"{op} {SCRATCH_PREDICATE}, {self.register_source()}, {self.source()};"], \
            negate + SCRATCH_PREDICATE

    def if_else(self, depth: int, loops: int) -> list[str]:
        setup, predicate = self.condition()
        other, join = self.label("else"), self.label("join")
        then = self.statements(depth + 1, loops, self.rng.randint(1, 4))
        if self.rng.random() < 0.4:          # if-only
            return setup + [f"@{predicate} bra {join};"] + then + [f"{join}:"]
        otherwise = self.statements(depth + 1, loops, self.rng.randint(1, 4))
        return setup + [f"@{predicate} bra {other};"] + then + [f"bra {join};", f"{other}:"] + \
            otherwise + [f"{join}:"]

    def loop(self, depth: int, loops: int) -> list[str]:
        counter = f"%c{loops}"
        top, end = self.label("loop"), self.label("done")
        if self.rng.random() < 0.5:
            start = [f"mov.u32 {counter}, {self.rng.randrange(4)};"]
        else:
            start = [f"and.b32 {counter}, {self.register_source()}, 3;"]
        self.loop_counters.append(counter)
        self.loop_ends.append(end)
        body = self.statements(depth + 1, loops + 1, self.rng.randint(1, 5))
        self.loop_ends.pop()
        self.loop_counters.pop()
        if self.rng.random() < 0.5:          # test at the bottom: counts up to 1..4
            bound = self.rng.randint(1, 4)
            return start + [f"{top}:"] + body + [
                f"add.s32 {counter}, {counter}, 1;",
                f"setp.lt.u32 {SCRATCH_PREDICATE}, {counter}, {bound};",
                f"@{SCRATCH_PREDICATE} bra {top};", f"{end}:"]
        test = self.rng.choice([f"setp.eq.s32 {SCRATCH_PREDICATE}, {counter}, 0;",
                                f"setp.lt.s32 {SCRATCH_PREDICATE}, {counter}, 1;"])
        return start + [f"{top}:", test, f"@{SCRATCH_PREDICATE} bra {end};"] + body + [
            f"sub.s32 {counter}, {counter}, 1;", f"bra {top};", f"{end}:"]

    def loop_break(self) -> list[str]:
        setup, predicate = self.condition()
        return setup + [f"@{predicate} bra {self.rng.choice(self.loop_ends)};"]

    def early_return(self) -> list[str]:
        return [f"@{self.predicate()} ret;"]

    def statement(self, depth: int, loops: int) -> list[str]:
        """One random statement; the weights are percentages, roughly."""
        if self.routine_uses and self.rng.random() < (0.95 if self.routine == FMA_ROUTINE
                                                      else 0.35):
            return self.routine_op()
        kinds = [(self.arithmetic, 50), (self.compare, 10), (self.select, 8),
                 (self.load_row, 6), (self.load_indexed, 4), (self.store, 5),
                 (self.early_return, 0.4)]
        if depth < MAX_BRANCH_DEPTH and self.remaining > 8:
            kinds.append((lambda: self.if_else(depth, loops), 8))
        if loops < MAX_LOOP_DEPTH and self.remaining > 8:
            kinds.append((lambda: self.loop(depth, loops), 6))
        if self.loop_ends:
            kinds.append((self.loop_break, 3))
        if self.byte_ops > 0:
            kinds.append((self.byte_op, 3))
        if self.local_array:
            kinds.append((self.local_access, 8))
        if self.floats and self.remaining > 12:
            kinds.append((self.float_op, 30))
        makers, weights = zip(*kinds)
        return self.rng.choices(makers, weights)[0]()

    def statements(self, depth: int, loops: int, count: int) -> list[str]:
        lines = []
        for _ in range(count):
            if self.remaining <= 0:
                break
            before = self.remaining
            new = self.statement(depth, loops)
            nested = before - self.remaining     # already counted by nested `statements`
            self.remaining -= sum(1 for line in new if not line.endswith(":")) - nested \
                + self.extra_cost
            self.extra_cost = 0
            lines += new
        return lines

    # the kernel -----------------------------------------------------------------------------

    def prologue(self) -> list[str]:
        lines = ["ld.param.u64 %rd0, [fuzz_param_0];", "ld.param.u64 %rd1, [fuzz_param_1];",
                 "cvta.to.global.u64 %rd0, %rd0;", "cvta.to.global.u64 %rd1, %rd1;",
                 "mov.u32 %v1, %ctaid.x;", "mov.u32 %v2, %ntid.x;", "mov.u32 %v3, %tid.x;",
                 "mad.lo.s32 %v0, %v1, %v2, %v3;", "ld.param.u32 %v4, [fuzz_param_2];",
                 self.rng.choice(["setp.ge.s32 %p3, %v0, %v4;", "setp.le.u32 %p3, %v4, %v0;"]),
                 self.rng.choice(["@%p3 ret;", "@%p3 bra $L__exit;"]),
                 f"mul.wide.s32 %rd2, %v0, {4 * self.row_in};", "add.s64 %rd2, %rd0, %rd2;",
                 f"mul.wide.u32 %rd3, %v0, {4 * self.row_out};", "add.s64 %rd3, %rd1, %rd3;"]
        for index in range(1, self.values):  # %v0 keeps g; the others get data or indices
            if index >= 4 or self.rng.random() < 0.6:
                word = self.rng.randrange(self.row_in)
                lines.append(f"ld.global.u32 %v{index}, [%rd2+{4 * word}];")
                if index >= VALUES and self.rng.random() < 0.7:   # not all equal
                    lines.append(f"mad.lo.s32 %v{index}, %v{index}, {index}, %v0;")
        if self.local_array:
            lines.append("mov.u64 %SPL, __local_depot0;")
            lines += [f"st.local.u32 [%SPL+{4 * word}], {self.value()};"
                      for word in range(LOCAL_ARRAY_WORDS)]
        for index in range(POOL_PREDICATES):
            lines.append(f"{self.rng.choice(COMPARES)} %p{index}, {self.value()}, "
                         f"{self.source()};")
        return lines

    def epilogue(self) -> list[str]:
        stored = self.rng.sample(range(self.values), min(self.row_out, self.values))
        lines = []
        if self.local_array:
            for word in range(LOCAL_ARRAY_WORDS):
                lines += [f"ld.local.u32 %t0, [%SPL+{4 * word}];",
                          f"xor.b32 %v{stored[word % len(stored)]}, "
                          f"%v{stored[word % len(stored)]}, %t0;"]
        for index in range(self.values):
            if index not in stored:
                into = self.rng.choice(stored)
                op = self.rng.choice(["add.s32", "xor.b32", "sub.s32"])
                lines.append(f"{op} %v{into}, %v{into}, %v{index};")
        for word, index in enumerate(stored):
            offset = f"+{4 * word}" if word else ""
            lines.append(f"st.global.u32 [%rd3{offset}], %v{index};")
        return lines + ["$L__exit:", "ret;"]

    def kernel(self) -> str:
        lines = self.prologue() + self.statements(0, 0, 60) + self.epilogue()
        body = "\n".join(line if line.endswith(":") else f"\t{line}" for line in lines)
        local = (f"\t.local .align 4 .b8 __local_depot0[{4 * LOCAL_ARRAY_WORDS}];\n"
                 "\t.reg .b64 %SPL;\n") if self.local_array else ""
        return f""".version 9.0
.target sm_80
.address_size 64

.visible .entry {KERNEL}(
\t.param .u64 fuzz_param_0,
\t.param .u64 fuzz_param_1,
\t.param .u32 fuzz_param_2
)
{{
{local}\t.reg .pred %p<4>;
\t.reg .b32 %v<{self.values}>;
\t.reg .b32 %c<{MAX_LOOP_DEPTH}>;
\t.reg .b32 %t<2>;
\t.reg .b64 %rd<7>;

{body}
}}
"""


def random_word(rng: random.Random) -> int:
    return rng.choice(EDGE_WORDS) if rng.random() < 0.3 else rng.getrandbits(32)


def random_float_word(rng: random.Random) -> int:
    """A word for a float kernel: an edge value, a number of moderate size, or any bits."""
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(FLOAT_EDGE_WORDS)
    if roll < 0.7:
        return rng.getrandbits(1) << 31 | rng.randint(110, 150) << 23 | rng.getrandbits(23)
    return rng.getrandbits(32)


def generate_case(seed: int, floats: bool = False, fma: bool = False) -> FuzzCase:
    """The kernel and launch of `seed`: the same seed always gives the same case.  With
    `floats`, the kernels also compute on binary32 (`KernelWriter.float_op`), their words
    drawn by `random_float_word`; the cases without it are those of before floats.  `fma`
    (floats too) gives every kernel the fma routine, for the 256-slot machine."""
    floats = floats or fma
    rng = random.Random(seed)
    pressure = rng.random() < 0.25 and not fma   # more values than registers: spills
    local_array = rng.random() < 0.3
    grid = rng.choice([1, 1, 2, 3]) if not pressure else rng.choice([1, 1, 2])
    max_block = LANES * (MAX_WARPS // grid)
    block = rng.randint(1, min(16, max_block) if not pressure else 4 // grid)
    if fma:
        grid, block = 1, min(block, LANES)
    # words of local memory a thread may take: its array, and spills under pressure
    local_words = (2 * LOCAL_ARRAY_WORDS if local_array else 0) + (16 if pressure else 0)
    if local_words:
        block = min(block, max(1, MEMORY_WORDS // (local_words + 2) // grid))
    threads = grid * block
    words_per_thread = min(7, MEMORY_WORDS // threads - local_words)
    row_in = rng.randint(1, min(3, words_per_thread - 1))
    row_out = rng.randint(1, min(4, words_per_thread - row_in))
    bound = rng.choice([threads, threads, threads - 1, rng.randint(0, threads)])
    word = random_float_word if floats else random_word
    buffers = {"in": [word(rng) for _ in range(threads * row_in)],
               "out": [word(rng) for _ in range(threads * row_out)]}
    values = rng.randint(*PRESSURE_VALUES) if pressure else VALUES
    ptx = KernelWriter(rng, len(buffers["in"]), row_in, row_out, values, local_array,
                       floats, fma).kernel()
    return FuzzCase(seed, ptx, grid, block, buffers, ["in", "out", bound],
                    WIDE_MACHINE if fma else ())
