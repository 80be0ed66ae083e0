"""What the loader refuses, explained in CUDA terms: the detail its messages add.

- `call_detail`: a `call` through a register is an indirect call (a function pointer, a
  virtual function), which cannot be inlined (`qwengpu.ptx.inline` inlines direct ones).
- `dot_product_detail`: nvcc writes `dp4a`/`dp2a` for a byte (or halfword) dot product it
  recognises in C code, or for the `__dp4a` intrinsic; the message names the C line.  nvcc
  often files the instruction under the line of the loads before it, so the line named is the
  first of (the instruction's own line, the lines of the instructions that read its result)
  whose text multiplies (`*`) or calls the intrinsic; the instruction's own line otherwise.
- `unrolled_loop_detail`: where a kernel needs more registers than the machine has, the loop
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


def dot_product_detail(kernel: ir.Kernel, ins: ir.Instruction, lines: CudaLines | None
                       ) -> tuple[str, Location | None]:
    """`dp4a`: what it is, and the C line it was written for (also where the error is)."""
    kind = "byte" if ins.opcode == "dp4a" else "halfword-by-byte"
    where = _expression_line(kernel, ins, lines)
    line_text = lines.source_line(where) if lines is not None and where is not None else None
    at = f" at {os.path.basename(where.file)}:{where.line}" if where is not None else ""
    if line_text is not None and f"__{ins.opcode}" in line_text:
        return (f"__{ins.opcode}{at} is a {kind} dot product in one instruction, which QwenGPU "
                "does not have"), where
    return (f"nvcc wrote {ins.opcode} for a {kind} dot product{at} (products of bytes added "
            "in one instruction, which QwenGPU does not have)"), where


def _expression_line(kernel: ir.Kernel, ins: ir.Instruction, lines: CudaLines | None
                     ) -> Location | None:
    candidates = [ins.cuda_loc] + [reader.cuda_loc for reader in _readers(kernel, ins)]
    candidates = [loc for loc in candidates if loc is not None]
    if lines is not None:
        for loc in candidates:
            text = lines.source_line(loc) or ""
            if "*" in text.split("//")[0] or f"__{ins.opcode}" in text:
                return loc
    return candidates[0] if candidates else None


def _readers(kernel: ir.Kernel, ins: ir.Instruction) -> list[ir.Instruction]:
    """The instructions after `ins`, up to the next write of its result, that read it."""
    if not ins.operands or not isinstance(ins.operands[0], ir.Register):
        return []
    name = ins.operands[0].name
    body = [statement for statement in kernel.body if isinstance(statement, ir.Instruction)]
    readers = []
    for later in body[body.index(ins) + 1:] if ins in body else []:
        sources = later.operands if later.opcode == "st" else later.operands[1:]
        if any(_mentions(operand, name) for operand in sources):
            readers.append(later)
        if later.operands and _mentions(later.operands[0], name) and later.opcode != "st":
            break
    return readers


def _mentions(operand, name: str) -> bool:
    if isinstance(operand, ir.Register):
        return operand.name == name
    if isinstance(operand, ir.Memory):
        return _mentions(operand.base, name)
    if isinstance(operand, (ir.Vector, ir.OperandList)):
        return any(_mentions(element, name) for element in operand.elements)
    return False


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
