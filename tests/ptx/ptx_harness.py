"""Helpers for the loader's tests: build small PTX kernels, run them, compare two simulators.

`run_ptx` compiles PTX text, lays out a launch and runs it on the reference interpreter
(`qwengpu.runtime.launch.run_launch_sim`) and on the independent ISA model in `ptx_isa_model.py`;
the two must agree on the final memory and on the trap before anything else is checked.

`run_rows` runs an element-wise kernel over many input rows: thread t reads its row from
`in[t * inputs ...]` into `%a0, %a1, ...` (32-bit words), runs the body, and stores
`%o0, %o1, ...` into `out[t * outputs ...]`.  Rows are split over as many launches as the
126 words of memory and the 8 warps require.  Expected values are computed by the tests
themselves from PTX's semantics in plain Python.  Both take `machine`, the `-P` parameters of
another instance of QwenGPU (e.g. `{"PROG_WORDS": 256}` for a kernel of more slots).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pytest

from qwengpu.errors import PtxError
from qwengpu.ptx.compile import compile_kernel
from qwengpu.ptx.parser import parse_ptx
from qwengpu.runtime.launch import (LaunchResult, launch_for_program, machine_limits,
                                    run_launch_sim)
from qwengpu.runtime.machine_state import load_machine

from ptx_isa_model import Windows, run_model

M32 = 0xFFFF_FFFF
M64 = (1 << 64) - 1
HEADER = ".version 9.0\n.target sm_80\n.address_size 64\n\n"

EDGE_WORDS = [0, 1, 2, 3, 5, 31, 32, 33, 0xFF, 0xFFFF, 0x1_0000, 0x1234_5678, 0x7FFF_FFFF,
              0x8000_0000, 0x8000_0001, 0xFFFF_FFFE, 0xFFFF_FFFF, 0xDEAD_BEEF]


def s32(value: int) -> int:
    value &= M32
    return value - (1 << 32) if value >> 31 else value


def s64(value: int) -> int:
    value &= M64
    return value - (1 << 64) if value >> 63 else value


def sext(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


# PTX's 32-bit binary operations on unsigned words, before the result is masked to 32 bits.
BINARY_32 = {
    "add.s32": lambda a, b: a + b,
    "add.u32": lambda a, b: a + b,
    "sub.s32": lambda a, b: a - b,
    "mul.lo.s32": lambda a, b: a * b,
    "mul.lo.u32": lambda a, b: a * b,
    "mul.hi.s32": lambda a, b: (s32(a) * s32(b)) >> 32,
    "mul.hi.u32": lambda a, b: (a * b) >> 32,
    "and.b32": lambda a, b: a & b,
    "or.b32": lambda a, b: a | b,
    "xor.b32": lambda a, b: a ^ b,
    "min.s32": lambda a, b: min(s32(a), s32(b)),
    "min.u32": min,
    "max.s32": lambda a, b: max(s32(a), s32(b)),
    "max.u32": max,
}


@dataclass
class Run:
    result: LaunchResult
    words: dict[str, list[int]]        # final buffers as unsigned words


@functools.lru_cache(maxsize=64)
def compile_ptx(ptx: str, kernel: str | None = None, machine: tuple = ()):
    """The kernel's machine code for the default machine, or for the one of the `-P`
    parameters `machine` ((name, value) pairs)."""
    if not machine:
        return compile_kernel(parse_ptx(ptx, "test.ptx"), kernel)
    limits = machine_limits(load_machine(None, dict(machine)))
    return compile_kernel(parse_ptx(ptx, "test.ptx"), kernel, limits)


def run_ptx(ptx: str, buffers: dict[str, list[int]], args: list, grid: int = 1,
            block: int = 4, kernel: str | None = None, shared_bytes: int = 0,
            machine: dict[str, int] | None = None) -> Run:
    parameters = tuple(sorted((machine or {}).items()))
    program = compile_ptx(ptx, kernel, parameters)
    spec = load_machine(None, dict(parameters)) if parameters else None
    launch = launch_for_program(program, grid, block, buffers, args,
                                limits=machine_limits(spec) if spec else None,
                                shared_bytes=shared_bytes)
    result = run_launch_sim(launch, machine=spec)
    windows = Windows(launch.windows.shared_words, launch.windows.local_words,
                      launch.windows.shared_bases, launch.windows.local_bases)
    model = run_model(launch.instructions, launch.memory, launch.params, grid, block,
                      windows=windows)
    assert model.memory == result.memory, "the interpreter and the ISA model disagree"
    sim_trap = None if result.trap is None else (result.trap.code, result.trap.warp,
                                                  result.trap.lane, result.trap.pc)
    assert model.trap == sim_trap, f"traps differ: model {model.trap}, interpreter {sim_trap}"
    assert model.records == len(result.records)
    words = {name: result.memory[region.base_word:region.base_word + region.words]
             for name, region in launch.buffers.items()}
    return Run(result, words)


REGISTERS = """\
    .reg .pred %p<8>;
    .reg .pred %q<4>;
    .reg .b16 %h<12>;
    .reg .b32 %x<16>;
    .reg .b64 %y<12>;
    .reg .b64 %rd<8>;
    .reg .b32 %t;
