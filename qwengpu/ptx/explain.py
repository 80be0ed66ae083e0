"""What the loader refuses, explained in CUDA terms: the detail its messages add.

- `call_detail`: a `call` through a register is an indirect call (a function pointer, a
  virtual function), which cannot be inlined (`qwengpu.ptx.inline` inlines direct ones).
- `unrolled_loop_detail`: where a kernel needs more registers than the machine has (and
  more than its local memory can take as spills), the loop
  nvcc unrolled around that point, if it did: a PTX loop there with no `.pragma "nounroll"`
  (nvcc writes one for a loop it keeps rolled, `#pragma unroll 1`) that reads one pointer at
  several offsets (the iterations laid side by side), named by the CUDA line of its closing
  branch (the `for`); or, where the PTX has no loop, a `for`/`while` of the CUDA source around
  the line (unrolled completely).  Then `#pragma unroll 1` before it is the fix to try.

Each works from the kernel's PTX (`qwengpu.ptx.ir`) and its `CudaLines`; none can raise.
"""

from __future__ import annotations

import os
import re

from qwengpu.errors import Location
from qwengpu.ptx import cfg, ir
from qwengpu.ptx.cuda_lines import CudaLines

_LOOP_HEADER = re.compile(r"^\s*(?:\}\s*)?(for|while)\s*\(|^\s*do\b")
_ROLLED = re.compile(r"#\s*pragma\s+unroll\s+1\b")


def call_detail(ins: ir.Instruction) -> str:
    """Why a call through a register (`call (r), %rd1, (a), prototype`) cannot run."""
    return ("indirect calls (function pointers, virtual functions) are not supported by "
            "QwenGPU, which has no call instruction: call the function by its name, and the "
            "loader inlines it (qwengpu/ptx/inline.py)")


# ---- register pressure --------------------------------------------------------------------------


def unrolled_loop_detail(kernel: ir.Kernel, ptx_line: int, lines: CudaLines | None
                         ) -> str | None:
    """`nvcc unrolled the loop at kernel.cu:4 ...` for a register shortage at `ptx_line`, or
    None when no unrolled loop can be seen there."""
    if lines is None:
        return None
    blocks = cfg.blocks(kernel.body)
    at = next((index for index, block in enumerate(blocks)
               if any(statement.loc.line == ptx_line for statement in block.statements)), None)
    if at is None:
        return None
    natural, _, _ = cfg.loops(blocks)
    around = [body for body in natural.values() if at in body]
    if around:
        body = min(around, key=len)
        if not _unrolled(blocks, body, lines):
            return None
        tails = [blocks[index].statements[-1] for index in sorted(body)
                 if blocks[index].statements and blocks[index].statements[-1].opcode == "bra"]
        loop = next((tail.cuda_loc for tail in reversed(tails) if tail.cuda_loc), None)
        how = ""
    else:
        where = lines.at(ptx_line)
        loop = _source_loop_around(where, lines) if where is not None else None
        how = " completely"
    if loop is None:
        return None
    header = (lines.source_line(loop) or "").strip()
    shown = f" ({header})" if header else ""
    return (f"nvcc unrolled the loop at {os.path.basename(loop.file)}:{loop.line}{shown}{how}, "
            "which keeps several iterations' values in registers at once: put `#pragma unroll "
            "1` before the loop to keep it rolled")


def _unrolled(blocks: list[cfg.Block], body: set[int], lines: CudaLines) -> bool:
    statements = [statement for index in body for statement in blocks[index].statements]
    first = min(statement.loc.line for statement in statements) if statements else 0
    last = max(statement.loc.line for statement in statements) if statements else 0
    if any(first - 3 <= line <= last for line in lines.nounroll_lines):
        return False
    offsets: dict[str, set[int]] = {}
    for statement in statements:
        for operand in statement.operands:
            if isinstance(operand, ir.Memory) and isinstance(operand.base, ir.Register) and \
                    statement.opcode in ("ld", "st"):
                offsets.setdefault(operand.base.name, set()).add(operand.offset)
    return any(len(seen) > 1 for seen in offsets.values())


def _source_loop_around(where: Location, lines: CudaLines) -> Location | None:
    """The innermost `for`/`while` of the CUDA source whose body holds line `where` (braces
    counted line by line), unless `#pragma unroll 1` keeps it rolled."""
    text = lines.source_text(where)
    if text is None:
        return None
    source = [line.split("//")[0] for line in text.splitlines()]

    def loop(number: int) -> Location | None:
        if number > 1 and _ROLLED.search(source[number - 2]):
            return None
        line = source[number - 1]
        return Location(where.file, number, len(line) - len(line.lstrip()) + 1)

    for number in (where.line, where.line - 1):       # `for (...) one statement;`
        if number >= 1 and _LOOP_HEADER.match(source[number - 1]) and \
                "{" not in source[number - 1]:
            return loop(number)
    opened = 0
    for number in range(where.line, 0, -1):
        line = source[number - 1]
        opened += line.count("{") - line.count("}")
        if opened > 0:                                  # this line opens a block around it
            if _LOOP_HEADER.match(line):
                return loop(number)
            if line.strip() == "{" and number > 1 and _LOOP_HEADER.match(source[number - 2]):
                return loop(number - 1)
            opened = 0                                  # not a loop: look further out
    return None
