"""The PTX loader pipeline: parse, select, optimise, allocate, assemble.

    module  = parse_ptx(text)                       # qwengpu.ptx.parser
    proven  = proven_accesses(kernel, facts, ...)   # qwengpu.ptx.ranges (checks not needed)
    code    = select_kernel(module, kernel, 4, proven)  # qwengpu.ptx.select (virtual code)
    optimize(code)                                  # qwengpu.ptx.optimize
    alloc   = allocate(code, 15, 7, ...)            # qwengpu.ptx.regalloc
    program = assemble(code, alloc, ...)            # here: machine instructions

`compile_kernel` runs the steps; `load_program` starts from a `.cu` or `.ptx` path.
"""

from __future__ import annotations

from qwengpu.errors import CapacityError, Location, PtxError
from qwengpu.isa import DEFAULT_ISA, MASK32, PT, RZ, Cmp, Instruction, Op
from qwengpu.ptx import ir
from qwengpu.ptx.nvcc import ptx_for_source
from qwengpu.ptx.optimize import optimize, remove_branches_to_next
from qwengpu.ptx.parser import parse_ptx
from qwengpu.ptx.program import MachineLimits, Program, ProgramSlot
from qwengpu.ptx.ranges import Facts, default_facts, proven_accesses
from qwengpu.ptx.regalloc import Allocation, allocate
from qwengpu.ptx.select import select_kernel
from qwengpu.ptx.vcode import (TRUE, ZERO, LabelRef, ParamRef, SymbolRef, VInstr, VLabel, VPred,
                               VReg)


def choose_kernel(module: ir.Module, name: str | None) -> ir.Kernel:
    """The kernel called `name` (or the only one), or an error listing the kernels there are."""
    available = ", ".join(sorted(module.kernels)) or "none"
    if name is None:
        if len(module.kernels) == 1:
            return next(iter(module.kernels.values()))
        raise PtxError(f"say which kernel to run; this file has: {available}",
                       _file_loc(module), module.source)
    kernel = module.kernels.get(name)
    if kernel is None:
        hint = " (it is a .func, not an .entry)" if name in module.functions else ""
        raise PtxError(f"no kernel named {name!r}{hint}; this file has: {available}",
                       _file_loc(module), module.source)
    return kernel


def _file_loc(module: ir.Module) -> Location:
    return Location(module.path)


