"""The instruction selector's machinery: `Selector` and the `@handles` table of handlers.

`Selector` walks a kernel body and hands each PTX instruction to the handler registered for
its opcode (`@handles("add", "sub")` in `select_integer`, `select_wide`, `select_memory` and
`select_extended`, which `qwengpu.ptx.select` imports before it selects anything); the `.f32`
form of an opcode goes to the handler `@handles_float` registered (`select_float`,
`select_cvt`, `select_fpu`, `select_float_divide`), or is refused as floating-point
arithmetic.
It gives handlers a small vocabulary:

- operands: `value(op, width, signed)` reads a PTX operand as a 32-bit source extended from
  `width` bits, `pair(op, signed)` reads a 64-bit one as (low word, high word), `predicate(op)`
  reads a predicate; `destination`/`destination_pair`/`destination_predicate` name where the
  result goes;
- code: `emit` appends one instruction under the PTX instruction's guard, `alu` computes into
  a fresh temporary (folding known operands), `commit` copies results into PTX registers.

Register model: a PTX register of up to 32 bits is one virtual register holding its value
zero-extended to 32 bits; a 64-bit register is a pair `%rd.lo`/`%rd.hi`; predicates are virtual
predicates.  Handlers compute into temporaries and commit at the end, so a destination that is
also a source is never overwritten early; the allocator coalesces the copies.
"""

from __future__ import annotations

import contextlib
from typing import Callable

from qwengpu.errors import Location, PtxError
from qwengpu.isa import LANES, MASK32, Cmp, Op
from qwengpu.ptx import fold, ir, routines
from qwengpu.ptx.kernel_facts import shared_layout, single_constant_registers
from qwengpu.ptx.cuda_lines import readable
from qwengpu.ptx.geometry import SUPPORTED_SPECIALS, Geometry, lower_special
from qwengpu.ptx.local_memory import local_layout
from qwengpu.ptx.vcode import TRUE, ZERO, Source, SymbolRef, VInstr, VLabel, VPred, VReg

Handler = Callable[["Selector", ir.Instruction], None]
HANDLERS: dict[str, Handler] = {}
# Handlers of `.f32` instructions, registered with `@handles_float`: integer operations on the
# bits (`select_float`, `select_cvt`), the FPU's add and sub and the multiply (`select_fpu`),
# division and roots (`select_float_divide`); other `.f32` instructions are refused as
# arithmetic QwenGPU does not have yet.
FLOAT_HANDLERS: dict[str, Handler] = {}
# Opcodes that only move an `.f32` value: they run it as the `.b32` word it is.
F32_AS_BITS = frozenset({"mov", "ld", "st", "selp"})
# Opcodes whose own handler explains why their `.f32` form is refused.
F32_OWN_MESSAGE = frozenset({"atom", "red"})
FLOAT_ARITHMETIC = ("floating-point arithmetic QwenGPU does not have yet (add, sub, mul, fma, "
                    "div, rcp and sqrt run; rsqrt, ex2, lg2, sin, cos and tanh are not built; "
                    "comparisons, min/max, neg/abs, moves of .f32 and cvt to and from integers "
                    "are supported)")

# Special registers PTX has and QwenGPU does not; the ones the loader reads are SPECIALS.
OTHER_SPECIAL_REGISTERS = {"%clock", "%clock_hi", "%smid", "%nsmid", "%gridid",
                           "%lanemask_eq", "%lanemask_le", "%lanemask_lt", "%lanemask_ge",
                           "%lanemask_gt", "%pm", "%envreg", "%globaltimer", "%globaltimer_lo",
                           "%globaltimer_hi", "%total_smem_size", "%dynamic_smem_size",
                           "%aggr_smem_size", "%cluster_ctarank", "%clusterid", "%nclusterid",
                           "%cluster_nctarank", "%is_explicit_cluster", "%ctaid", "%tid",
                           "%ntid", "%nctaid", "%reserved_smem_offset_begin"}
SPECIALS = frozenset(SUPPORTED_SPECIALS)          # `qwengpu.ptx.geometry` reads them
SPECIALS_SHOWN = ("%tid", "%ntid", "%ctaid", "%nctaid (.x, .y, .z)", "%laneid", "%warpid",
                  "%nwarpid")


