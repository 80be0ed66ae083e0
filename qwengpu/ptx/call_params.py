"""The `.param` traffic of inlined calls, made register moves (after `qwengpu.ptx.inline`).

A call passes its arguments and results through `.param` variables: nvcc's `st.param.b32
[param0+0], %r2` before the call, `ld.param.u32 %r1, [f_param_0]` in the function (the same
variable, once inlined), `st.param.b32 [func_retval0+0], %r6` and `ld.param.b32 %r3,
[retval0+0]` after it.  Once the call is inlined these are plain data flow, and each such
variable becomes registers, so that the range and alignment analyses follow the values
through (a pointer passed to a function keeps its proof of staying in memory):

- a variable of 4 or 8 bytes that is only stored whole and loaded from its start (the
  scalars nvcc passes) is one register of its size: a store is a `mov` (a `cvt` from a wider
  register), a load a `mov` or a `cvt` that extends or cuts the value as the load's type says
  (`ld.param.s32 %rd2, [p]` sign-extends; `ld.param.s8 %rs2, [p]` reads the low byte);
- any other (a struct `.b8 p[8]`, a vector access, bytes of a word) is a register per 32-bit
  word: a word access is a `mov`, an 8-byte one moves a pair of words (`mov.b64 %rd, {w0,
  w1}`), a byte or halfword is inserted with `bfi` and extracted with `bfe`.

The kernel's own parameters (`ld.param` of an `.entry`'s parameter) are untouched: they are
the machine's parameter words.  An access that crosses a word, or a `.param` variable whose
address is taken, is refused at its line.
"""

from __future__ import annotations

from dataclasses import replace

from qwengpu.errors import PtxError
from qwengpu.ptx import ir
from qwengpu.ptx.cuda_lines import readable


def lower_call_params(kernel: ir.Kernel, source: str) -> ir.Kernel:
    """The kernel with every access of a call's `.param` variable made register moves, and
    those variables gone."""
    lowering = _Lowering(kernel, source)
    body = []
    for statement in kernel.body:
        if isinstance(statement, ir.Instruction):
            body.extend(lowering.statement(statement))
        else:
            body.append(statement)
    variables = {name: variable for name, variable in kernel.variables.items()
                 if variable.state_space != "param"}
    return replace(kernel, body=body, variables=variables, registers=lowering.registers)


def _type_of(ins: ir.Instruction) -> str:
    return next(modifier for modifier in reversed(ins.modifiers) if modifier in ir.TYPE_WIDTHS)


def _count(ins: ir.Instruction) -> int:
    return 4 if ins.has("v4") else 2 if ins.has("v2") else 1


def _mentions(operand, names: set[str]) -> str | None:
    if isinstance(operand, ir.Symbol):
        return operand.name if operand.name in names else None
    if isinstance(operand, ir.Memory):
        return _mentions(operand.base, names)
    if isinstance(operand, (ir.Vector, ir.OperandList)):
        return next((found for element in operand.elements
                     if (found := _mentions(element, names))), None)
    return None


