"""Seeded random kernels that call device functions, on launches of 1 to 3 dimensions.

`generate_call_case(seed)` writes a kernel in the style of `ptx_generator.py` (its
statements, its prologue and epilogue) with, besides:

- one or two `.func`s of two `.param` arguments and a `.param` result, whose bodies are
  random arithmetic, compares, selects, if/else and an early `ret` (the result stored before
  it); the second calls the first; both declare registers of the kernel's names (`%v0`,
  `%p0`, `%t0`), so that the loader's renaming per call site is tested;
- one to three call sites in the kernel (two when there are two functions), nvcc's way (`{ .param .b32 a0; ... st.param ...
  call.uni (r0), f, (a0, a1); ld.param ... }`), outside loops;
- a grid and a block of 1 to 3 dimensions (at most 8 warps of 4 lanes), the thread's flat
  index g computed from all of `%tid`, `%ntid`, `%ctaid`, `%nctaid` .x/.y/.z, and special
  registers read by the body on any axis.

`ptx_reference.py` runs such a kernel with a real call stack; the loader inlines the calls.
The bodies are kept shorter than `ptx_generator`'s so that every kernel fits the machine
(15 registers, 128 instruction slots) with its calls inlined.
"""

from __future__ import annotations

import random
import re

from ptx_generator import (KERNEL, LANES, MAX_WARPS, MEMORY_WORDS, VALUES, FuzzCase,
                           KernelWriter, random_word)

KERNEL_INSTRUCTIONS = 24          # PTX instructions in the kernel's random body
FUNCTION_INSTRUCTIONS = 7         # and in a function's
FUNCTION_VALUES = 3               # the caller's values and predicates stay live around a
FUNCTION_PREDICATES = 2           # call: a function has fewer of its own
MAX_CALL_SITES = 3
_SPECIAL = re.compile(r"%(tid|ntid|ctaid|nctaid)\.x\b")
FLAT_INDEX = ["mov.u32 %v1, %ctaid.z;", "mov.u32 %v2, %nctaid.y;", "mov.u32 %v3, %ctaid.y;",
              "mad.lo.s32 %v1, %v1, %v2, %v3;", "mov.u32 %v2, %nctaid.x;",
              "mov.u32 %v3, %ctaid.x;", "mad.lo.s32 %v1, %v1, %v2, %v3;",
              "mov.u32 %v2, %ntid.x;", "mul.lo.s32 %v1, %v1, %v2;", "mov.u32 %v2, %ntid.y;",
              "mul.lo.s32 %v1, %v1, %v2;", "mov.u32 %v2, %ntid.z;", "mul.lo.s32 %v1, %v1, %v2;",
              "mov.u32 %v2, %tid.z;", "mov.u32 %v3, %ntid.y;", "mov.u32 %v4, %tid.y;",
              "mad.lo.s32 %v2, %v2, %v3, %v4;", "mov.u32 %v3, %ntid.x;",
              "mov.u32 %v4, %tid.x;", "mad.lo.s32 %v2, %v2, %v3, %v4;",
              "add.s32 %v0, %v1, %v2;"]


class FunctionWriter(KernelWriter):
    """The body of one `.func`: straight-line work and branches on three values."""

    def value(self) -> str:
        return f"%v{self.rng.randrange(FUNCTION_VALUES)}"

    def predicate(self) -> str:
        return f"%p{self.rng.randrange(FUNCTION_PREDICATES)}"

    def early_return(self) -> list[str]:
        return [f"st.param.b32 [func_retval0], {self.value()};", f"@{self.predicate()} ret;"]

    def statement(self, depth: int, loops: int) -> list[str]:
        kinds = [(self.arithmetic, 55), (self.compare, 12), (self.select, 10),
                 (self.early_return, 5)]
        if depth < 2 and self.remaining > 4:
            kinds.append((lambda: self.if_else(depth, loops), 10))
        makers, weights = zip(*kinds)
        return self.rng.choices(makers, weights)[0]()

    def function(self, name: str, calls: str | None) -> str:
        self.remaining = FUNCTION_INSTRUCTIONS
        lines = [f"ld.param.u32 %v0, [{name}_param_0];", f"ld.param.u32 %v1, [{name}_param_1];",
                 f"{self.rng.choice(['xor.b32', 'add.s32', 'sub.s32'])} %v2, %v0, %v1;"]
        lines += [f"{self.rng.choice(['setp.lt.s32', 'setp.gt.u32', 'setp.eq.s32'])} "
                  f"%p{index}, {self.value()}, {self.source()};"
                  for index in range(FUNCTION_PREDICATES)]
        if calls is not None:
            lines += call_site(self.rng, calls, FUNCTION_VALUES)
        lines += self.statements(0, 0, 20)
        lines += [f"st.param.b32 [func_retval0], {self.value()};", "ret;"]
        body = "\n".join(line if line.endswith(":") else f"\t{line}" for line in lines)
        return (f".func (.param .b32 func_retval0) {name}(.param .b32 {name}_param_0, "
                f".param .b32 {name}_param_1)\n{{\n\t.reg .pred %p<4>;\n"
                f"\t.reg .b32 %v<{FUNCTION_VALUES}>;\n\t.reg .b32 %t<2>;\n\n{body}\n}}\n")


