"""Seeded random PTX kernels whose threads cooperate, for the cooperative fuzz
(`generate_case(seed)`).

Each kernel is a few **phases** separated by `bar.sync 0`, in the shapes nvcc writes: every
thread writes its slot of a shared array (maybe permuted: reversed, or `tid ^ k`) and later
reads others' slots; a reduction tree over the array with a barrier in its loop; a warp
reduction or scan by shuffles whose lane 0 writes its warp's slot; ballots and
`any`/`all`/`uni` votes of data-dependent predicates, also inside a branch with the member
mask from `activemask`; atomics on shared counters (initialised by the first threads, then
updated, then read back) and on a global buffer, some guarded, some inside a branch, some
`red`; byte and halfword stores into shared words, read back as words, bytes or halfwords;
byte or halfword stores into a global buffer.  Around them: 32-bit arithmetic on three
values per thread (`%v0..%v2`, from its row of `in`), divergent if/else, and an epilogue
storing the values into its row of `out` (after an early return of some threads).

**Valid by construction**, so that the result is one PTX defines (what
`cooperative_reference.py` checks, and refuses otherwise): barriers are at the top level (or
in a loop every thread runs as often), so every thread of a block reaches each; shuffles run
in converged code of whole warps (the block a multiple of 4 threads) or in a branch every
lane of a warp takes alike (`vote.any`); votes in a branch name `activemask`'s lanes; in a
phase each shared array has one role (written one slot a thread, read, updated atomically,
or stored into byte by byte), and is read only where written before; atomics on a word by
several warps in a phase are all one commuting operation whose old values are not read
(`red`, or `atom` into a register nothing reads), except on a warp's own counter, and in
single-warp kernels, where any operation's old value is used (QwenGPU applies a warp's lanes
in lane order, as the evaluator does).

**Fitting the machine**: 8 warps of 4 lanes, 126 words (buffers and each block's shared
window), 64 words of shared memory a block, about 100 of the 128 instruction slots, and few
live values.  What the loader still refuses (15 registers) is counted as skipped.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field

from cooperative_launch import (ATOMIC_TYPES, COMMUTING, GLOBAL_ATOMIC_WORDS, KERNEL,
                                CooperativeCase, Shape, random_shape)

SLOT_BUDGET = 100
VALUES = 3

IMMEDIATES = [0, 1, 2, 3, 5, 7, 31, 32, 100, 0xFF, 0xFFFF, 0x7FFF_FFFF, 0x8000_0000,
              0xFFFF_FFFE, 0xFFFF_FFFF, 0x1234_5678]
EDGE_WORDS = [0, 1, 2, 3, 4, 7, 0x7FFF_FFFF, 0x8000_0000, 0xFFFF_FFFF, 0xFFFF_FFFE, 0x100]
FOLDS = ["add.s32", "xor.b32", "sub.s32", "max.s32", "min.u32", "or.b32", "mul.lo.s32",
         "max.u32", "add.u32"]
BINARY_OPS = ["add.s32", "sub.s32", "mul.lo.s32", "mul.hi.u32", "mul.hi.s32", "and.b32",
              "or.b32", "xor.b32", "min.s32", "min.u32", "max.s32", "max.u32"]
COMPARES = [f"setp.{cmp}.s32" for cmp in ("eq", "ne", "lt", "le", "gt", "ge")] + \
           [f"setp.{cmp}.u32" for cmp in ("lo", "ls", "hi", "hs", "eq", "ne")]
TREE_OPS = ["add.s32", "xor.b32", "max.s32", "min.u32", "or.b32", "add.u32"]


@dataclass
class ArrayState:
    """What the kernel has written of its shared arrays so far (for every block alike)."""

    words: int = 0                   # fuzz_words[0 .. words-1] hold values
    counters: bool = False           # every fuzz_counts word holds a value
    bytes: set[int] = field(default_factory=set)   # bytes of fuzz_bytes that hold values


class CooperativeWriter:
    """Writes one random kernel for `shape`; `budget` counts the slots still allowed."""

    def __init__(self, rng: random.Random, shape: Shape):
        self.rng, self.shape = rng, shape
        self.state = ArrayState()
        self.budget = SLOT_BUDGET
        self.labels = 0
        self.exited = False              # some threads have returned: writes define no more
        self.converged = shape.whole_warps   # every warp has all its lanes (shuffles)

    # operands ------------------------------------------------------------------------------

    def value(self) -> str:
        return f"%v{self.rng.randrange(VALUES)}"

    def immediate(self) -> str:
        word = self.rng.choice(IMMEDIATES)
        if word >> 31 and self.rng.random() < 0.5:
            return str(word - (1 << 32))
        return str(word) if self.rng.random() < 0.6 else hex(word)

    def source(self) -> str:
        return self.immediate() if self.rng.random() < 0.25 else self.value()

    def fold(self, into: str, source: str) -> str:
        return f"{self.rng.choice(FOLDS)} {into}, {into}, {source};"

    def label(self, kind: str) -> str:
        self.labels += 1
        return f"$L__{kind}_{self.labels}"

    def condition(self) -> list[str]:
        """Lines setting %p3 from data or from the thread index (divergence in a warp)."""
        if self.rng.random() < 0.6:
            return [f"{self.rng.choice(COMPARES)} %p3, {self.value()}, {self.source()};"]
        bits = self.rng.choice([1, 2, 3, 5, 7])
        return [f"and.b32 %t0, %r0, {bits};",
                f"setp.{self.rng.choice(['eq', 'ne', 'lo', 'hi'])}.u32 %p3, %t0, "
                f"{self.rng.randrange(4)};"]

    def slot_address(self, array: str, index: str) -> list[str]:
        """%t1 = the shared address of word `index` (a register) of a shared array."""
        return [f"shl.b32 %t1, {index}, 2;", f"mov.u32 %t4, {array};",
                "add.s32 %t1, %t4, %t1;"]

    def word_address(self, array: str, index: str) -> tuple[list[str], str, str]:
        """Lines, address operand and space suffix of word `index` of a shared array: mostly
        its shared address, sometimes a generic one (`cvta.shared`, then a generic access,
        as nvcc writes for a shared pointer it cannot place)."""
        if self.rng.random() < 0.8:
            return self.slot_address(array, index), "[%t1]", ".shared"
        return [f"mov.u64 %rd2, {array};", "cvta.shared.u64 %rd2, %rd2;",
                f"mul.wide.u32 %rd3, {index}, 4;", "add.s64 %rd3, %rd2, %rd3;"], "[%rd3]", ""

    def permuted_tid(self, count: int) -> tuple[list[str], str]:
        """A permutation of 0..count-1 for the threads (count = the block size), as lines
        leaving it in a register, and that register."""
        choices = ["own", "reverse"]
        if count % 4 == 0:
            choices += ["xor1", "xor2", "xor3"]
        elif count % 2 == 0:
            choices += ["xor1"]
        kind = self.rng.choice(choices)
        if kind == "own":
            return [], "%r0"
        if kind == "reverse":
            return ["mov.u32 %t0, %ntid.x;", "sub.s32 %t0, %t0, 1;",
                    "sub.s32 %t0, %t0, %r0;"], "%t0"
        return [f"xor.b32 %t0, %r0, {kind[-1]};"], "%t0"

    # shared words ----------------------------------------------------------------------------

    def share(self) -> list[str]:
        """Every thread writes one slot of fuzz_words (a permutation of the threads)."""
        lines, index = self.permuted_tid(self.shape.block)
        address_lines, address, space = self.word_address("fuzz_words", index)
        lines += address_lines
        value = self.value()
        if self.rng.random() < 0.4:                  # the value chosen in an if/else
            other, join = self.label("else"), self.label("join")
            lines += self.condition() + [
                f"@%p3 bra {other};", f"{self.rng.choice(BINARY_OPS)} %t2, {value}, "
                f"{self.source()};", f"bra {join};", f"{other}:",
                f"{self.rng.choice(BINARY_OPS)} %t2, {self.value()}, {self.source()};",
                f"{join}:"]
            value = "%t2"
        if not self.exited:                          # else some slots keep what they had
            self.state.words = self.shape.block
        return lines + [f"st{space}.u32 {address}, {value};"]

    def leader_write(self) -> list[str]:
        """Lane 0 of each warp writes its warp's slot (after a warp reduction, say)."""
        skip = self.label("leader")
        if not self.exited:
            self.state.words = max(self.state.words, self.shape.warps)
        lane = self.rng.choice(["and.b32 %t0, %r0, 3;", "mov.u32 %t0, %laneid;"])
        address_lines, address, space = self.word_address("fuzz_words", "%t0")
        return [lane, "setp.ne.u32 %p3, %t0, 0;", f"@%p3 bra {skip};",
                "shr.u32 %t0, %r0, 2;", *address_lines,
                f"st{space}.u32 {address}, {self.value()};", f"{skip}:"]

    def word_index(self, defined: int) -> list[str] | int:
        """Lines leaving a slot below `defined` in %t0, or a constant slot."""
        choices = ["constant", "data"]
        if defined >= self.shape.block:
            choices += ["own", "own", "permuted"]
        if defined >= self.shape.warps:
            choices.append("warp")
        kind = self.rng.choice(choices)
        if kind == "constant":
            return self.rng.randrange(defined)
        if kind == "data":
            return [f"and.b32 %t0, {self.value()}, 7;", f"min.u32 %t0, %t0, {defined - 1};"]
        if kind == "warp":
            return ["shr.u32 %t0, %r0, 2;"]
        lines, index = self.permuted_tid(self.shape.block) if kind == "permuted" else \
            ([], "%r0")
        return lines + ([f"mov.u32 %t0, {index};"] if index != "%t0" else [])

    def gather(self) -> list[str]:
        """Reads of fuzz_words (nobody writes it in this phase), folded into the values."""
        lines = []
        for _ in range(self.rng.randint(1, 2)):
            index = self.word_index(self.state.words)
            if isinstance(index, int):
                offset = f"+{4 * index}" if index else ""
                lines.append(f"ld.shared.u32 %t2, [fuzz_words{offset}];")
            else:
                address_lines, address, space = self.word_address("fuzz_words", "%t0")
                lines += index + address_lines + [f"ld{space}.u32 %t2, {address};"]
            lines.append(self.fold(self.value(), "%t2"))
        return lines

    def tree(self) -> list[str]:
        """`for (s = ntid/2; s > 0; s >>= 1) { if (t < s) w[t] op= w[t+s]; __syncthreads(); }`
        (a phase of its own: the barrier is in the loop)."""
        top, skip, done = self.label("tree"), self.label("half"), self.label("tree_done")
        op = self.rng.choice(TREE_OPS)
        return ["mov.u32 %t3, %ntid.x;", "shr.u32 %t3, %t3, 1;", "setp.eq.s32 %p4, %t3, 0;",
                f"@%p4 bra {done};", f"{top}:", "setp.ge.u32 %p4, %r0, %t3;",
                f"@%p4 bra {skip};", *self.slot_address("fuzz_words", "%r0"),
                "shl.b32 %t0, %t3, 2;", "add.s32 %t0, %t1, %t0;",
                "ld.shared.u32 %t2, [%t1];", "ld.shared.u32 %t0, [%t0];",
                f"{op} %t2, %t2, %t0;", "st.shared.u32 [%t1], %t2;", f"{skip}:",
                "bar.sync 0;", "shr.u32 %t3, %t3, 1;", "setp.ne.s32 %p4, %t3, 0;",
                f"@%p4 bra {top};", f"{done}:"]

    # shared counters -------------------------------------------------------------------------

    def first_threads_write(self, array: str, count: int, value: str) -> list[str]:
        """Threads below `count` write their word of `array` (guarded or branched around)."""
        address_lines, address, space = self.word_address(array, "%r0")
        lines = [f"setp.lt.u32 %p3, %r0, {count};"] + address_lines
        if not value.startswith("%"):                # st stores a register
            lines.insert(1, f"mov.u32 %t2, {value};")
            value = "%t2"
        if self.rng.random() < 0.5:
            return lines + [f"@%p3 st{space}.u32 {address}, {value};"]
        skip = self.label("first")
        return [lines[0], f"@!%p3 bra {skip};", *lines[1:],
                f"st{space}.u32 {address}, {value};", f"{skip}:"]

    def init_counters(self) -> list[str]:
        self.state.counters |= not self.exited
        value = self.rng.choice([self.immediate(), self.immediate(), self.value()])
        return self.first_threads_write("fuzz_counts", self.shape.counters, value)

    def atomic_operand(self) -> str:
        roll = self.rng.random()
        if roll < 0.3:
            return self.immediate()
        if roll < 0.4:
            return "%r0"
        return self.value()

    def atomic_line(self, space: str, op: str, type_name: str, address: str,
                    keep_old: bool) -> list[str]:
        """`atom` (or `red`) of op on the word at address (space: ".shared", ".global" or
        "", generic); `keep_old`: fold its old value into a value, else nothing reads it."""
        operands = [address, self.atomic_operand()]
        if op == "cas":
            operands.append(self.atomic_operand())
        if op in ("inc", "dec") and self.rng.random() < 0.7:
            operands[1] = str(self.rng.choice([1, 2, 3, 5, 100]))
        if not keep_old and op not in ("exch", "cas") and self.rng.random() < 0.5:
            return [f"red{space}.{op}.{type_name} {', '.join(operands)};"]
        if keep_old and self.rng.random() < 0.25:    # the old value into a source's register
            into = operands[1] if operands[1].startswith("%v") else self.value()
            return [f"atom{space}.{op}.{type_name} {into}, {', '.join(operands)};"]
        line = f"atom{space}.{op}.{type_name} %t3, {', '.join(operands)};"
        return [line, self.fold(self.value(), "%t3")] if keep_old else [line]

    def any_op(self) -> tuple[str, str]:
        op = self.rng.choice(list(ATOMIC_TYPES))
        return op, self.rng.choice(ATOMIC_TYPES[op])

    def commuting_op(self) -> tuple[str, str]:
        op = self.rng.choice(COMMUTING)
        return op, self.rng.choice(ATOMIC_TYPES[op])

    def guarded(self, lines: list[str]) -> list[str]:
        """The atomic as it is, under a guard, or inside an if on data (divergent)."""
        roll = self.rng.random()
        if roll < 0.5:
            return lines
        if roll < 0.75:
            guard = self.rng.choice(["@%p5 ", "@!%p5 ", "@%p3 ", "@!%p3 "])
            setup = self.condition() if "%p3" in guard else []
            return setup + [guard + line for line in lines]
        skip = self.label("skip_atomic")
        setup = self.condition() if self.rng.random() < 0.6 else \
            ["setp.ge.s32 %p3, %r1, %t4;"]          # nvcc's `if (i < n)`: n in %t4
        if "%t4" in setup[-1]:
            setup = ["ld.param.u32 %t4, [fuzz_param_4];"] + setup
        return setup + [f"@%p3 bra {skip};"] + lines + [f"{skip}:"]

    def shared_atomics(self) -> list[str]:
        """Atomics on fuzz_counts: one commuting op (old values unread) where warps share a
        word; any op with its old value on a warp's own word or in a single-warp kernel."""
        count, lines = self.shape.counters, []
        per_warp = not self.shape.single_warp and self.rng.random() < 0.35
        shared_op = self.commuting_op()
        for _ in range(self.rng.randint(1, 2)):
            if per_warp:
                index = ["shr.u32 %t0, %r0, 2;"]
            elif self.rng.random() < 0.2:
                index = [f"mov.u32 %t0, {self.rng.randrange(count)};"]
            else:
                index = [f"and.b32 %t0, {self.value()}, {count - 1};"]
            address_lines, address, space = self.word_address("fuzz_counts", "%t0")
            if index[0].startswith("mov") and self.rng.random() < 0.5:   # a constant word
                word = int(index[0].split(", ")[1].rstrip(";"))
                index, address_lines, address, space = [], [], \
                    f"[fuzz_counts{'+' + str(4 * word) if word else ''}]", ".shared"
            free = per_warp or self.shape.single_warp
            op, type_name = self.any_op() if free else shared_op
            if address == "[%t1]":
                address = self.rng.choice(["[%t1]", "[%t1+0]"])
            atomic = self.atomic_line(space, op, type_name, address, keep_old=free)
            lines += self.guarded(index + address_lines + atomic)
        return lines

    def read_counters(self) -> list[str]:
        """The first threads read their counter back; maybe add it into `atomics`."""
        count = self.shape.counters
        address_lines, address, space = self.word_address("fuzz_counts", "%r0")
        lines = [f"setp.lt.u32 %p3, %r0, {count};"] + address_lines
        lines += [f"@%p3 ld{space}.u32 %t2, {address};", f"@%p3 {self.fold(self.value(), '%t2')}"]
        if self.rng.random() < 0.4:
            op, type_name = self.global_atomic_op()
            if op in ("exch", "cas"):                # red has neither
                op, type_name = "add", "u32"
            lines += ["ld.param.u64 %rd2, [fuzz_param_2];", "cvta.to.global.u64 %rd2, %rd2;",
                      f"and.b32 %t0, %r0, {GLOBAL_ATOMIC_WORDS - 1};",
                      "mul.wide.u32 %rd3, %t0, 4;", "add.s64 %rd3, %rd2, %rd3;",
                      f"@%p3 red.global.{op}.{type_name} [%rd3], %t2;"]
        return lines

    # shared bytes ----------------------------------------------------------------------------

    def init_bytes(self) -> list[str]:
        if not self.exited:
            self.state.bytes |= set(range(4 * self.shape.byte_words))
        return self.first_threads_write("fuzz_bytes", self.shape.byte_words, self.source())

    def store_bytes(self) -> list[str]:
        """Each thread stores a byte (or a halfword) of fuzz_bytes, a permutation of them."""
        size = self.rng.choice([1, 2])
        lines, index = self.permuted_tid(self.shape.block)
        lines.append(f"shl.b32 %t0, {index}, 1;" if size == 2 else f"mov.u32 %t0, {index};")
        space, address = ".shared", "[%t1]"
        if self.rng.random() < 0.8:
            lines += ["mov.u32 %t4, fuzz_bytes;", "add.s32 %t1, %t4, %t0;"]
        else:                                        # through a generic address
            lines += ["mov.u64 %rd2, fuzz_bytes;", "cvta.shared.u64 %rd2, %rd2;",
                      "cvt.u64.u32 %rd3, %t0;", "add.s64 %rd3, %rd2, %rd3;"]
            space, address = "", "[%rd3]"
        value = self.value()
        if self.rng.random() < 0.3:
            lines.append(f"{self.rng.choice(BINARY_OPS)} %t2, {value}, {self.source()};")
            value = "%t2"
        if self.rng.random() < 0.3:                  # nvcc's 16-bit register
            lines.append(f"cvt.u{8 * size}.u32 %h0, {value};")
            value = "%h0"
        guard = ""
        if len(self.state.bytes) == 4 * self.shape.byte_words and self.rng.random() < 0.3:
            lines += self.condition()
            guard = self.rng.choice(["@%p3 ", "@!%p3 "])
        if not self.exited:
            self.state.bytes |= set(range(size * self.shape.block))
        return lines + [f"{guard}st{space}.u{8 * size} {address}, {value};"]

    def read_bytes(self) -> list[str]:
        defined = self.state.bytes
        words = [w for w in range(self.shape.byte_words) if {4 * w + i for i in range(4)}
                 <= defined]
        if words and self.rng.random() < 0.45:
            if len(words) == self.shape.byte_words and self.rng.random() < 0.5:
                lines = ["shr.u32 %t0, %r0, 1;"] + self.slot_address("fuzz_bytes", "%t0") + \
                    ["ld.shared.u32 %t2, [%t1];"]
            else:
                word = self.rng.choice(words)
                lines = [f"ld.shared.u32 %t2, [fuzz_bytes{'+' + str(4 * word) if word else ''}];"]
        else:
            size = self.rng.choice([1, 2])
            starts = [b for b in range(0, 4 * self.shape.byte_words, size)
                      if {b + i for i in range(size)} <= defined]
            if not starts:
                return []
            start = self.rng.choice(starts)
            kind = self.rng.choice(["u", "s"])
            address = f"[fuzz_bytes{'+' + str(start) if start else ''}]"
            if self.rng.random() < 0.3:              # into a 16-bit register, then widened
                lines = [f"ld.shared.{kind}{8 * size} %h1, {address};",
                         f"cvt.{kind}32.{kind}16 %t2, %h1;"]
            else:
                lines = [f"ld.shared.{kind}{8 * size} %t2, {address};"]
        return lines + [self.fold(self.value(), "%t2")]

    # warps ---------------------------------------------------------------------------------

    def member_mask(self) -> tuple[list[str], str]:
        roll = self.rng.random()
        if roll < 0.5:
            return [], "-1"
        if roll < 0.7:
            return [], self.rng.choice(["0xffffffff", "0xf", "15"])
        return ["mov.u32 %k1, -1;"], "%k1"        # nvcc's mask in a register

    def shuffle_operands(self, mode: str) -> tuple[list[str], str, str]:
        """Lines, lane operand b and clamp operand c of one random shuffle."""
        lines, roll = [], self.rng.random()
        if roll < 0.6:
            b = str(self.rng.choice([0, 1, 1, 2, 2, 3, 4, 5, 7, 31, 33, 35]))
        elif roll < 0.8:
            lines.append(f"and.b32 %t0, {self.value()}, {self.rng.choice([3, 7, 63])};")
            b = "%t0"
        else:
            b = self.rng.choice(["%r0", "%r1"])
        width = self.rng.choice([1, 2, 4, 4, 8, 32, 32, 32])
        clamp = (32 - width) << 8 | (0 if mode == "up" else 0x1F)
        roll = self.rng.random()
        if roll < 0.15:
            clamp = self.rng.getrandbits(13)
        if roll < 0.35 or roll > 0.95:
            lines.append(f"mov.u32 %k0, {clamp};")        # written once: read as a constant
            return lines, b, "%k0"
        if roll > 0.9:
            lines.append(f"and.b32 %t1, {self.value()}, 0x1f1f;")
            return lines, b, "%t1"
        return lines, b, str(clamp)

    def shuffle(self) -> list[str]:
        """A warp reduction, scan or broadcast, or a shuffle of random operands."""
        kind = self.rng.choice(["reduce", "scan", "broadcast", "random", "random"])
        mask_lines, members = self.member_mask()
        value = self.value()
        if kind == "reduce":
            mode = self.rng.choice(["down", "bfly"])
            op = self.rng.choice(TREE_OPS)
            lines = list(mask_lines)
            for offset in self.rng.choice([[2, 1], [1, 2], [2], [1]]):
                lines += [f"shfl.sync.{mode}.b32 %t2, {value}, {offset}, 31, {members};",
                          f"{op} {value}, {value}, %t2;"]
            return lines
        if kind == "scan":
            lines = list(mask_lines)
            for offset in [1, 2]:
                lines += [f"shfl.sync.up.b32 %t2|%p4, {value}, {offset}, 0, {members};",
                          f"@%p4 add.s32 {value}, {value}, %t2;"]
            return lines
        if kind == "broadcast":
            lane = self.rng.choice(["0", "1", "3", "%t0"])
            lines = [f"and.b32 %t0, {self.value()}, 3;"] if lane == "%t0" else []
            return mask_lines + lines + [
                f"shfl.sync.idx.b32 %t2, {value}, {lane}, 31, {members};",
                self.fold(self.value(), "%t2")]
        mode = self.rng.choice(["up", "down", "bfly", "idx"])
        lines, b, c = self.shuffle_operands(mode)
        lines = mask_lines + lines
        if self.rng.random() < 0.5:
            use = self.rng.choice([f"selp.b32 %t2, %t2, {self.source()}, %p4;",
                                   f"@!%p4 xor.b32 %t2, %t2, {self.immediate()};"])
            return lines + [f"shfl.sync.{mode}.b32 %t2|%p4, {value}, {b}, {c}, {members};",
                            use, self.fold(self.value(), "%t2")]
        return lines + [f"shfl.sync.{mode}.b32 %t2, {value}, {b}, {c}, {members};",
                        self.fold(self.value(), "%t2")]

    def vote(self, members: str | None = None) -> list[str]:
        """A ballot or any/all/uni of a data-dependent predicate (or `activemask`)."""
        mask_lines, chosen = ([], members) if members else self.member_mask()
        lines = mask_lines + self.condition()
        negate = "!" if self.rng.random() < 0.3 else ""
        kind = self.rng.choice(["ballot", "ballot", "any", "all", "uni", "activemask"])
        if kind == "activemask":
            return lines[:len(mask_lines)] + ["activemask.b32 %t2;", self.fold(self.value(),
                                                                               "%t2")]
        if kind == "ballot":
            lines.append(f"vote.sync.ballot.b32 %t2, {negate}%p3, {chosen};")
            if self.rng.random() < 0.3:
                lines.append("popc.b32 %t2, %t2;")
            return lines + [self.fold(self.value(), "%t2")]
        return lines + [f"vote.sync.{kind}.pred %p4, {negate}%p3, {chosen};",
                        f"selp.u32 %t2, {self.immediate()}, {self.source()}, %p4;",
                        self.fold(self.value(), "%t2")]

    def divergent_vote(self) -> list[str]:
        """`if (cond) { m = __activemask(); ... __ballot_sync(m, p) ... }`."""
        skip = self.label("branch")
        return self.condition() + [f"@%p3 bra {skip};", "activemask.b32 %k2;"] + \
            self.vote("%k2") + [f"{skip}:"]

    def uniform_branch(self) -> list[str]:
        """`if (__any_sync(-1, p)) { ... }`: the whole warp goes one way, so a shuffle is
        still converged inside."""
        skip = self.label("uniform")
        body = self.shuffle() if self.converged else self.arithmetic()
        return self.condition() + ["vote.sync.any.pred %p4, %p3, -1;", f"@!%p4 bra {skip};"] + \
            body + [f"{skip}:"]

    # global memory -------------------------------------------------------------------------

    def global_atomic_op(self) -> tuple[str, str]:
        return self.any_op() if self.shape.single_warp else self.shape.global_op

    def global_atomic(self) -> list[str]:
        """An atomic on a word of `atomics`: any op and its old value with one warp, else the
        kernel's one commuting op with the old value unread."""
        op, type_name = self.global_atomic_op()
        lines = ["ld.param.u64 %rd2, [fuzz_param_2];", "cvta.to.global.u64 %rd2, %rd2;"]
        if self.rng.random() < 0.3:
            address = f"[%rd2+{4 * self.rng.randrange(GLOBAL_ATOMIC_WORDS)}]"
        else:
            lines += [f"and.b32 %t0, {self.value()}, {GLOBAL_ATOMIC_WORDS - 1};",
                      "mul.wide.u32 %rd3, %t0, 4;", "add.s64 %rd3, %rd2, %rd3;"]
            address = "[%rd3]"
        atomic = self.atomic_line(".global", op, type_name, address,
                                  keep_old=self.shape.single_warp)
        return lines[:2] + self.guarded(lines[2:] + atomic)

    def global_store(self) -> list[str]:
        """Thread g stores a byte (or halfword) of `bytes`: neighbours share its words."""
        size = self.shape.global_store_bytes
        value = self.value()
        return ["ld.param.u64 %rd2, [fuzz_param_3];", "cvta.to.global.u64 %rd2, %rd2;",
                f"mul.wide.s32 %rd3, %r1, {size};", "add.s64 %rd3, %rd2, %rd3;",
                f"{self.rng.choice(['', '', '@%p5 '])}st.global.u{8 * size} [%rd3], {value};"]

    # arithmetic ----------------------------------------------------------------------------

    def arithmetic(self) -> list[str]:
        roll = self.rng.random()
        if roll < 0.55:
            return [f"{self.rng.choice(BINARY_OPS)} {self.value()}, {self.value()}, "
                    f"{self.source()};"]
        if roll < 0.7:
            op = self.rng.choice(["shl.b32", "shr.u32", "shr.s32"])
            amount = self.rng.choice(["1", "3", "8", "31", "32", "33", self.value()])
            return [f"{op} {self.value()}, {self.value()}, {amount};"]
        if roll < 0.8:
            return [f"mad.lo.s32 {self.value()}, {self.value()}, {self.source()}, "
                    f"{self.source()};"]
        if roll < 0.9:
            return self.condition() + [f"selp.b32 {self.value()}, {self.source()}, "
                                       f"{self.source()}, %p3;"]
        return [f"mov.u32 {self.value()}, {self.rng.choice(['%tid.x', '%laneid', '%ctaid.x'])};"]

    def diamond(self) -> list[str]:
        """if/else on data or the thread index: arithmetic, a vote of the lanes inside, a
        global atomic or byte store."""
        other, join = self.label("else"), self.label("join")

        def side() -> list[str]:
            lines = []
            for _ in range(self.rng.randint(1, 2)):
                maker = self.rng.choices([self.arithmetic, self.global_atomic,
                                          self.global_store, self.inner_vote],
                                         [6, 1, 1, 2])[0]
                lines += maker()
            return lines

        then = side()
        if self.rng.random() < 0.4:
            return self.condition() + [f"@%p3 bra {join};"] + then + [f"{join}:"]
        return self.condition() + [f"@%p3 bra {other};"] + then + [f"bra {join};", f"{other}:"] + \
            side() + [f"{join}:"]

    def loop(self) -> list[str]:
        """A loop of 0 to 3 iterations as the data says, so lanes leave it at different
        times: atomics, votes of the lanes still in it, byte stores, arithmetic."""
        top, done = self.label("loop"), self.label("loop_done")
        body = []
        for _ in range(self.rng.randint(1, 2)):
            body += self.rng.choices([self.global_atomic, self.inner_vote, self.arithmetic,
                                      self.global_store], [3, 2, 2, 1])[0]()
        return [f"and.b32 %c0, {self.value()}, 3;", "setp.eq.s32 %p4, %c0, 0;",
                f"@%p4 bra {done};", f"{top}:", *body, "sub.s32 %c0, %c0, 1;",
                "setp.ne.s32 %p4, %c0, 0;", f"@%p4 bra {top};", f"{done}:"]

    def inner_vote(self) -> list[str]:
        return ["activemask.b32 %k2;"] + self.vote("%k2")

    # phases and the kernel -------------------------------------------------------------------

    def roles(self) -> list:
        """What each shared array does in the next phase (one role each, or none)."""
        state, shape, rng = self.state, self.shape, self.rng
        words = [(self.share, 3), (self.leader_write, 1)]
        if state.words:
            words.append((self.gather, 4))
        counters = [(self.init_counters, 1 if state.counters else 4)]
        if state.counters:
            counters += [(self.shared_atomics, 4), (self.read_counters, 2)]
        byte_roles = [(self.init_bytes, 1), (self.store_bytes, 2)]
        if state.bytes:
            byte_roles.append((self.read_bytes, 3))
        chosen = []
        for roles, chance in ((words, 0.6), (counters, 0.6), (byte_roles, 0.45)):
            if rng.random() < chance:
                makers, weights = zip(*roles)
                chosen.append(rng.choices(makers, weights)[0])
        free = [(self.arithmetic, 3), (self.vote, 2), (self.divergent_vote, 1),
                (self.global_atomic, 2), (self.global_store, 1), (self.diamond, 2),
                (self.uniform_branch, 1), (self.loop, 2)]
        if self.converged:
            free.append((self.shuffle, 4))
        makers, weights = zip(*free)
        chosen += rng.choices(makers, weights, k=rng.randint(0, 3))
        rng.shuffle(chosen)
        if self.leader_write in chosen and self.converged and rng.random() < 0.7:
            chosen.insert(chosen.index(self.leader_write), self.shuffle)  # a block reduction
        return chosen

    def barrier(self) -> list[str]:
        """`__syncthreads()`, or one in each side of a branch every warp takes as a whole
        (PTX's barrier 0 counts arrivals, whichever `bar.sync 0` they are at)."""
        if self.rng.random() < 0.8:
            return [self.rng.choice(["bar.sync 0;", "bar.sync 0;", "barrier.sync 0;"])]
        other, join = self.label("other_side"), self.label("sides_join")
        if self.rng.random() < 0.5:
            condition = ["shr.u32 %t0, %r0, 2;", f"setp.{self.rng.choice(['lo', 'eq', 'ne'])}"
                         f".u32 %p3, %t0, {self.rng.randrange(self.shape.warps + 1)};"]
        else:                                        # alike in a warp: a vote
            condition = self.condition() + ["vote.sync.all.pred %p3, %p3, -1;"]
        return condition + [f"@%p3 bra {other};", *self.arithmetic(), "bar.sync 0;",
                            *self.arithmetic(), f"bra {join};", f"{other}:",
                            *self.arithmetic(), "barrier.sync 0;", *self.arithmetic(),
                            f"{join}:"]

    def early_exit(self) -> list[str]:
        """Some threads return before the next phases: whole warps (shuffles go on), or as
        the data says.  Barriers wait for the threads that have not exited."""
        self.exited = True
        if self.rng.random() < 0.5:
            return ["shr.u32 %t0, %r0, 2;",
                    f"setp.eq.u32 %p3, %t0, {self.rng.randrange(self.shape.warps)};", "@%p3 ret;"]
        self.converged = False
        return self.condition() + ["@%p3 ret;"]

    def phase(self) -> list[str]:
        if self.state.words >= self.shape.block and self.rng.random() < 0.15:
            return self.spend(self.tree)
        lines = []
        for maker in self.roles():
            lines += self.spend(maker)
        return lines

    def spend(self, maker) -> list[str]:
        """`maker()`'s lines if the slot budget allows them; else none, and what the kernel
        knows of its arrays is as it was (a store left out defines nothing)."""
        before = (copy.deepcopy(self.state), self.exited, self.converged)
        lines = maker()
        cost = sum(slot_cost(line) for line in lines)
        if cost > self.budget:
            self.state, self.exited, self.converged = before
            return []
        self.budget -= cost
        return lines

    def prologue(self) -> list[str]:
        lines = ["ld.param.u64 %rd0, [fuzz_param_0];", "cvta.to.global.u64 %rd0, %rd0;",
                 "mov.u32 %r0, %tid.x;", "mov.u32 %t0, %ctaid.x;", "mov.u32 %t1, %ntid.x;",
                 "mad.lo.s32 %r1, %t0, %t1, %r0;", "ld.param.u32 %t2, [fuzz_param_4];",
                 self.rng.choice(["setp.lt.s32 %p5, %r1, %t2;", "setp.gt.u32 %p5, %t2, %r1;"]),
                 f"mul.wide.s32 %rd1, %r1, {4 * self.shape.row_in};",
                 "add.s64 %rd1, %rd0, %rd1;", "ld.global.u32 %v0, [%rd1];"]
        if self.shape.row_in > 1:
            lines.append("ld.global.u32 %v1, [%rd1+4];")
        else:
            lines.append(f"{self.rng.choice(BINARY_OPS)} %v1, %v0, {self.immediate()};")
        lines.append(self.rng.choice(["xor.b32 %v2, %v0, %r0;", "mov.u32 %v2, %r1;",
                                      "add.s32 %v2, %v1, %r0;", "mov.u32 %v2, %laneid;"]))
        if self.rng.random() < 0.5:                  # nvcc's `i < n ? in[i] : 0`
            lines.append(f"selp.b32 %v0, %v0, {self.immediate()}, %p5;")
        return lines

    def epilogue(self) -> list[str]:
        lines = []
        if self.rng.random() < 0.25:                 # some threads return before storing
            lines += self.condition() + ["@%p3 ret;"]
        stored = self.rng.sample(range(VALUES), min(self.shape.row_out, VALUES))
        for index in range(VALUES):
            if index not in stored:
                lines.append(self.fold(f"%v{self.rng.choice(stored)}", f"%v{index}"))
        lines += ["ld.param.u64 %rd4, [fuzz_param_1];", "cvta.to.global.u64 %rd4, %rd4;",
                  f"mul.wide.s32 %rd5, %r1, {4 * self.shape.row_out};",
                  "add.s64 %rd4, %rd4, %rd5;"]
        for word, index in enumerate(stored):
            lines.append(f"st.global.u32 [%rd4{'+' + str(4 * word) if word else ''}], "
                         f"%v{index};")
        return lines + ["ret;"]

    def kernel(self) -> str:
        prologue, epilogue = self.prologue(), self.epilogue()
        self.budget -= sum(slot_cost(line) for line in prologue + epilogue)
        body = []
        for number in range(self.rng.randint(2, 4)):
            if number:
                body += self.spend(self.barrier) or \
                    self.spend(lambda: ["bar.sync 0;"]) or ["bar.sync 0;"]   # never left out
            if self.rng.random() < 0.12:
                body += self.spend(self.early_exit)
            body += self.phase()
        lines = prologue + body + epilogue
        text = "\n".join(line if line.endswith(":") else f"\t{line}" for line in lines)
        shape = self.shape
        return f""".version 9.0
.target sm_80
.address_size 64

.visible .entry {KERNEL}(
\t.param .u64 fuzz_param_0,
\t.param .u64 fuzz_param_1,
\t.param .u64 fuzz_param_2,
\t.param .u64 fuzz_param_3,
\t.param .u32 fuzz_param_4
)
{{
\t.reg .pred %p<6>;
\t.reg .b32 %r<2>;
\t.reg .b32 %v<{VALUES}>;
\t.reg .b32 %t<5>;
\t.reg .b32 %k<3>;
\t.reg .b32 %c<1>;
\t.reg .b16 %h<2>;
\t.reg .b64 %rd<6>;
\t.shared .align 4 .b8 fuzz_words[{4 * shape.block}];
\t.shared .align 4 .b8 fuzz_counts[{4 * shape.counters}];
\t.shared .align 4 .b8 fuzz_bytes[{4 * shape.byte_words}];

{text}
}}
"""