class _Lowering:
    def __init__(self, kernel: ir.Kernel, source: str):
        self.kernel, self.source = kernel, source
        self.registers = dict(kernel.registers)
        self.storage = {name: variable for name, variable in kernel.variables.items()
                        if variable.state_space == "param"}
        self.temps = 0
        self.out: list[ir.Instruction] = []        # what the statement at hand becomes
        self.at: ir.Instruction | None = None      # the statement at hand
        accesses: dict[str, list[ir.Instruction]] = {name: [] for name in self.storage}
        for ins in kernel.body:
            if isinstance(ins, ir.Instruction) and (name := self._accessed(ins)) is not None:
                accesses[name].append(ins)
        self.whole = {name for name, found in accesses.items()
                      if self._whole(self.storage[name], found)}

    def error(self, message: str, ins: ir.Instruction) -> PtxError:
        return PtxError(message, ins.loc, self.source)

    def _accessed(self, ins: ir.Instruction) -> str | None:
        """The call parameter `ins` loads or stores (`[param0+4]`), if any."""
        if ins.opcode not in ("ld", "st") or not ins.has("param"):
            return None
        memory = ins.operands[1] if ins.opcode == "ld" else ins.operands[0]
        if isinstance(memory, ir.Memory) and isinstance(memory.base, ir.Symbol) and \
                memory.base.name in self.storage:
            return memory.base.name
        return None

    @staticmethod
    def _whole(variable: ir.Variable, accesses: list[ir.Instruction]) -> bool:
        if variable.array_length is not None or variable.size_bytes not in (4, 8):
            return False
        bits = 8 * variable.size_bytes
        for ins in accesses:
            memory = ins.operands[1] if ins.opcode == "ld" else ins.operands[0]
            width = ir.type_width(_type_of(ins))
            if _count(ins) != 1 or memory.offset != 0 or width > bits or \
                    (ins.opcode == "st" and width != bits):
                return False
        return True

    def width(self, operand) -> int | None:
        if isinstance(operand, ir.Register) and operand.name in self.registers:
            return ir.type_width(self.registers[operand.name])
        return None

    def temp(self, type_name: str, at: ir.Instruction) -> ir.Register:
        self.temps += 1
        name = f"param@t{self.temps}"
        self.registers[name] = type_name
        return ir.Register(name, at.loc)

    def register(self, name: str, type_name: str, at: ir.Instruction) -> ir.Register:
        self.registers[name] = type_name
        return ir.Register(name, at.loc)

    # ---- one statement -------------------------------------------------------------------------

    def statement(self, ins: ir.Instruction) -> list[ir.Instruction]:
        name = self._accessed(ins)
        if name is None:
            mentioned = next((found for operand in ins.operands
                              if (found := _mentions(operand, set(self.storage)))), None)
            if mentioned is not None:
                raise self.error(f"the call parameter {readable(mentioned)} is used as an "
                                 "address here, which QwenGPU does not support (its call "
                                 "parameters are registers once a call is inlined)", ins)
            return [ins]
        self.out, self.at = [], ins
        variable = self.storage[name]
        type_name = _type_of(ins)
        width = ir.type_width(type_name)
        signed = ir.is_signed(type_name)
        memory, value = ins.operands if ins.opcode == "st" else reversed(ins.operands)
        values = [value] if _count(ins) == 1 else list(_elements(value, _count(ins), self, ins))
        if name in self.whole:
            whole = self.register(f"{name}@v", f"b{8 * variable.size_bytes}", ins)
            if ins.opcode == "st":
                self.move(whole, 8 * variable.size_bytes, values[0], False)
            else:
                self.load(values[0], whole, 8 * variable.size_bytes, width, signed)
            return self.out
        for index, element in enumerate(values):
            offset = memory.offset + index * max(width // 8, 1)
            if element is None:
                continue
            if offset < 0 or offset + max(width // 8, 1) > variable.size_bytes:
                raise self.error(f"this accesses bytes {offset}..{offset + width // 8 - 1} of "
                                 f"{readable(name)}, which has {variable.size_bytes}", ins)
            if ins.opcode == "st":
                self.store_word(name, offset, width, element)
            else:
                self.load_word(name, offset, width, signed, element)
        return self.out

    def emit(self, opcode: str, modifiers: tuple, *operands):
        at = self.at
        self.out.append(ir.Instruction(opcode=opcode, modifiers=modifiers, operands=operands,
                                       guard=at.guard, loc=at.loc, text=at.text,
                                       cuda_loc=at.cuda_loc))

    def move(self, destination: ir.Register, bits: int, value, signed: bool):
        """`destination` (of `bits`) = `value`, cut or extended as `signed` says."""
        source = self.width(value)
        if source is None or source == bits:
            self.emit("mov", (f"b{bits}",), destination, value)
        else:
            kind = "s" if signed else "u"
            self.emit("cvt", (f"{kind}{bits}", f"{kind}{source}"), destination, value)

    def load(self, destination, source: ir.Register, source_bits: int, width: int,
             signed: bool):
        """`destination` = the low `width` bits of `source`, extended as the load's type says."""
        bits = self.width(destination)
        if bits is None:
            raise self.error("a call parameter can only be loaded into a register", self.at)
        if width == bits == source_bits:
            self.emit("mov", (f"b{bits}",), destination, source)
            return
        kind = "s" if signed else "u"
        self.emit("cvt", (f"{kind}{bits}", f"{kind}{width}"), destination, source)

    def word(self, name: str, offset: int) -> ir.Register:
        return self.register(f"{name}@w{offset // 4}", "b32", self.at)

    def _within_a_word(self, name: str, offset: int, width: int):
        if width == 64 and offset % 4 == 0 or width <= 32 and \
                offset % 4 + width // 8 <= 4 and offset % max(width // 8, 1) == 0:
            return
        raise self.error(f"this {width}-bit access at byte {offset} of {readable(name)} is "
                         "not aligned to its size, which QwenGPU does not support for call "
                         "parameters", self.at)

    def store_word(self, name: str, offset: int, width: int, value):
        self._within_a_word(name, offset, width)
        word = self.word(name, offset)
        if width == 64:
            high = self.word(name, offset + 4)
            if isinstance(value, ir.Immediate):
                bits = value.value & ((1 << 64) - 1)
                for register, part in ((word, bits & 0xFFFF_FFFF), (high, bits >> 32)):
                    self.emit("mov", ("b32",), register, ir.Immediate(part, str(part),
                                                                      value.loc))
                return
            if self.width(value) != 64:
                raise self.error("an 8-byte call parameter is stored from a 64-bit register",
                                 self.at)
            self.emit("mov", ("b64",), ir.Vector((word, high), self.at.loc), value)
            return
        if width == 32:
            self.move(word, 32, value, False)
            return
        if self.width(value) not in (None, 32):
            widened = self.temp("b32", self.at)
            self.move(widened, 32, value, False)
            value = widened
        position = 8 * (offset % 4)
        self.emit("bfi", ("b32",), word, value, word, _number(position, self.at),
                  _number(width, self.at))

    def load_word(self, name: str, offset: int, width: int, signed: bool, destination):
        self._within_a_word(name, offset, width)
        word = self.word(name, offset)
        bits = self.width(destination)
        if bits is None:
            raise self.error("a call parameter can only be loaded into a register", self.at)
        if width == 64:
            if bits != 64:
                raise self.error("an 8-byte call parameter is loaded into a 64-bit register",
                                 self.at)
            high = self.word(name, offset + 4)
            self.emit("mov", ("b64",), destination, ir.Vector((word, high), self.at.loc))
            return
        if width == 32:
            self.load(destination, word, 32, 32, signed)
            return
        field = destination if bits == 32 else self.temp("b32", self.at)
        self.emit("bfe", ("s32" if signed else "u32",), field, word,
                  _number(8 * (offset % 4), self.at), _number(width, self.at))
        if field is not destination:
            self.load(destination, field, 32, 32 if bits > 32 else bits, signed)


def _number(value: int, at: ir.Instruction) -> ir.Immediate:
    return ir.Immediate(value, str(value), at.loc)


def _elements(vector, count: int, lowering: _Lowering, ins: ir.Instruction) -> tuple:
    if not isinstance(vector, ir.Vector) or len(vector.elements) != count:
        raise lowering.error(f"a .v{count} access needs a vector of {count} registers", ins)
    return vector.elements