"""


def row_kernel(body: str, inputs: int, outputs: int, extra_params: str = "") -> str:
    """PTX of an element-wise kernel (see the module docstring)."""
    loads = "\n".join(f"    ld.global.u32 %a{j}, [%rd3+{4 * j}];" for j in range(inputs))
    stores = "\n".join(f"    st.global.u32 [%rd5+{4 * j}], %o{j};" for j in range(outputs))
    return HEADER + f""".visible .entry rows(.param .u64 rows_in, .param .u64 rows_out{extra_params})
{{
{REGISTERS}    .reg .b32 %a<{max(inputs, 1)}>;
    .reg .b32 %o<{max(outputs, 1)}>;
    ld.param.u64 %rd0, [rows_in];
    ld.param.u64 %rd1, [rows_out];
    cvta.to.global.u64 %rd0, %rd0;
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %t, %tid.x;
    mul.wide.u32 %rd2, %t, {4 * inputs};
    add.s64 %rd3, %rd0, %rd2;
{loads}
{body}
    mul.wide.u32 %rd4, %t, {4 * outputs};
    add.s64 %rd5, %rd1, %rd4;
{stores}
    ret;
}}
"""


def run_rows(body: str, rows: list[tuple[int, ...]], outputs: int,
             extra_args: list | None = None, extra_params: str = "",
             machine: dict[str, int] | None = None, per_launch: int | None = None
             ) -> list[tuple[int, ...]]:
    """Run `body` on every row (`per_launch` rows a launch, default as many as the memory
    holds); returns one tuple of `outputs` unsigned words per row."""
    inputs = len(rows[0])
    ptx = row_kernel(body, inputs, outputs, extra_params)
    per_launch = per_launch or min(32, 120 // (inputs + outputs))
    results = []
    for start in range(0, len(rows), per_launch):
        chunk = rows[start:start + per_launch]
        flat = [word & M32 for row in chunk for word in row]
        run = run_ptx(ptx, {"in": flat, "out": [0] * (outputs * len(chunk))},
                      ["in", "out", *(extra_args or [])], block=len(chunk), machine=machine)
        assert run.result.trap is None, run.result.trap.message
        out = run.words["out"]
        results += [tuple(out[outputs * i:outputs * (i + 1)]) for i in range(len(chunk))]
    return results


def pairs(values: list[int] | None = None, extra: int = 24, seed: int = 1) -> list[tuple]:
    """Edge values against each other (a diagonal band of them) plus seeded random pairs."""
    import random

    values = values or EDGE_WORDS
    chosen = [(a, b) for i, a in enumerate(values) for j, b in enumerate(values)
              if (i + j) % 3 == 0 or i == j]
    rng = random.Random(seed)
    chosen += [(rng.getrandbits(32), rng.getrandbits(32)) for _ in range(extra)]
    return chosen


REFUSED_LINE = 11


def refusal_at_line(line: str) -> PtxError:
    """The error of compiling a kernel whose line 11 is `line` (`.f32` registers `%f0..3` and
    `.f64` ones `%fd0..3` declared): it must be refused there."""
    text = (HEADER + ".visible .entry k()\n{\n    .reg .f32 %f<4>;\n    .reg .f64 %fd<4>;\n\n\n"
            f"    {line}\n    ret;\n}}\n")
    with pytest.raises(PtxError) as caught:
        compile_ptx(text, "k")
    assert caught.value.loc.line == REFUSED_LINE, caught.value.loc
    return caught.value
