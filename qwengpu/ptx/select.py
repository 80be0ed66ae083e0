"""Instruction selection: one PTX kernel to virtual machine code (`qwengpu.ptx.vcode`).

    code, variables = select_kernel(module, kernel)

The handlers of every supported opcode live in `select_integer`, `select_wide`,
`select_memory` (with `select_local` for the .local space), `select_threads`, `select_extended`
(with `select_divide64`), `select_bytes` (prmt, dp4a/dp2a), `select_float` (the `.f32`
instructions that are integer operations on the bits), `select_cvt` (cvt between .f32 and
integers, on `select_convert` and `select_convert_wide`), `select_fpu` (float add and sub on
the machine's FPU, mul on its integer multiplier), `select_float_divide` (div, rcp, sqrt:
loops on integers) and `select_float_fma` (fma: one rounding of a 64-bit sum on integers); importing them here registers them with `qwengpu.ptx.selector.handles`,
and `Selector` (qwengpu/ptx/selector.py) runs them.
"""

from __future__ import annotations

from qwengpu.isa import LANES
from qwengpu.ptx import ir
from qwengpu.ptx import (select_bytes, select_cvt, select_extended,  # noqa: F401
                         select_float, select_float_divide, select_float_fma, select_fpu,
                         select_integer, select_local, select_memory, select_threads,
                         select_wide)
from qwengpu.ptx.geometry import Geometry
from qwengpu.ptx.selector import Selector
from qwengpu.ptx.vcode import VInstr, VLabel


def select_kernel(module: ir.Module, kernel: ir.Kernel, lanes: int = LANES,
                  proven_addresses: set[int] | None = None,
                  aligned_accesses: set[int] | None = None, geometry: Geometry = Geometry()
                  ) -> tuple[list[VInstr | VLabel], set[str]]:
    """Virtual code for one kernel, and the memory variables it uses.  An access through a
    64-bit address traps when the address's high word is not 0, unless its instruction's
    `id()` is in `proven_addresses` (`qwengpu.ptx.ranges`); None: no access is checked.  An
    access wider than a word traps when it is not naturally aligned, unless its `id()` is in
    `aligned_accesses` (`qwengpu.ptx.alignment`; None: every such access is checked).
    `geometry` is the launch shape the special registers are computed for
    (`qwengpu.ptx.geometry`; default: a 1-D block and grid of any size)."""
    selector = Selector(module, kernel, lanes, proven_addresses, aligned_accesses, geometry)
    code = selector.run()
    return code, selector.used_variables
