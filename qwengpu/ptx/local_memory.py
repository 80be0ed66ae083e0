"""Where a thread's local memory puts things: its `.local` variables, then its spill slots.

Each thread has its own window of the machine's memory (docs/isa.md, "Shared and local
memory"); an address in the `.local` space is a byte offset into that window.  The loader
lays a kernel's `.local` variables out from offset 0 in declaration order (nvcc writes one,
`__local_depot0`, the kernel's stack frame), each at a multiple of its `.align`, and the
register allocator's spill slots follow them, one word each (`qwengpu.ptx.spill`).  The
launch gives every thread a window of `Program.local_bytes` (a multiple of the variables'
alignment), each window at a multiple of `Program.local_alignment` bytes (docs/launch.md).

    layout = local_layout(module, kernel)
    layout.offsets["__local_depot0"]      # 0
    layout.spill_base                     # the first byte after the variables, word-aligned
"""

from __future__ import annotations

from dataclasses import dataclass, field

from qwengpu.errors import PtxError
from qwengpu.ptx import ir
from qwengpu.ptx.cuda_lines import readable


@dataclass(frozen=True)
class LocalLayout:
    """Byte offsets of the `.local` variables in a thread's window, and their extent."""

    offsets: dict[str, int] = field(default_factory=dict)
    variables_bytes: int = 0
    variables: tuple[ir.Variable, ...] = ()

    @property
    def alignment(self) -> int:
        """Bytes a thread's window must be aligned to: the variables' widest `.align` (at
        least a word).  nvcc relies on it: it forms generic addresses in an aligned depot
        with `or` (`or.b64 %rd, %SP, 12`)."""
        return max([4] + [variable.align or variable.element_bytes
                          for variable in self.variables])

    @property
    def spill_base(self) -> int:
        """The byte offset of the first spill slot: the next word after the variables."""
        return -(-self.variables_bytes // 4) * 4


def local_layout(module: ir.Module, kernel: ir.Kernel) -> LocalLayout:
    """The kernel's `.local` variables (its own, then the module's) in a thread's window."""
    variables = [variable for variable in (*kernel.variables.values(), *module.variables.values())
                 if variable.state_space == "local"]
    offsets, end = {}, 0
    for variable in variables:
        if variable.initializer is not None:
            raise PtxError(f"{readable(variable.name)} is a .local variable with an initial "
                           "value, which PTX does not allow", variable.loc, module.source)
        if variable.extern or variable.array_length == 0:
            raise PtxError(f"{readable(variable.name)} is declared extern (its size is "
                           "unknown)", variable.loc, module.source)
        align = max(variable.align or variable.element_bytes, 1)
        end = -(-end // align) * align
        offsets[variable.name] = end
        end += variable.size_bytes
    return LocalLayout(offsets, end, tuple(variables))
