"""The PTX loader pipeline: parse, inline, select, optimise, allocate, assemble.

    module  = parse_ptx(text)                       # qwengpu.ptx.parser
    kernel  = inline_calls(module, kernel)          # qwengpu.ptx.inline (calls, .param)
    proven  = proven_accesses(kernel, facts, ...)   # qwengpu.ptx.ranges (checks not needed)
    code    = select_kernel(module, kernel, 4, proven)  # qwengpu.ptx.select (virtual code)
    optimize(code)                                  # qwengpu.ptx.optimize
    alloc   = allocate(code, 15, 7, ...)            # qwengpu.ptx.regalloc (spills: .spill)
    program = assemble(code, alloc, ...)            # here: machine instructions

`compile_kernel` runs the steps; `read_module` parses a `.cu` (through nvcc) or `.ptx` file,
`load_program` does both.  Every `UserError` they raise is told in CUDA terms
(`qwengpu.ptx.cuda_lines`); kernel names in messages are demangled, and a kernel may be chosen
by its demangled name too (`vector_add(int*, int)`, or `vector_add` when only one has it).
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu.errors import CapacityError, Location, PtxError
from qwengpu.isa import DEFAULT_ISA, MASK32, PT, RZ, Cmp, Instruction, Op
from qwengpu.ptx import ir
from qwengpu.ptx.alignment import (aligned_accesses, buffer_alignment, needs_alignment_check,
                                   variable_alignment)
from qwengpu.ptx.cuda_lines import CudaLines, in_cuda_terms, readable
from qwengpu.ptx.explain import unrolled_loop_detail
from qwengpu.ptx.geometry import fold_constant_specials, shape_reads
from qwengpu.ptx.inline import inline_calls
from qwengpu.ptx.local_memory import LocalLayout, local_layout
from qwengpu.ptx.nvcc import ptx_for_source
from qwengpu.ptx.optimize import optimize, remove_branches_to_next
from qwengpu.ptx.parser import parse_ptx
from qwengpu.ptx.program import FormedAddressSlots, MachineLimits, Program, ProgramSlot
from qwengpu.ptx.ranges import Facts, default_facts, proven_accesses
from qwengpu.ptx.regalloc import Allocation, SpillArea, allocate
from qwengpu.ptx.kernel_facts import shared_layout
from qwengpu.ptx.select import select_kernel
from qwengpu.ptx.vcode import (TRUE, ZERO, FormedAddress, LabelRef, ParamRef, SymbolRef, VInstr,
                               VLabel, VPred, VReg)

# The most instruction slots both targets hold: `hdlc compile -P PROG_WORDS=256` banks the
# program over two DeltaNet heads and keeps an 8-bit binary pc (docs/state.md, "Memories of
# more than 128 words"); 512 make the pc one-hot, wider than qwen3.5-2b.
WIDE_PROGRAM = 256


def choose_kernel(module: ir.Module, name: str | None) -> ir.Kernel:
    """The kernel called `name` (or the only one), or an error listing the kernels there are."""
    if name is None:
        if len(module.kernels) == 1:
            return next(iter(module.kernels.values()))
        raise PtxError(f"say which kernel to run; this file has: {kernel_list(module)}",
                       _file_loc(module), module.source)
    kernel = find_kernel(module.kernels, name)
    if kernel is None:
        hint = " (it is a .func, not an .entry)" if find_kernel(module.functions, name) else ""
        raise PtxError(f"no kernel named {name!r}{hint}; this file has: {kernel_list(module)}",
                       _file_loc(module), module.source)
    return kernel


def find_kernel(kernels: dict[str, ir.Kernel], name: str) -> ir.Kernel | None:
    """The kernel named `name` as PTX spells it, as C++ does (`vector_add(int*, int)`), or by
    its bare C++ name (`vector_add`, `ns::k`) when no other kernel has that one."""
    if name in kernels:
        return kernels[name]
    by_signature = [kernel for mangled, kernel in kernels.items() if readable(mangled) == name]
    if len(by_signature) == 1:
        return by_signature[0]
    by_name = [kernel for mangled, kernel in kernels.items()
               if readable(mangled).split("(")[0] == name]
    return by_name[0] if len(by_name) == 1 else None


def kernel_list(module: ir.Module) -> str:
    """The kernels of a module as C++ names them, for messages."""
    return ", ".join(sorted(readable(name) for name in module.kernels)) or "none"


def _file_loc(module: ir.Module) -> Location:
    return Location(module.path)


def compile_kernel(module: ir.Module, kernel_name: str | None,
                   limits: MachineLimits = MachineLimits(), check_addresses: bool = True,
                   facts: Facts | None = None) -> Program:
    """Machine code for a kernel.  With `check_addresses` an access through a 64-bit address
    traps when the address leaves 32 bits, unless `qwengpu.ptx.ranges` proves it cannot,
    from `facts` (default: `default_facts`, which any launch's buffer addresses satisfy)."""
    with in_cuda_terms(lambda: module.cuda_lines):
        return _compile(module, kernel_name, limits, check_addresses, facts)


def _compile(module: ir.Module, kernel_name: str | None, limits: MachineLimits,
             check_addresses: bool, facts: Facts | None) -> Program:
    kernel = inline_calls(module, choose_kernel(module, kernel_name))
    name = readable(kernel.name)
    proven, assumed = None, None
    launch_facts = facts or default_facts(kernel, limits, module.address_size // 8)
    kernel = fold_constant_specials(kernel, launch_facts.geometry.constants(limits.lanes))
    if check_addresses:
        proven, assumed = proven_accesses(kernel, launch_facts,
                                          set(module.variables) | set(kernel.variables))
    declared = {**module.variables, **kernel.variables}
    alignment = buffer_alignment(kernel)
    geometry = launch_facts.geometry
    aligned, aligned_params = _alignment_proofs(kernel, launch_facts, alignment, declared)
    code, used_variables = select_kernel(module, kernel, limits.lanes, proven, aligned,
                                         geometry)
    changes = optimize(code)
    local = _local_memory(module, kernel, limits)
    try:
        allocation = allocate(code, limits.registers, limits.predicates, name, kernel.loc,
                              module.source, SpillArea(local.spill_base,
                                                       limits.local_words - local.spill_base // 4))
    except CapacityError as error:
        unrolled = unrolled_loop_detail(kernel, error.loc.line, module.cuda_lines) \
            if error.loc is not None and error.loc.line else None
        if unrolled:
            error.message = f"{error.message}; {unrolled}"
            error.args = (error.message,)
        raise
    slots, param_slots = assemble(code, allocation, [param.name for param in kernel.params])
    _check_param_words(param_slots, kernel, module, limits)
    if len(slots) > limits.program_words:
        excess = len(slots) - limits.program_words
        where = slots[limits.program_words].origin
        wider = f"; a machine compiled with -P PROG_WORDS={WIDE_PROGRAM} holds it" \
            if len(slots) <= WIDE_PROGRAM else ""
        raise CapacityError(
            f"kernel {name} needs {len(slots)} instruction slots, but QwenGPU has "
            f"{limits.program_words} ({excess} too many{wider}); the first that does not fit "
            f"comes from this line", where.loc if where else kernel.loc, module.source)
    used = {name: variable for name, variable in declared.items() if name in used_variables}
    shared = _shared_memory(module, kernel, limits)
    return Program(kernel=kernel.name, params=list(kernel.params), param_slots=param_slots,
                   variables=used, slots=slots,
                   registers_used=allocation.registers_used,
                   predicates_used=allocation.predicates_used, ptx_path=module.path,
                   ptx_source=module.source, pass_changes=changes,
                   pointer_bytes=module.address_size // 8, assumptions=assumed,
                   cuda_lines=module.cuda_lines, buffer_alignment=alignment,
                   aligned_params=aligned_params, shared_bytes=shared.static_bytes,
                   dynamic_shared=shared.dynamic, geometry=geometry,
                   shape_reads=shape_reads(kernel),
                   local_bytes=_round_up(local.spill_base + 4 * allocation.spill_words,
                                         local.alignment) if local.variables_bytes or
                   allocation.spill_words else 0,
                   local_alignment=local.alignment)


def _shared_memory(module: ir.Module, kernel: ir.Kernel, limits: MachineLimits):
    """The kernel's shared memory layout, refused when its static part is larger than a
    block's window may be (SHARED_WORDS)."""
    layout = shared_layout(module, kernel)
    words = -(-layout.static_bytes // 4)
    if words > limits.shared_words:
        first = next((v for v in kernel.variables.values() if v.state_space == "shared"), None)
        raise CapacityError(
            f"kernel {readable(kernel.name)} has {layout.static_bytes} bytes of shared memory "
            f"({words} words), but a block of QwenGPU may have {limits.shared_words} words "
            f"(SHARED_WORDS); {words - limits.shared_words} too many",
            first.loc if first else kernel.loc, module.source)
    return layout


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _local_memory(module: ir.Module, kernel: ir.Kernel, limits: MachineLimits) -> LocalLayout:
    """The kernel's `.local` variables in a thread's window, refused when they alone are more
    than a thread may have (`LOCAL_WORDS`)."""
    local = local_layout(module, kernel)
    words = -(-local.variables_bytes // 4)
    if words > limits.local_words:
        sizes = ", ".join(f"{readable(variable.name)}: {variable.size_bytes} bytes"
                          for variable in local.variables)
        raise CapacityError(
            f"kernel {readable(kernel.name)} needs {words} words of local memory a thread for "
            f"its local arrays ({sizes}), but QwenGPU has {limits.local_words} "
            f"(LOCAL_WORDS; {words - limits.local_words} too many)", local.variables[0].loc,
            module.source)
    return local


def _alignment_proofs(kernel: ir.Kernel, facts: Facts, alignment: int, declared: dict
                      ) -> tuple[set[int], dict[str, int]]:
    """The accesses proven naturally aligned (`qwengpu.ptx.alignment`), and the alignments
    of parameter values those proofs rest on (the others dropped)."""
    if not any(isinstance(ins, ir.Instruction) and needs_alignment_check(ins)
               for ins in kernel.body):
        return set(), {}                        # word accesses: the machine checks them
    aligned_params = _param_alignment(kernel, facts, alignment)
    variables = {name: variable_alignment(variable) for name, variable in declared.items()}
    constants = facts.geometry.constants(facts.lanes)
    aligned = aligned_accesses(kernel, aligned_params, variables, constants)
    for param in list(aligned_params):
        fewer = {name: value for name, value in aligned_params.items() if name != param}
        if aligned_accesses(kernel, fewer, variables, constants) >= aligned:
            aligned_params = fewer
    return aligned, aligned_params


def _param_alignment(kernel: ir.Kernel, facts: Facts, alignment: int) -> dict[str, int]:
    """What the alignment analysis may assume of each parameter (bytes): the alignment of a
    value the launch gives, and a buffer's (`alignment`) for a parameter the facts hold to be
    a buffer's address (a range of addresses, `default_facts`)."""
    aligned = {}
    for param in kernel.params:
        value = facts.params.get(param.name)
        if value is None:
            continue
        if value[0] == value[1]:
            aligned[param.name] = min(value[0] & -value[0], 16) if value[0] else 16
        else:
            aligned[param.name] = alignment
    return aligned


def read_module(path: str) -> ir.Module:
    """The parsed PTX of a `.cu` file (through nvcc) or a `.ptx` file."""
    ptx_path, text = ptx_for_source(path)
    compiled_from = path if ptx_path != path else None
    with in_cuda_terms(lambda: CudaLines(text.expandtabs(8), ptx_path, compiled_from)):
        return parse_ptx(text, ptx_path, compiled_from)


def load_program(path: str, kernel_name: str | None,
                 limits: MachineLimits = MachineLimits()) -> Program:
    """Compile a kernel from a `.cu` file (through nvcc) or a `.ptx` file."""
    return compile_kernel(read_module(path), kernel_name, limits)


def _check_param_words(param_slots, kernel: ir.Kernel, module: ir.Module, limits):
    if len(param_slots) <= limits.param_words:
        return
    names = ", ".join(dict.fromkeys(readable(name) for name, _ in param_slots))
    raise CapacityError(
        f"kernel {readable(kernel.name)} reads {len(param_slots)} parameter words ({names}), "
        f"but QwenGPU has {limits.param_words} ({len(param_slots) - limits.param_words} too "
        "many)",
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
    instructions = [item for item in code if isinstance(item, VInstr)]
    pcs = {id(ins): pc for pc, ins in enumerate(instructions)}
    slots = [replace(_encode(ins, allocation, labels, param_slot),
                     formed=_formed_slots(ins.formed, pcs)) for ins in instructions]
    return slots, [(ref.param, ref.word) for ref in params]


def _formed_slots(formed: FormedAddress | None, pcs: dict[int, int]
                  ) -> FormedAddressSlots | None:
    if formed is None or id(formed.low) not in pcs:
        return None
    high_pc = pcs.get(id(formed.high)) if formed.high is not None else None
    return FormedAddressSlots(pcs[id(formed.low)], high_pc, formed.high_value,
                              formed.size_bytes)


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
    return ProgramSlot(Instruction(**fields), relocation, ins.origin, note=ins.note)