def compile_kernel(module: ir.Module, kernel_name: str | None,
                   limits: MachineLimits = MachineLimits(), check_addresses: bool = True,
                   facts: Facts | None = None) -> Program:
    """Machine code for a kernel.  With `check_addresses` an access through a 64-bit address
    traps when the address leaves 32 bits, unless `qwengpu.ptx.ranges` proves it cannot,
    from `facts` (default: `default_facts`, which any launch's buffer addresses satisfy)."""
    kernel = choose_kernel(module, kernel_name)
    proven, assumed = None, None
    if check_addresses:
        facts = facts or default_facts(kernel, limits, module.address_size // 8)
        proven, assumed = proven_accesses(kernel, facts,
                                          set(module.variables) | set(kernel.variables))
    code, used_variables = select_kernel(module, kernel, limits.lanes, proven)
    changes = optimize(code)
    allocation = allocate(code, limits.registers, limits.predicates, kernel.name, kernel.loc,
                          module.source)
    slots, param_slots = assemble(code, allocation, [param.name for param in kernel.params])
    _check_param_words(param_slots, kernel, module, limits)
    if len(slots) > limits.program_words:
        excess = len(slots) - limits.program_words
        where = slots[limits.program_words].origin
        raise CapacityError(
            f"kernel {kernel.name} needs {len(slots)} instruction slots, but QwenGPU has "
            f"{limits.program_words} ({excess} too many); the first that does not fit comes "
            f"from this line", where.loc if where else kernel.loc, module.source)
    declared = {**module.variables, **kernel.variables}
    variables = {name: variable for name, variable in declared.items() if name in used_variables}
    return Program(kernel=kernel.name, params=list(kernel.params), param_slots=param_slots,
                   variables=variables, slots=slots,
                   registers_used=allocation.registers_used,
                   predicates_used=allocation.predicates_used, ptx_path=module.path,
                   ptx_source=module.source, pass_changes=changes,
                   pointer_bytes=module.address_size // 8, assumptions=assumed)


def load_program(path: str, kernel_name: str | None,
                 limits: MachineLimits = MachineLimits()) -> Program:
    """Compile a kernel from a `.cu` file (through nvcc) or a `.ptx` file."""
    ptx_path, text = ptx_for_source(path)
    return compile_kernel(parse_ptx(text, ptx_path), kernel_name, limits)


def _check_param_words(param_slots, kernel: ir.Kernel, module: ir.Module, limits):
    if len(param_slots) <= limits.param_words:
        return
    names = ", ".join(dict.fromkeys(name for name, _ in param_slots))
    raise CapacityError(
        f"kernel {kernel.name} reads {len(param_slots)} parameter words ({names}), but QwenGPU "
        f"has {limits.param_words} ({len(param_slots) - limits.param_words} too many)",
        kernel.loc, module.source)


# ---- assembly -----------------------------------------------------------------------------------


def assemble(code: list, allocation: Allocation, param_names: list[str]
             ) -> tuple[list[ProgramSlot], list[tuple[str, int]]]:
    """Physical registers in, copies onto themselves out, labels numbered, and the parameter
    words the code reads numbered in declaration order."""
    code = [item for item in code
            if isinstance(item, VLabel) or not _is_self_copy(item, allocation)]
    remove_branches_to_next(code)
    labels, index = {}, 0
    for item in code:
        if isinstance(item, VLabel):
            labels[item.name] = index
        else:
            index += 1
    declared = {name: position for position, name in enumerate(param_names)}
    params = sorted({item.imm for item in code
                     if isinstance(item, VInstr) and isinstance(item.imm, ParamRef)},
                    key=lambda ref: (declared[ref.param], ref.word))
    param_slot = {ref: slot for slot, ref in enumerate(params)}
    slots = [_encode(item, allocation, labels, param_slot) for item in code
             if isinstance(item, VInstr)]
    return slots, [(ref.param, ref.word) for ref in params]


def _is_self_copy(ins: VInstr, allocation: Allocation) -> bool:
    if not ins.is_move:
        return False
    return _physical(ins.d, allocation) == _physical(ins.a, allocation)


def _physical(register, allocation: Allocation) -> int:
    if register is None:
        return RZ
    if isinstance(register, VReg):
        return RZ if register == ZERO else allocation.registers[register]
    if isinstance(register, VPred):
        return PT if register == TRUE else allocation.predicates[register]
    raise AssertionError(register)


def _encode(ins: VInstr, allocation: Allocation, labels: dict[str, int],
            param_slot: dict) -> ProgramSlot:
    fields = {"op": ins.op, "d": _physical(ins.d, allocation) if ins.d is not None else RZ,
              "a": _physical(ins.a, allocation) if ins.a is not None else RZ,
              "pg": _physical(ins.guard, allocation), "pn": ins.guard_negated,
              "space": ins.space}
    # A predicate field left empty is pt (the assembly form says which fields hold one).
    for operand in DEFAULT_ISA.by_value[int(ins.op)].syntax.operands:
        if operand.kind == "pred" and operand.field in ("d", "a") \
                and getattr(ins, operand.field) is None:
            fields[operand.field] = PT
    relocation = None
    if isinstance(ins.b, (VReg, VPred)):
        fields["b"] = _physical(ins.b, allocation)
    elif isinstance(ins.b, int):
        fields["bimm"], fields["imm"] = True, ins.b & MASK32
    elif isinstance(ins.b, SymbolRef):
        fields["bimm"], relocation = True, ins.b
    if isinstance(ins.c, Cmp):
        fields["c"] = int(ins.c)
    elif isinstance(ins.c, (VReg, VPred)):
        fields["c"] = _physical(ins.c, allocation)
    if isinstance(ins.imm, LabelRef):
        fields["imm"] = labels[ins.imm.name]
    elif isinstance(ins.imm, ParamRef):
        fields["imm"] = param_slot[ins.imm]
    elif isinstance(ins.imm, SymbolRef):
        relocation = ins.imm
    elif ins.imm and "imm" not in fields:
        fields["imm"] = ins.imm & MASK32
    return ProgramSlot(Instruction(**fields), relocation, ins.origin)