def _registrar(table: dict[str, Handler], opcodes: tuple[str, ...]
               ) -> Callable[[Handler], Handler]:
    def register(function: Handler) -> Handler:
        for opcode in opcodes:
            table[opcode] = function
        return function

    return register


def handles(*opcodes: str) -> Callable[[Handler], Handler]:
    """Register a handler for PTX opcodes (the part before the first dot)."""
    return _registrar(HANDLERS, opcodes)


def handles_float(*opcodes: str) -> Callable[[Handler], Handler]:
    """Register the handler of the `.f32` form of PTX opcodes (`select_float`,
    `select_convert`)."""
    return _registrar(FLOAT_HANDLERS, opcodes)


def _as_bits(ins: ir.Instruction, type_name: str) -> str:
    """`.f32` read as `.b32` where the instruction only moves the word (F32_AS_BITS)."""
    return "b32" if type_name == "f32" and ins.opcode in F32_AS_BITS else type_name


def mask(width: int) -> int:
    return (1 << width) - 1 if width < 64 else (1 << 64) - 1


class Selector:
    """Lowers one kernel; see the module docstring."""

    def __init__(self, module: ir.Module, kernel: ir.Kernel, lanes: int = LANES,
                 proven_addresses: set[int] | None = None,
                 aligned_accesses: set[int] | None = None, geometry: Geometry = Geometry()):
        self.module = module
        self.geometry, self.lanes = geometry, lanes
        self.proven_addresses = proven_addresses
        self.aligned_accesses = aligned_accesses or set()
        self.constant_symbols = {"WARP_SZ": lanes}
        self.kernel = kernel
        self.params = {param.name: param for param in kernel.params}
        self.code: list[VInstr | VLabel] = []
        self.temp_count = 0
        self.ins: ir.Instruction | None = None
        self.guard: VPred = TRUE
        self.guard_negated = False
        self.used_variables: set[str] = set()
        self.constant_registers = single_constant_registers(kernel, self.constant_symbols)
        self.shared = shared_layout(module, kernel)
        self.local = local_layout(module, kernel)     # offsets of the .local variables
        self.routines: dict[str, routines.SharedRoutine] = {}

    # ---- driver -----------------------------------------------------------------------------

    def run(self) -> list[VInstr | VLabel]:
        labels = {statement.name for statement in self.kernel.body
                  if isinstance(statement, ir.Label)}
        self.labels = labels
        for statement in self.kernel.body:
            if isinstance(statement, ir.Label):
                self.code.append(VLabel(statement.name))
                continue
            self.lower(statement)
        routines.emit_routines(self)
        return self.code

    def lower(self, ins: ir.Instruction):
        self.ins = ins
        self.guard, self.guard_negated = TRUE, False
        if ins.guard is not None:
            self.guard = self.predicate_register(ins.guard.register, ins.guard.loc)
            self.guard_negated = ins.guard.negated
        handler = HANDLERS.get(ins.opcode)
        if "f32" in ins.modifiers and ins.opcode not in F32_AS_BITS | F32_OWN_MESSAGE:
            handler = FLOAT_HANDLERS.get(ins.opcode)
            if handler is None:
                raise self.unsupported(ins, FLOAT_ARITHMETIC)
        if handler is None:
            raise self.unsupported(ins)
        handler(self, ins)

    def unsupported(self, ins: ir.Instruction, detail: str = "") -> PtxError:
        hint = UNSUPPORTED_HINTS.get(".".join((ins.opcode, *ins.modifiers[:1])),
                                     UNSUPPORTED_HINTS.get(ins.opcode, ""))
        message = f"'{ins.full_opcode}' is not supported by QwenGPU"
        if detail:
            message += f": {detail}"
        elif hint:
            message += f" ({hint})"
        return self.error(message)

    def error(self, message: str, at=None) -> PtxError:
        loc = getattr(at, "loc", None) or (self.ins.loc if self.ins else self.kernel.loc)
        return PtxError(message, loc, self.module.source)

    # ---- modifiers and operand counts ----------------------------------------------------------

    def type_of(self, ins: ir.Instruction, allowed: set[str] | None = None) -> str:
        """The instruction's (last) type modifier, checked to be an integer type."""
        types = [modifier for modifier in ins.modifiers if modifier in ir.TYPE_WIDTHS]
        if not types:
            raise self.error(f"'{ins.full_opcode}' has no type (such as .u32)")
        type_name = _as_bits(ins, types[-1])
        if type_name not in ir.INTEGER_TYPES and type_name != "pred":
            raise self.unsupported(ins, f"type .{type_name} (QwenGPU computes with integers "
                                        "only)")
        if allowed is not None and type_name not in allowed:
            names = ", ".join("." + name for name in sorted(allowed))
            raise self.unsupported(ins, f"type .{type_name} (supported here: {names})")
        return type_name

    def check_modifiers(self, ins: ir.Instruction, allowed: set[str]):
        """Reject modifiers this lowering does not implement (.sat, .cc, .ftz, ...)."""
        modifiers = [_as_bits(ins, modifier) for modifier in ins.modifiers]
        for modifier in modifiers:
            if modifier in ir.TYPE_WIDTHS and modifier not in ir.INTEGER_TYPES | {"pred"}:
                raise self.unsupported(ins, f"type .{modifier} (QwenGPU computes with integers "
                                            "only)")
        for modifier in modifiers:
            if modifier in ir.TYPE_WIDTHS and modifier in ir.INTEGER_TYPES | {"pred"}:
                continue
            if modifier not in allowed:
                raise self.unsupported(ins, f"the .{modifier} modifier")

    def operands(self, ins: ir.Instruction, *counts: int) -> tuple:
        if len(ins.operands) not in counts:
            wanted = " or ".join(str(count) for count in counts)
            raise self.error(f"'{ins.full_opcode}' takes {wanted} operands, "
                             f"got {len(ins.operands)}")
        return ins.operands

    # ---- registers ----------------------------------------------------------------------------

    def register_type(self, name: str, loc: Location) -> str:
        type_name = self.kernel.registers.get(name)
        if type_name is None:
            if name.split(".")[0].rstrip("0123456789") in OTHER_SPECIAL_REGISTERS:
                raise PtxError(f"special register {name} is not supported by QwenGPU (it has "
                               f"{', '.join(SPECIALS_SHOWN)})", loc, self.module.source)
            raise PtxError(f"register {name} is not declared", loc, self.module.source)
        return type_name

    def register_width(self, operand: ir.Register) -> int:
        return ir.type_width(self.register_type(operand.name, operand.loc))

    def predicate_register(self, name: str, loc: Location) -> VPred:
        if self.register_type(name, loc) != "pred":
            raise PtxError(f"{name} is not a predicate", loc, self.module.source)
        return VPred(name)

    def temp(self) -> VReg:
        self.temp_count += 1
        return VReg(f"$t{self.temp_count}")

    def temp_predicate(self) -> VPred:
        self.temp_count += 1
        return VPred(f"$p{self.temp_count}")

    # ---- emitting code ------------------------------------------------------------------------

    def emit(self, op: Op, d=None, a=None, b=None, c=None, imm=0,
             guard: tuple[VPred, bool] | None = None, is_move: bool = False,
             space: int = 0) -> VInstr:
        """Append one instruction.  By default it runs under the PTX instruction's guard; a
        handler that needs its own condition passes `guard=(predicate, negated)`."""
        if a is not None and not isinstance(a, (VReg, VPred)):
            raise AssertionError(f"operand a must be a register, got {a!r}")
        if guard is None:
            predicate, negated = self.guard, self.guard_negated
            full_def = _is_temporary(d)
        else:
            predicate, negated = guard
            full_def = False
        instruction = VInstr(op=op, d=d, a=a, b=b, c=c, imm=imm, guard=predicate,
                             guard_negated=negated, space=space, full_def=full_def,
                             is_move=is_move, origin=self.ins)
        self.code.append(instruction)
        return instruction

    @contextlib.contextmanager
    def unguarded(self):
        """Emit without the PTX instruction's guard: for sequences with no side effects that
        compute into temporaries (loops, bit tricks); the result is committed under the guard
        afterwards, so lanes whose guard fails compute something nobody reads."""
        saved = self.guard, self.guard_negated
        self.guard, self.guard_negated = TRUE, False
        try:
            yield
        finally:
            self.guard, self.guard_negated = saved

    def new_label(self, purpose: str) -> str:
        """A label name no PTX label can clash with (PTX names cannot contain '#')."""
        self.temp_count += 1
        return f"#{purpose}{self.temp_count}"

    def place_label(self, name: str):
        self.code.append(VLabel(name))

    def register(self, source: Source) -> VReg:
        """A register holding `source`: the register itself, rz for 0, or a loaded constant."""
        if isinstance(source, VReg):
            return source
        if isinstance(source, int) and source & MASK32 == 0:
            return ZERO
        temp = self.temp()
        self.emit(Op.ADD, d=temp, a=ZERO, b=operand_b(source))
        return temp

    def alu(self, op: Op, a: Source, b: Source, into: VReg | None = None) -> Source:
        """`op a, b` into a fresh temporary (or `into`); known operands are folded and
        identities (`x + 0`, `x & -1`, ...) return `a` itself when no destination is forced."""
        if isinstance(a, int) and isinstance(b, int):
            return self.move(fold.fold(op, a, b), into)
        if not isinstance(a, VReg) and op in fold.COMMUTATIVE and isinstance(b, VReg):
            a, b = b, a
        if isinstance(b, int) and fold.identity_result(op, b):
            return self.move(a, into)
        if isinstance(b, int) and b & MASK32 == 0 and op in (Op.AND, Op.MUL):
            return self.move(0, into)
        destination = into if into is not None else self.temp()
        self.emit(op, d=destination, a=self.register(a), b=operand_b(b))
        return destination

    def move(self, source, into=None):
        """`source` itself, or copied into `into` when a destination is forced."""
        if into is None or source == into:
            return source
        if isinstance(source, VPred):
            self.emit(Op.PAND, d=into, a=source, b=TRUE, is_move=source != TRUE)
        elif isinstance(source, VReg):
            self.emit(Op.ADD, d=into, a=source, b=0, is_move=source != ZERO)
        else:
            self.emit(Op.ADD, d=into, a=ZERO, b=operand_b(source))
        return into

    def commit(self, *moves: tuple):
        """Copy results into destinations as one parallel assignment: no move overwrites a
        register that another pending move still reads."""
        pending = [(destination, source) for destination, source in moves
                   if destination is not None and destination != source]
        while pending:
            for index, (destination, source) in enumerate(pending):
                others = pending[:index] + pending[index + 1:]
                if all(other_source != destination for _, other_source in others):
                    self.move(source, destination)
                    pending.pop(index)
                    break
            else:  # a cycle: park one source in a temporary
                source = pending[0][1]
                parked = self.temp() if isinstance(source, VReg) else self.temp_predicate()
                self.move(source, parked)
                pending = [(d, parked if s == source else s) for d, s in pending]

    def compare(self, cmp: Cmp, a: Source, b: Source, into: VPred | None = None) -> VPred:
        """A predicate `cmp(a, b)`."""
        destination = into if into is not None else self.temp_predicate()
        if isinstance(a, int) and isinstance(b, int):
            # A known outcome: rz == 0 is true, rz != 0 is false.
            outcome = fold.compare(cmp, a, b)
            self.emit(Op.SETP, d=destination, a=ZERO, b=0, c=Cmp.EQ if outcome else Cmp.NE)
            return destination
        if not isinstance(a, VReg) and isinstance(b, VReg):
            a, b, cmp = b, a, fold.MIRRORED[cmp]
        self.emit(Op.SETP, d=destination, a=self.register(a), b=operand_b(b), c=cmp)
        return destination

    def predicate_op(self, op: Op, a: VPred, b: VPred | None = None,
                     into: VPred | None = None) -> VPred:
        destination = into if into is not None else self.temp_predicate()
        self.emit(op, d=destination, a=a, b=b)
        return destination

    # ---- reading operands ---------------------------------------------------------------------

    def value(self, operand, width: int = 32, signed: bool = False) -> Source:
        """A PTX operand of `width` (<= 32) bits as a 32-bit source, zero- or sign-extended."""
        if isinstance(operand, ir.Immediate):
            return _extend(operand.value & mask(width), width, signed)
        if isinstance(operand, ir.Symbol):
            return self.symbol_value(operand)
        if isinstance(operand, ir.Register):
            if operand.name in SPECIALS:
                return self.special(operand)
            if operand.name in self.constant_registers:
                return _extend(self.constant_registers[operand.name] & mask(width), width,
                               signed)
            register_width = self.register_width(operand)
            if register_width == 1:
                raise self.error(f"{operand.name} is a predicate; a value is needed here",
                                 operand)
            register = VReg(operand.name + ".lo") if register_width == 64 else VReg(operand.name)
            effective = min(width, register_width)
            if not signed and effective == register_width:
                return register  # a narrow register already holds its value zero-extended
            return self.extend(register, effective, signed)
        raise self.error("a register or an immediate is needed here", operand)

    def extend(self, source: Source, width: int, signed: bool) -> Source:
        """`source` (zero-extended from at least `width` bits) cut to `width` bits and extended
        back to 32 bits."""
        if width >= 32:
            return source
        if isinstance(source, int):
            return _extend(source & mask(width), width, signed)
        if signed:
            shift = 32 - width
            return self.alu(Op.SHR_S, self.alu(Op.SHL, source, shift), shift)
        return self.alu(Op.AND, source, mask(width))

    def pair(self, operand, signed: bool = False) -> tuple[Source, Source]:
        """A PTX operand as a 64-bit (low, high) pair; narrower ones are extended."""
        if isinstance(operand, ir.Immediate):
            value = operand.value & mask(64)
            return value & MASK32, value >> 32
        if isinstance(operand, ir.Register) and operand.name not in SPECIALS \
                and self.register_width(operand) == 64:
            return VReg(operand.name + ".lo"), VReg(operand.name + ".hi")
        if isinstance(operand, ir.Register) and operand.name not in SPECIALS:
            width = self.register_width(operand)
            low = self.value(operand, width, signed)
            return low, self.sign_word(low) if signed else 0
        low = self.value(operand, 32, False)
        return low, 0

    def is_wide_register(self, operand: ir.Register) -> bool:
        """A 64-bit general register (a (low, high) pair), not a special one."""
        return operand.name not in SPECIALS and self.register_width(operand) == 64

    def sign_word(self, low: Source) -> Source:
        """0 or all ones: the high word of `low` sign-extended to 64 bits."""
        return self.alu(Op.SHR_S, low, 31)

    def predicate(self, operand) -> VPred:
        """A predicate source; `!%p` is computed into a temporary."""
        if isinstance(operand, ir.Register):
            return self.predicate_register(operand.name, operand.loc)
        if isinstance(operand, ir.NegatedRegister):
            return self.predicate_op(Op.PNOT, self.predicate_register(operand.name, operand.loc))
        if isinstance(operand, ir.Immediate) and operand.value in (0, 1):
            return self.compare(Cmp.EQ if operand.value else Cmp.NE, 0, 0)
        raise self.error("a predicate register is needed here", operand)

    def special(self, operand: ir.Register) -> Source:
        """A special register: the machine's, or computed from them (`qwengpu.ptx.geometry`)."""
        return lower_special(self, operand.name, self.geometry, self.lanes)

    def symbol_value(self, operand: ir.Symbol) -> Source:
        """A name used as a value: the address of a memory variable, or WARP_SZ."""
        name = operand.name
        if name in self.constant_symbols:
            return self.constant_symbols[name]
        if name in self.local.offsets:           # an address in the .local space
            return self.local.offsets[name]
        variable = self.memory_variable(operand)
        if variable.state_space == "shared":
            return self.shared.offsets[name]      # a shared address: an offset in the window
        return SymbolRef(name)

    def memory_variable(self, operand: ir.Symbol) -> ir.Variable:
        """The `.global`/`.const`/`.shared` variable a symbol names, or a clear error."""
        name = operand.name
        variable = self.kernel.variables.get(name) or self.module.variables.get(name)
        if variable is None:
            if name in self.params:
                raise self.error(f"parameter {readable(name)} can only be read with ld.param",
                                 operand)
            if name in self.labels:
                raise self.error(f"label {name} is not a value", operand)
            if name in self.module.functions or name in self.module.kernels:
                raise self.error(f"{readable(name)} is a function; its address (a function "
                                 "pointer) is not supported, only calls by name", operand)
            raise self.error(f"unknown symbol {readable(name)}", operand)
        if variable.state_space == "shared":
            return variable
        if variable.state_space not in ("global", "const"):
            raise self.error(_state_space_message(variable), operand)
        if variable.extern or variable.array_length == 0:
            raise self.error(f"{readable(name)} is declared extern (its size is unknown)",
                             operand)
        self.used_variables.add(name)
        return variable

    # ---- destinations -------------------------------------------------------------------------

    def destination(self, operand) -> tuple[VReg, int]:
        """A register destination of up to 32 bits and its width; 64-bit ones are refused."""
        register = self._destination_register(operand)
        width = self.register_width(register)
        if width == 1:
            raise self.error(f"{register.name} is a predicate; a value register is needed",
                             operand)
        if width == 64:
            raise self.error(f"{register.name} is a 64-bit register; a 32-bit one is needed",
                             operand)
        return VReg(register.name), width

    def destination_pair(self, operand) -> tuple[VReg, VReg]:
        register = self._destination_register(operand)
        if self.register_width(register) != 64:
            raise self.error(f"{register.name} is not a 64-bit register", operand)
        return VReg(register.name + ".lo"), VReg(register.name + ".hi")

    def destination_width(self, operand) -> int:
        return self.register_width(self._destination_register(operand))

    def destination_predicate(self, operand) -> VPred:
        register = self._destination_register(operand)
        return self.predicate_register(register.name, register.loc)

    def _destination_register(self, operand) -> ir.Register:
        if not isinstance(operand, ir.Register) or operand.name in SPECIALS:
            raise self.error("the destination must be a register", operand)
        self.register_type(operand.name, operand.loc)
        return operand

    def write(self, operand, value: Source, value_width: int = 32, signed: bool = False):
        """Write a 32-bit result into a destination of any width: a narrower register keeps
        the low bits, a 64-bit one gets the value extended per `signed`."""
        width = self.destination_width(operand)
        if width == 64:
            low, high = self.destination_pair(operand)
            high_value = self.sign_word(value) if signed else 0
            self.commit((low, value), (high, high_value))
            return
        destination, width = self.destination(operand)
        if width < 32 and width < value_width:
            value = self.alu(Op.AND, value, mask(width))
        self.commit((destination, value))