def slot_cost(line: str) -> int:
    """Roughly the machine instructions a PTX line becomes (docs/ptx.md)."""
    opcode = line.split()[1] if line.startswith("@") else line.split(" ", 1)[0]
    if line.endswith(":") or opcode.startswith("cvta.to") or opcode == "mov.u32" and \
            " fuzz_" in line:
        return 0
    if opcode.startswith("shfl"):
        _, b, c, members = [operand.strip(" ;") for operand in line.split(",")[-4:]]
        return 6 + 3 * (not b.lstrip("-").isdigit()) + 6 * c.startswith("%") + \
            (members.startswith("%"))
    if opcode.startswith("vote") and ".pred" in opcode:
        return 4
    return {"popc.b32": 11, "mul.wide.s32": 2, "mul.wide.u32": 2,
            "cvta.shared.u64": 2}.get(opcode, 1)


def random_word(rng: random.Random) -> int:
    return rng.choice(EDGE_WORDS) if rng.random() < 0.3 else rng.getrandbits(32)


def generate_case(seed: int) -> CooperativeCase:
    """The kernel and launch of `seed`: the same seed always gives the same case."""
    rng = random.Random(seed)
    shape = random_shape(rng)
    threads = shape.threads
    bound = rng.choice([threads, threads, threads - 1, rng.randint(0, threads)])
    buffers = {"in": [random_word(rng) for _ in range(threads * shape.row_in)],
               "out": [random_word(rng) for _ in range(threads * shape.row_out)],
               "atomics": [random_word(rng) for _ in range(GLOBAL_ATOMIC_WORDS)],
               "bytes": [random_word(rng)
                         for _ in range(-(-threads * shape.global_store_bytes // 4))]}
    ptx = CooperativeWriter(rng, shape).kernel()
    return CooperativeCase(seed, ptx, shape.grid, shape.block, buffers,
                           ["in", "out", "atomics", "bytes", bound])