def call_site(rng: random.Random, function: str, values: int) -> list[str]:
    """nvcc's call sequence: arguments stored into .param variables, the result loaded."""
    first = f"%v{rng.randrange(values)}"
    second = f"%v{rng.randrange(values)}" if rng.random() < 0.7 else str(rng.randrange(-9, 99))
    return ["{", ".param .b32 a0;", ".param .b32 a1;", ".param .b32 r0;",
            f"st.param.b32 [a0], {first};", f"st.param.b32 [a1], {second};",
            f"call.uni (r0), {function}, (a0, a1);",
            f"ld.param.b32 %v{rng.randrange(values)}, [r0];", "}"]


class CallingWriter(KernelWriter):
    """The kernel: `ptx_generator`'s, with call sites and specials of every axis."""

    def __init__(self, rng, in_words, row_in, row_out, functions: list[str]):
        super().__init__(rng, in_words, row_in, row_out)
        self.functions, self.sites = functions, 0
        self.remaining = KERNEL_INSTRUCTIONS

    def call(self) -> list[str]:
        self.sites += 1
        return call_site(self.rng, self.rng.choice(self.functions), VALUES)

    def statement(self, depth: int, loops: int) -> list[str]:
        # a call of outer inlines helper too: fewer sites, so that the program fits
        most = MAX_CALL_SITES - (len(self.functions) - 1)
        if loops == 0 and self.sites < most and self.rng.random() < 0.12:
            return self.call()
        lines = super().statement(depth, loops)
        return [_SPECIAL.sub(lambda m: f"%{m.group(1)}.{self.rng.choice('xyz')}", line)
                for line in lines]

    def prologue(self) -> list[str]:
        lines = super().prologue()
        start = lines.index("mov.u32 %v1, %ctaid.x;")
        return lines[:start] + FLAT_INDEX + lines[start + 4:]

    def kernel(self) -> str:
        text = super().kernel()
        if self.sites == 0:                 # every kernel calls at least once
            lines = text.split("\n")
            exit_line = lines.index("$L__exit:")
            lines[exit_line:exit_line] = [f"\t{line}" for line in self.call()]
            text = "\n".join(lines)
        return text


def random_shape(rng: random.Random) -> tuple[list[int], list[int]]:
    """A block of up to 16 threads and a grid within 8 warps, each of 1 to 3 dimensions."""
    while True:
        block = [rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 2)]
        threads = block[0] * block[1] * block[2]
        if threads <= 16:
            break
    blocks = MAX_WARPS // -(-threads // LANES)
    while True:
        grid = [rng.randint(1, 2), rng.randint(1, 2), rng.randint(1, 2)]
        if grid[0] * grid[1] * grid[2] <= blocks:
            break
    dimensions = rng.choice([1, 2, 3, 3])
    return grid[:dimensions], block[:dimensions] if dimensions > 1 else [threads]


def generate_call_case(seed: int) -> FuzzCase:
    """The kernel and launch of `seed` (the same seed always gives the same case)."""
    rng = random.Random(f"calls-{seed}")
    grid, block = random_shape(rng)
    threads = 1
    for count in grid + block:
        threads *= count
    words_per_thread = min(7, MEMORY_WORDS // threads)
    row_in = rng.randint(1, min(3, words_per_thread - 1))
    row_out = rng.randint(1, min(4, words_per_thread - row_in))
    bound = rng.choice([threads, threads, threads - 1, rng.randint(0, threads)])
    buffers = {"in": [random_word(rng) for _ in range(threads * row_in)],
               "out": [random_word(rng) for _ in range(threads * row_out)]}
    names = ["helper"] + (["outer"] if rng.random() < 0.5 else [])
    functions = FunctionWriter(rng, 0, 1, 1).function("helper", None)
    if len(names) == 2:
        functions += FunctionWriter(rng, 0, 1, 1).function("outer", "helper")
    kernel = CallingWriter(rng, len(buffers["in"]), row_in, row_out, names).kernel()
    header, entry = kernel.split(".visible .entry", 1)
    ptx = header + functions + "\n.visible .entry" + entry
    return FuzzCase(seed, ptx, grid if len(grid) > 1 else grid[0],
                    block if len(block) > 1 else block[0], buffers, ["in", "out", bound])


__all__ = ["KERNEL", "generate_call_case"]
