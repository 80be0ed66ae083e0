"""What instruction selection knows of a kernel before it selects any instruction.

- `single_constant_registers`: registers nvcc writes once with a constant (`mov.u32 %r11,
  31` before a `shfl`, `mov.u32 %r3, WARP_SZ` before a division), read as that constant, so
  a shuffle's clamp or a division by the warp size lowers to its short form;
- `shared_layout`: where the kernel's `.shared` variables lie in a block's window of shared
  memory (docs/ptx.md, "Shared memory").
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu.ptx import ir


def single_constant_registers(kernel: ir.Kernel, symbols: dict[str, int]) -> dict[str, int]:
    """Registers of up to 32 bits that the kernel writes once, unguarded, with `mov` of a
    constant (nvcc's `mov.u32 %r11, 31` before a `shfl`, `mov.u32 %r3, WARP_SZ`): a read of
    one is that constant (a read before the write would read an undefined value anyway)."""
    writes: dict[str, int] = {}
    constant: dict[str, int] = {}
    for ins in kernel.body:
        if not isinstance(ins, ir.Instruction) or not ins.operands:
            continue
        for name in _written_registers(ins.operands[0]):
            writes[name] = writes.get(name, 0) + 1
        if ins.opcode == "mov" and ins.guard is None and len(ins.operands) == 2 and \
                isinstance(ins.operands[0], ir.Register):
            source = ins.operands[1]
            if isinstance(source, ir.Immediate):
                constant[ins.operands[0].name] = source.value
            elif isinstance(source, ir.Symbol) and source.name in symbols:
                constant[ins.operands[0].name] = symbols[source.name]
    return {name: value for name, value in constant.items()
            if writes.get(name) == 1 and ir.type_width(kernel.registers.get(name, "b64")) <= 32}


def _written_registers(operand) -> list[str]:
    if isinstance(operand, ir.Register):
        return [operand.name]
    if isinstance(operand, ir.RegisterPair):
        return [operand.first, operand.second]
    if isinstance(operand, ir.Vector):
        return [element.name for element in operand.elements
                if isinstance(element, ir.Register)]
    return []


@dataclass(frozen=True)
class SharedLayout:
    """Where a kernel's `.shared` variables lie in a block's window of shared memory: the
    static ones in declaration order at their `.align`, then every extern one (CUDA's
    `extern __shared__`, all at the same place, the dynamic part whose size a launch gives)."""

    offsets: dict[str, int]
    static_bytes: int
    dynamic: bool


def shared_layout(module: ir.Module, kernel: ir.Kernel) -> SharedLayout:
    used = _symbols_used(kernel)
    variables = [v for v in list(kernel.variables.values()) + list(module.variables.values())
                 if v.state_space == "shared" and (v.name in kernel.variables or v.name in used)]
    offsets, end = {}, 0
    for variable in variables:
        if variable.extern or variable.array_length == 0:
            continue
        align = max(variable.align or variable.element_bytes, 1)
        end = -(-end // align) * align
        offsets[variable.name] = end
        end += variable.size_bytes
    externs = [v for v in variables if v.extern or v.array_length == 0]
    if externs:
        align = max(max(v.align or v.element_bytes, 1) for v in externs)
        start = -(-end // align) * align
        offsets.update({variable.name: start for variable in externs})
        end = start
    return SharedLayout(offsets, end, bool(externs))


def _symbols_used(kernel: ir.Kernel) -> set[str]:
    names = set()

    def visit(operand):
        if isinstance(operand, ir.Symbol):
            names.add(operand.name)
        elif isinstance(operand, ir.Memory):
            visit(operand.base)
        elif isinstance(operand, ir.Vector):
            for element in operand.elements:
                visit(element)
    for ins in kernel.body:
        if isinstance(ins, ir.Instruction):
            for operand in ins.operands:
                visit(operand)
    return names
