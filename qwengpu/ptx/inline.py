"""Calls of device functions, inlined before anything else looks at the kernel.

QwenGPU has no call stack and no call instruction, so every `call`/`call.uni` of a `.func`
of the module is replaced by the function's body, before the range and alignment analyses
(`qwengpu.ptx.ranges`, `qwengpu.ptx.alignment`) and instruction selection see the kernel:

- the callee's registers, labels, parameters and `.local`/`.param` variables are renamed
  per call site (`%r1` -> `%r1@3` at the third call inlined), so that two call sites, and a
  function that calls another, never share a register;
- a `.param` argument (nvcc's `param0`, set by `st.param` before the call) becomes the
  callee's parameter itself, and so does a `.param` return value (`retval0`, read by
  `ld.param` after it); a register argument or result (`.reg` parameters, legal PTX that
  nvcc does not write) is copied in before the body and out after it;
- `ret` inside the function becomes a branch to the end of its inlined body (`@%p ret` a
  guarded one); a guarded call skips the whole body where its guard fails;
- nested calls are inlined the same way, inside out.

Then `qwengpu.ptx.call_params` turns the `.param` traffic into register moves.  Every
inlined instruction keeps its own PTX line and CUDA line (the callee's), so listings, traces
and errors point into the function.  What cannot be inlined is refused at the call, in
words: recursion (direct or mutual: there is no stack to unwind), calls through a register
(function pointers, virtual functions), `printf` (`vprintf`) and functions whose body is not
in the module.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu.errors import CapacityError, PtxError
from qwengpu.ptx import ir
from qwengpu.ptx.call_params import lower_call_params
from qwengpu.ptx.cuda_lines import readable
from qwengpu.ptx.explain import call_detail

# A bound on the inlined body (PTX statements): far more than any program fits in the
# machine's slots, reached only by calls that multiply (f calls g twice, g calls h twice...).
MAX_INLINED_STATEMENTS = 20_000

_SITE_SPACES = ("param", "local")       # a function's own variables: one per call site


def has_calls(kernel: ir.Kernel) -> bool:
    return any(isinstance(statement, ir.Instruction) and statement.opcode == "call"
               for statement in kernel.body)


def inline_calls(module: ir.Module, kernel: ir.Kernel) -> ir.Kernel:
    """The kernel with every call inlined and its `.param` traffic made register moves; the
    kernel itself when it calls nothing."""
    if not has_calls(kernel):
        return kernel
    expander = _Expander(module, kernel)
    expander.expand(kernel.body, [kernel.name])
    inlined = ir.Kernel(name=kernel.name, params=kernel.params, registers=expander.registers,
                        body=expander.body, variables=expander.variables, loc=kernel.loc)
    return lower_call_params(inlined, module.source)


class _Expander:
    """Builds the inlined body statement by statement; see the module docstring."""

    def __init__(self, module: ir.Module, kernel: ir.Kernel):
        self.module = module
        self.registers = dict(kernel.registers)
        self.variables = dict(kernel.variables)
        self.body: list[ir.Statement] = []
        self.sites = 0

    def error(self, message: str, ins: ir.Instruction) -> PtxError:
        return PtxError(message, ins.loc, self.module.source)

    def expand(self, statements: list[ir.Statement], stack: list[str]):
        """Append `statements` (already in the caller's names), inlining their calls; `stack`
        is the chain of functions being inlined, the kernel first."""
        for statement in statements:
            if isinstance(statement, ir.Instruction) and statement.opcode == "call":
                self.call(statement, stack)
            else:
                self.body.append(statement)
            if len(self.body) > MAX_INLINED_STATEMENTS:
                raise CapacityError(
                    f"inlining the calls of {readable(stack[0])} gives more than "
                    f"{MAX_INLINED_STATEMENTS} PTX instructions, far more than QwenGPU's "
                    "program holds; this call is one of them", statement.loc,
                    self.module.source)

    # ---- one call ------------------------------------------------------------------------------

    def call(self, ins: ir.Instruction, stack: list[str]):
        returns, target, args = _call_parts(ins)
        callee = self.callee(ins, target, stack)
        if len(args) != len(callee.params):
            raise self.error(f"this call of {readable(callee.name)} passes {len(args)} "
                             f"arguments, but it takes {len(callee.params)}", ins)
        if len(returns) > len(callee.returns):
            raise self.error(f"this call of {readable(callee.name)} takes {len(returns)} "
                             f"results, but it returns {len(callee.returns)}", ins)
        self.sites += 1
        site = self.sites
        names = {name: f"{name}@{site}" for name in callee.registers}
        for name, variable in callee.variables.items():
            if variable.state_space in _SITE_SPACES:
                names[name] = f"{name}@{site}"
        names.update({statement.name: f"{statement.name}@{site}"
                      for statement in callee.body if isinstance(statement, ir.Label)})
        before = [self.argument(ins, formal, arg, names, site)
                  for formal, arg in zip(callee.params, args)]
        after = [self.result(ins, formal, returned, names, site)
                 for formal, returned in zip(callee.returns, returns)]
        for formal in callee.returns[len(returns):]:           # a result nobody reads
            self.result(ins, formal, None, names, site)
        self.registers.update({names[name]: type_name
                               for name, type_name in callee.registers.items()})
        for name, variable in callee.variables.items():
            renamed = names.get(name, name)
            self.variables[renamed] = replace(variable, name=renamed)
        end = f"{callee.name}$end@{site}"
        skip = None
        if ins.guard is not None:                               # `@%p call`: all or nothing
            skip = f"{callee.name}$skip@{site}"
            self.body.append(_branch(ins, skip, replace(ins.guard,
                                                        negated=not ins.guard.negated)))
        self.body.extend(instruction for instruction in before if instruction is not None)
        body = []
        for statement in callee.body:
            if isinstance(statement, ir.Label):
                body.append(ir.Label(names[statement.name], statement.loc))
            elif statement.opcode == "ret":
                guard = _renamed_guard(statement.guard, names)
                body.append(_branch(statement, end, guard))
            else:
                body.append(_renamed(statement, names))
        self.expand(body, stack + [callee.name])
        self.body.append(ir.Label(end, ins.loc))
        self.body.extend(instruction for instruction in after if instruction is not None)
        if skip is not None:
            self.body.append(ir.Label(skip, ins.loc))

    def callee(self, ins: ir.Instruction, target, stack: list[str]) -> ir.Kernel:
        """The `.func` a call names, or the refusal of a call that cannot be inlined."""
        if isinstance(target, ir.Register):
            raise self.error(call_detail(ins), ins)
        if not isinstance(target, ir.Symbol):
            raise self.error("a call needs the name of the function it calls", ins)
        name = target.name
        if name == "vprintf":
            raise self.error("printf is not supported by QwenGPU (nvcc calls vprintf for it): "
                             "the machine has no output but its memory; store the values in "
                             "a buffer, which hdlc run prints after the launch", ins)
        if name == "__assertfail":
            raise self.error("assert() is not supported by QwenGPU (nvcc calls __assertfail "
                             "for a failed assert, a function of the CUDA runtime, which "
                             "QwenGPU does not have)", ins)
        if name in self.module.kernels:
            raise self.error(f"{readable(name)} is a kernel (.entry); only a device function "
                             "(.func) can be called", ins)
        callee = self.module.functions.get(name)
        if callee is None:
            raise self.error(
                f"a call of {readable(name)}, which this PTX declares but does not define: "
                "QwenGPU inlines every call, so the function's body must be in the same "
                "module (an external or library function cannot be called)", ins)
        if name in stack:
            chain = [readable(function) for function in stack[stack.index(name):]] + \
                [readable(name)]
            if len(chain) == 2:
                how = f"{chain[0]} calls itself"
            else:
                how = f"{chain[0]} calls {chain[1]}" + \
                    "".join(f", which calls {function}" for function in chain[2:])
            raise self.error(f"recursion is not supported by QwenGPU: {how}; QwenGPU has no "
                             "call stack, so the loader inlines every call, and a recursive "
                             "one would never end (write it as a loop)", ins)
        return callee

    # ---- parameters ----------------------------------------------------------------------------

    def _call_param(self, operand) -> bool:
        return isinstance(operand, ir.Symbol) and \
            getattr(self.variables.get(operand.name), "state_space", None) == "param"

    def _storage(self, formal: ir.Param, names: dict[str, str], site: int) -> str:
        """A `.param` formal of its own (not an argument's variable): a variable per site."""
        storage = f"{formal.name}@{site}"
        names[formal.name] = storage
        self.variables[storage] = ir.Variable("param", storage, formal.type, formal.loc,
                                              formal.array_length, align=formal.align)
        return storage

    def argument(self, ins: ir.Instruction, formal: ir.Param, arg, names: dict[str, str],
                 site: int) -> ir.Instruction | None:
        """Bind one argument: the callee's `.param` formal becomes the caller's `.param`
        variable, or the value is stored into it or copied into a `.reg` formal."""
        if formal.space == "param" and self._call_param(arg):
            names[formal.name] = arg.name
            return None
        if not isinstance(arg, (ir.Register, ir.Immediate)) and not self._call_param(arg):
            raise self.error(f"argument {_operand_text(arg)} of this call is neither a .param "
                             "variable, a register nor a number", ins)
        if formal.space == "param":
            if formal.is_array:
                raise self.error(f"parameter {readable(formal.name)} is a "
                                 f"{formal.size_bytes}-byte struct or array; pass a .param "
                                 "variable, not a register", ins)
            storage = self._storage(formal, names, site)
            return _synthetic(ins, "st", ("param", formal.type),
                              (_memory(storage, ins), arg))
        register = ir.Register(names[formal.name], ins.loc)
        if self._call_param(arg):
            return _synthetic(ins, "ld", ("param", formal.type), (register, _memory(arg.name,
                                                                                    ins)))
        return _synthetic(ins, "mov", (_move_type(formal.type),), (register, arg))

    def result(self, ins: ir.Instruction, formal: ir.Param, returned, names: dict[str, str],
               site: int) -> ir.Instruction | None:
        """Bind one result, the way `argument` binds an argument, to be read after the body."""
        if formal.space == "param":
            if returned is not None and self._call_param(returned):
                names[formal.name] = returned.name
                return None
            storage = self._storage(formal, names, site)
            if returned is None:
                return None
            if not isinstance(returned, ir.Register):
                raise self.error(f"result {_operand_text(returned)} of this call is neither "
                                 "a .param variable nor a register", ins)
            return _synthetic(ins, "ld", ("param", formal.type),
                              (returned, _memory(storage, ins)))
        register = ir.Register(names[formal.name], ins.loc)
        if returned is None:
            return None
        if self._call_param(returned):
            return _synthetic(ins, "st", ("param", formal.type),
                              (_memory(returned.name, ins), register))
        if not isinstance(returned, ir.Register):
            raise self.error(f"result {_operand_text(returned)} of this call is neither a "
                             ".param variable nor a register", ins)
        return _synthetic(ins, "mov", (_move_type(formal.type),), (returned, register))


# ---- PTX pieces -----------------------------------------------------------------------------------


def _call_parts(ins: ir.Instruction) -> tuple[tuple, object, tuple]:
    """(results, target, arguments) of `call (r), f, (a, b)`, `call f, (a)`, `call f` or
    `call (r), %rd, (a), prototype`."""
    operands = list(ins.operands)
    returns = operands.pop(0).elements if operands and \
        isinstance(operands[0], ir.OperandList) else ()
    target = operands.pop(0) if operands else None
    args = operands.pop(0).elements if operands and \
        isinstance(operands[0], ir.OperandList) else ()
    return returns, target, args


def _move_type(type_name: str) -> str:
    return "pred" if type_name == "pred" else f"b{ir.type_width(type_name)}"


def _memory(name: str, at: ir.Instruction) -> ir.Memory:
    return ir.Memory(ir.Symbol(name, at.loc), 0, at.loc)


def _synthetic(at: ir.Instruction, opcode: str, modifiers: tuple, operands: tuple
               ) -> ir.Instruction:
    """An instruction the inliner adds, at the PTX (and CUDA) line of `at`."""
    return ir.Instruction(opcode=opcode, modifiers=modifiers, operands=operands, guard=None,
                          loc=at.loc, text=at.text, cuda_loc=at.cuda_loc)


def _branch(at: ir.Instruction, label: str, guard: ir.Guard | None) -> ir.Instruction:
    return ir.Instruction(opcode="bra", modifiers=(), operands=(ir.Symbol(label, at.loc),),
                          guard=guard, loc=at.loc, text=at.text, cuda_loc=at.cuda_loc)


def _renamed_guard(guard: ir.Guard | None, names: dict[str, str]) -> ir.Guard | None:
    if guard is None:
        return None
    return replace(guard, register=names.get(guard.register, guard.register))


def _renamed(ins: ir.Instruction, names: dict[str, str]) -> ir.Instruction:
    """A fresh copy of a callee's instruction in this call site's names (a new object even
    when nothing is renamed: the analyses tell instructions apart by identity)."""
    return replace(ins, operands=tuple(_renamed_operand(operand, names)
                                       for operand in ins.operands),
                   guard=_renamed_guard(ins.guard, names))


def _renamed_operand(operand, names: dict[str, str]):
    if isinstance(operand, (ir.Register, ir.NegatedRegister, ir.Symbol)):
        return replace(operand, name=names.get(operand.name, operand.name))
    if isinstance(operand, ir.RegisterPair):
        return replace(operand, first=names.get(operand.first, operand.first),
                       second=names.get(operand.second, operand.second))
    if isinstance(operand, ir.Memory):
        return replace(operand, base=_renamed_operand(operand.base, names))
    if isinstance(operand, (ir.Vector, ir.OperandList)):
        return replace(operand, elements=tuple(_renamed_operand(element, names)
                                               for element in operand.elements))
    return operand


def _operand_text(operand) -> str:
    if isinstance(operand, (ir.Register, ir.Symbol)):
        return readable(operand.name)
    if isinstance(operand, ir.Immediate):
        return operand.text
    return "(...)"