def _is_temporary(register) -> bool:
    return isinstance(register, (VReg, VPred)) and register.name.startswith("$")


def operand_b(source):
    """A source as operand B: a register, or an immediate (ints kept as 32-bit words)."""
    if isinstance(source, int):
        return source & MASK32
    return source


def _extend(value: int, width: int, signed: bool) -> int:
    if signed and width < 64 and value >> (width - 1) & 1:
        value -= 1 << width
    return value & MASK32


def _state_space_message(variable: ir.Variable) -> str:
    space, name = variable.state_space, readable(variable.name)
    if space == "shared":
        return (f"{name} is in .shared memory, which QwenGPU does not have "
                "(all data lives in the 126 words of global memory)")
    if space == "local":
        return (f"{name} is in .local memory: address it with ld.local/st.local, or make a "
                "generic address of it with cvta.local")
    if space == "param":
        return f"{name} is a call parameter; function calls are not supported"
    return f"{name} is in .{space} memory, which QwenGPU does not have"


UNSUPPORTED_HINTS = {
    "call": "calls are inlined before selection (qwengpu.ptx.inline.inline_calls)",
    # bar.sync/barrier.sync is __syncthreads, bar.warp.sync __syncwarp
    "bar": "__syncthreads: QwenGPU has no barrier; its warps take turns one instruction at a "
           "time, and none can be held until the others arrive",
    "barrier": "__syncthreads: QwenGPU has no barrier; its warps take turns one instruction at "
               "a time, and none can be held until the others arrive",
    "bar.warp": "__syncwarp: QwenGPU has no barrier; a warp runs the lanes that are at its "
                "lowest PC, and lanes on another path of a branch cannot be held until the "
                "others arrive",
    "atom": "atomics",
    "red": "atomics",
    "trap": "the trap instruction",
    "tex": "textures",
    "shfl": "warp shuffles",
    "vote": "warp votes",
    "activemask": "warp masks",
    "addc": "carry chains",
    "subc": "carry chains",
    "madc": "carry chains",
}
