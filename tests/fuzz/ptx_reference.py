"""A plain per-thread PTX evaluator: the other side of the differential fuzz tests.

It reads the small PTX subset that `ptx_generator.py` writes and runs every thread of a grid
on its own, one after the other, over a dict of 32-bit global memory words keyed by byte
address.  The meaning of each instruction comes from the PTX ISA manual, written here from
scratch: this module shares no code with `qwengpu` (it does not import it), so that a
mistake in the loader cannot hide by being made on both sides.

Memory accesses are `ld`/`st.global` of 32 and 64 bits; each faults unless it is naturally
aligned (its address a multiple of its size, as the PTX manual requires and a GPU checks
first) and every word it touches is a word of memory.  Buffers are laid out one after another
from address 0, each at a multiple of the widest access of the kernel (docs/launch.md).

Local memory: a kernel's `.local` arrays (`.local .align A .b8 name[N];`) are laid out in
each thread's own local space from offset 0; the name as a value is its offset (`mov.u64
%SPL, __local_depot0`), `ld.local`/`st.local.u32` read and write words at offsets inside the
arrays (a word never written is an error: PTX leaves it undefined).  A generic address of
local memory (`cvta.local`) is the offset plus `LOCAL_GENERIC_BASE`, far past any global
address, so a generic `ld`/`st` reaches the local space exactly when its address came from
`cvta.local`; `cvta.to.local` subtracts it again.  The machine's layout (windows of one
memory) is nothing this evaluator knows of.

Besides integer arithmetic it knows `prmt` (every mode, register or immediate selectors),
`dp4a`/`dp2a` and `div`/`rem` of every width (division by zero is an error: undefined), and
the `.f32` instructions and `cvt`s of `ptx_float_reference.py` (binary32 by numpy, immediates
such as `0f3F000000` by their bits).

Threads are independent in the kernels it is meant for (no shared memory, no barriers, no
warp operations, each thread writes only its own words), so running them in sequence gives
what a GPU gives.  Grids and blocks may have up to 3 dimensions (`grid=[2, 2]`): threads
are numbered as CUDA numbers them, and `%tid`, `%ntid`, `%ctaid`, `%nctaid` have `.x`, `.y`
and `.z`.  A `call` of a `.func` of the text runs it as a call, with a stack: the callee
gets registers of its own and its parameters' values, `st.param`/`ld.param` move values
through each frame's parameter space, and `ret` returns (the loader inlines calls
instead, so the two meet only at the results).  Anything it does not understand, a register
read before it is written, a bad address and a thread that runs past `step_limit` steps are
`PtxReferenceError`s: the shrinker of the fuzz tests relies on that to throw away kernels
that stopped being valid.

    buffers = run_ptx(text, grid=2, block=8, buffers={"in": [...], "out": [...]},
                      args=["in", "out", 16])
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import ptx_float_reference as floats

DEFAULT_STEP_LIMIT = 10_000
SPECIAL_REGISTERS = tuple(f"%{kind}.{axis}" for kind in ("tid", "ntid", "ctaid", "nctaid")
                          for axis in "xyz")
MAX_CALL_DEPTH = 16
LOCAL_GENERIC_BASE = 1 << 48          # generic addresses of local memory start here
# prmt's modes (the PTX manual's table): for c[1:0] = 0..3, the source bytes of d.b3..d.b0
PRMT_MODES = {
    "f4e": ["3210", "4321", "5432", "6543"], "b4e": ["5670", "6701", "7012", "0123"],
    "rc8": ["0000", "1111", "2222", "3333"], "ecl": ["3210", "3211", "3222", "3333"],
    "ecr": ["0000", "1110", "2210", "3210"], "rc16": ["1010", "3232", "1010", "3232"],
}


class PtxReferenceError(Exception):
    """The kernel is outside what the evaluator understands, or is not valid PTX to run."""


class StepLimitExceeded(PtxReferenceError):
    """A thread ran longer than the step limit (most likely an endless loop)."""


def mask(width: int) -> int:
    return (1 << width) - 1


def signed(value: int, width: int) -> int:
    value &= mask(width)
    return value - (1 << width) if value >> (width - 1) else value


def shift_left(a: int, amount: int, width: int) -> int:
    # PTX clamps shift amounts greater than the width to the width.
    return 0 if amount >= width else a << amount


def shift_right_unsigned(a: int, amount: int, width: int) -> int:
    return 0 if amount >= width else a >> amount


def shift_right_signed(a: int, amount: int, width: int) -> int:
    return signed(a, width) >> min(amount, width)


# Each binary operation on unsigned operands of `width` bits; the result is masked afterwards.
# `signedness` is "s" or "u" from the instruction's type ("b" types read as unsigned).
BINARY = {
    "add": lambda a, b, w, s: a + b,
    "sub": lambda a, b, w, s: a - b,
    "mul.lo": lambda a, b, w, s: a * b,
    "mul.hi": lambda a, b, w, s: (signed(a, w) * signed(b, w) if s == "s" else a * b) >> w,
    "and": lambda a, b, w, s: a & b,
    "or": lambda a, b, w, s: a | b,
    "xor": lambda a, b, w, s: a ^ b,
    "shl": lambda a, b, w, s: shift_left(a, b, w),
    "shr": lambda a, b, w, s: (shift_right_signed if s == "s" else shift_right_unsigned)(a, b, w),
    "min": lambda a, b, w, s: min(signed(a, w), signed(b, w)) if s == "s" else min(a, b),
    "max": lambda a, b, w, s: max(signed(a, w), signed(b, w)) if s == "s" else max(a, b),
    "div": lambda a, b, w, s: divide(a, b, w, s)[0],
    "rem": lambda a, b, w, s: divide(a, b, w, s)[1],
}


def divide(a: int, b: int, width: int, kind: str) -> tuple[int, int]:
    """PTX `div`/`rem`: truncating towards zero, the remainder with the dividend's sign."""
    if kind == "s":
        a, b = signed(a, width), signed(b, width)
    if b == 0:
        raise PtxReferenceError("division by zero (undefined in PTX)")
    quotient = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return quotient, a - quotient * b


def permute(a: int, b: int, c: int, mode: str | None) -> int:
    """prmt: four bytes of {b, a} (a is bytes 0..3), by c's nibbles or by the mode's table."""
    source = (b & mask(32)) << 32 | (a & mask(32))
    result = 0
    for position in range(4):
        if mode is None:
            control = (c >> (4 * position)) & 0xF
            byte = (source >> (8 * (control & 7))) & 0xFF
            if control & 8:
                byte = 0xFF if byte & 0x80 else 0
        else:
            index = int(PRMT_MODES[mode][c & 3][3 - position])
            byte = (source >> (8 * index)) & 0xFF
        result |= byte << (8 * position)
    return result


def dot_product(parts: list[str], a: int, b: int, c: int) -> int:
    """dp4a.atype.btype / dp2a.lo|hi.atype.btype: c plus products of extended bytes (and
    halfwords of a for dp2a)."""
    a_signed, b_signed = parts[-2] == "s32", parts[-1] == "s32"

    def field(word, index, bits, is_signed):
        value = (word >> (bits * index)) & mask(bits)
        return signed(value, bits) if is_signed else value

    if parts[0] == "dp4a":
        terms = [(field(a, k, 8, a_signed), field(b, k, 8, b_signed)) for k in range(4)]
    else:
        first = 2 if parts[1] == "hi" else 0
        terms = [(field(a, k, 16, a_signed), field(b, first + k, 8, b_signed))
                 for k in range(2)]
    return c + sum(x * y for x, y in terms)

# setp comparisons on (a, b) read as signed or unsigned integers; lo/ls/hi/hs are always unsigned.
COMPARE = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b,
    "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
    "lo": lambda a, b: a < b, "ls": lambda a, b: a <= b,
    "hi": lambda a, b: a > b, "hs": lambda a, b: a >= b,
}
UNSIGNED_COMPARE = {"lo", "ls", "hi", "hs"}


@dataclass
class Instruction:
    """One PTX instruction: `@guard opcode operands;` as written, with its line number."""

    opcode: str
    operands: list[str]
    line: int
    guard: str | None = None            # a predicate register name
    guard_negated: bool = False
    call: tuple | None = None           # (result names, function, argument names) of a call

    @property
    def parts(self) -> list[str]:
        return self.opcode.split(".")

    @property
    def type_name(self) -> str:
        return self.parts[-1]

    @property
    def width(self) -> int:
        return int(self.type_name[1:])

    def fail(self, message: str) -> PtxReferenceError:
        return PtxReferenceError(f"line {self.line}: {self.opcode}: {message}")


@dataclass
class Kernel:
    """The `.entry` (or a `.func`: `returns` names its return parameters)."""

    name: str
    params: list[tuple[str, str]]       # (name, type such as "u64")
    instructions: list[Instruction] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)   # label -> index of the next instruction
    returns: list[str] = field(default_factory=list)
    functions: dict[str, "Kernel"] = field(default_factory=dict)   # the entry's: every .func
    locals: dict[str, tuple[int, int]] = field(default_factory=dict)   # .local: (offset, bytes)

    @property
    def local_bytes(self) -> int:
        return max((offset + size for offset, size in self.locals.values()), default=0)


HEADER = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)|"
                    r"\.func\s*(?:\(([^)]*)\))?\s*([\w$]+)\s*\(([^)]*)\)", re.S)
PARAM = re.compile(r"\.param\s+\.(\w+)\s+([\w$]+)")
LABEL = re.compile(r"^([\w$]+):$")
GUARD = re.compile(r"^@(!?)(%\w+)\s+")
CALL = re.compile(r"^call(?:\.uni)?\s*(?:\(([^)]*)\)\s*,)?\s*([\w$]+)\s*(?:,\s*\(([^)]*)\))?$")
LOCAL_ARRAY = re.compile(r"^\.local\s+(?:\.align\s+(\d+)\s+)?\.b8\s+([\w$]+)\[(\d+)\];$")


def strip_comment(line: str) -> str:
    return line.split("//", 1)[0].strip()


def parse_kernel(text: str) -> Kernel:
    """The single `.entry` of `text`: its parameters, instructions and labels, with every
    `.func` of the text in `functions`."""
    headers = list(HEADER.finditer(text))
    entries = [header for header in headers if header.group(1)]
    if not entries:
        raise PtxReferenceError("no .entry in the PTX text")
    kernel = None
    functions = {}
    for index, header in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(text)
        if header.group(1):
            function = Kernel(header.group(1), _params(header.group(2)))
            kernel = kernel or function
        else:
            function = Kernel(header.group(4), _params(header.group(5)),
                              returns=[name for name, _ in _params(header.group(3) or "")])
            functions[function.name] = function
        _parse_body(function, text, header.end(), end)
    kernel.functions = functions
    return kernel


def _params(text: str) -> list[tuple[str, str]]:
    return [(match.group(2), match.group(1)) for match in PARAM.finditer(text)]


def _parse_body(kernel: Kernel, text: str, start: int, end: int):
    start_line = text.count("\n", 0, start) + 1
    lines = text[start:end].split("\n")
    for offset, raw in enumerate(lines):
        line = strip_comment(raw)
        number = start_line + offset
        local = LOCAL_ARRAY.match(line)
        if local:
            align = int(local.group(1) or 1)
            offset = -(-kernel.local_bytes // align) * align
            kernel.locals[local.group(2)] = (offset, int(local.group(3)))
            continue
        if not line or line in ("{", "}") or line.startswith("."):
            continue
        label = LABEL.match(line)
        if label:
            kernel.labels[label.group(1)] = len(kernel.instructions)
            continue
        if not line.endswith(";"):
            raise PtxReferenceError(f"line {number}: expected an instruction ending in ';': {line}")
        kernel.instructions.append(parse_instruction(line[:-1].strip(), number))


def parse_instruction(text: str, number: int) -> Instruction:
    guard, negated = None, False
    match = GUARD.match(text)
    if match:
        negated, guard = match.group(1) == "!", match.group(2)
        text = text[match.end():]
    call = CALL.match(text)
    if call:
        names = [[name.strip() for name in (group or "").split(",") if name.strip()]
                 for group in (call.group(1), call.group(3))]
        return Instruction("call", [], number, guard, negated,
                           call=(names[0], call.group(2), names[1]))
    opcode, _, rest = text.partition(" ")
    operands = [operand.strip() for operand in rest.split(",")] if rest.strip() else []
    return Instruction(opcode, operands, number, guard, negated)


def parse_immediate(text: str) -> int | None:
    if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", text):        # a binary32 by its bits
        return int(text[2:], 16)
    text = text.rstrip("U")
    negative = text.startswith("-")
    digits = text[1:] if negative else text
    try:
        value = int(digits, 16) if digits.lower().startswith("0x") else int(digits, 10)
    except ValueError:
        return None
    return -value if negative else value


class Thread:
    """The registers of one thread and the reading and writing of operands."""

    def __init__(self, special: dict[str, int], symbols: dict[str, int] | None = None):
        self.special = special
        self.symbols = symbols or {}                # .local arrays: their offsets
        self.registers: dict[str, int] = {}
        self.param_space: dict[str, int] = {}     # the running function's .param variables
        self.steps = 0
        self.local: dict[int, int] = {}             # the thread's local words by offset

    def read(self, operand: str, width: int, instruction: Instruction) -> int:
        if operand in self.special:
            return self.special[operand] & mask(width)
        if operand in self.symbols:
            return self.symbols[operand] & mask(width)
        if operand.startswith("%"):
            if operand not in self.registers:
                raise instruction.fail(f"{operand} is read before it is written")
            value = self.registers[operand]
            if isinstance(value, bool):
                raise instruction.fail(f"{operand} is a predicate; a value is needed")
            return value & mask(width)
        value = parse_immediate(operand)
        if value is None:
            raise instruction.fail(f"cannot read operand {operand!r}")
        return value & mask(width)

    def predicate(self, name: str, instruction: Instruction) -> bool:
        value = self.registers.get(name)
        if not isinstance(value, bool):
            raise instruction.fail(f"{name} is not a predicate that has been set")
        return value

    def write(self, name: str, value, width: int | None = None):
        self.registers[name] = value if width is None else value & mask(width)


class Machine:
    """Global memory and parameters shared by the threads of one launch."""

    def __init__(self, kernel: Kernel, memory: dict[int, int], params: dict[str, int],
                 step_limit: int):
        self.kernel = kernel
        self.memory = memory
        self.params = params
        self.step_limit = step_limit

    def address(self, operand: str, thread: Thread, instruction: Instruction,
                size: int = 4, space: str = "global") -> int:
        match = re.fullmatch(r"\[\s*([%\w$]+)\s*(?:\+\s*(-?\w+))?\s*\]", operand)
        if match is None:
            raise instruction.fail(f"cannot read address {operand!r}")
        base = thread.read(match.group(1), 64, instruction)
        offset = parse_immediate(match.group(2)) if match.group(2) else 0
        address = (base + offset) & mask(64)
        if address % size:
            raise instruction.fail(f"byte address {address} is not a multiple of {size}")
        if space == "local":
            if address + size > self.kernel.local_bytes:
                raise instruction.fail(f"local offset {address} is outside the local arrays")
            return address
        if any(address + word not in self.memory for word in range(0, size, 4)):
            raise instruction.fail(f"byte address {address} is not a word of memory")
        return address

    def local_word(self, thread: Thread, offset: int, instruction: Instruction) -> int:
        if offset not in thread.local:
            raise instruction.fail(f"local offset {offset} is read before it is written")
        return thread.local[offset]

    def generic(self, instruction: Instruction, thread: Thread):
        """A generic ld/st.u32: to local memory when its address came from cvta.local."""
        ops = instruction.operands
        operand = ops[1] if instruction.parts[0] == "ld" else ops[0]
        match = re.fullmatch(r"\[\s*([%\w$]+)\s*(?:\+\s*(-?\w+))?\s*\]", operand)
        base = thread.read(match.group(1), 64, instruction) if match else 0
        offset = parse_immediate(match.group(2)) if match and match.group(2) else 0
        address = (base + offset) & mask(64)
        if address >= LOCAL_GENERIC_BASE:
            local = f"[{(address - LOCAL_GENERIC_BASE)}]"
            offset = self.address(local, thread, instruction, 4, "local")
            if instruction.parts[0] == "ld":
                thread.write(ops[0], self.local_word(thread, offset, instruction))
            else:
                thread.local[offset] = thread.read(ops[1], 32, instruction)
        elif instruction.parts[0] == "ld":
            thread.write(ops[0], self.memory[self.address(ops[1], thread, instruction)])
        else:
            self.memory[self.address(ops[0], thread, instruction)] = \
                thread.read(ops[1], 32, instruction)

    def run_thread(self, thread: Thread):
        self.run_function(self.kernel, thread, 0)

    def run_function(self, function: Kernel, thread: Thread, depth: int):
        instructions, pc = function.instructions, 0
        while True:
            if pc >= len(instructions):
                raise PtxReferenceError("a thread ran past the last instruction without ret")
            thread.steps += 1
            if thread.steps > self.step_limit:
                raise StepLimitExceeded(f"a thread ran more than {self.step_limit} steps "
                                        f"(at line {instructions[pc].line}): an endless loop?")
            instruction = instructions[pc]
            pc += 1
            if instruction.guard is not None and \
                    thread.predicate(instruction.guard, instruction) == instruction.guard_negated:
                continue
            if instruction.opcode == "ret":
                return
            if instruction.opcode == "call":
                self.call(instruction, thread, depth)
                continue
            if instruction.parts[0] == "bra":
                target = instruction.operands[0]
                if target not in function.labels:
                    raise instruction.fail(f"unknown label {target}")
                pc = function.labels[target]
                continue
            self.execute(instruction, thread)

    def call(self, instruction: Instruction, thread: Thread, depth: int):
        """A call with a stack: the callee runs with registers of its own, its parameters
        holding the values of the caller's argument variables; its return parameters' values
        land in the caller's result variables."""
        results, name, args = instruction.call
        callee = self.kernel.functions.get(name)
        if callee is None:
            raise instruction.fail(f"no function {name}")
        if depth >= MAX_CALL_DEPTH:
            raise instruction.fail(f"calls nest deeper than {MAX_CALL_DEPTH}")
        if len(args) != len(callee.params) or len(results) > len(callee.returns):
            raise instruction.fail(f"{name} takes {len(callee.params)} arguments")
        for arg in args:
            if arg not in thread.param_space:
                raise instruction.fail(f"argument {arg} is not set")
        frame = {formal: thread.param_space[arg]
                 for (formal, _), arg in zip(callee.params, args)}
        saved = thread.registers, thread.param_space
        thread.registers, thread.param_space = {}, frame
        self.run_function(callee, thread, depth + 1)
        returned = thread.param_space
        thread.registers, thread.param_space = saved
        for result, formal in zip(results, callee.returns):
            if formal not in returned:
                raise instruction.fail(f"{name} returned without setting {formal}")
            thread.param_space[result] = returned[formal]

    def param_name(self, operand: str, instruction: Instruction) -> str:
        match = re.fullmatch(r"\[\s*([\w$]+)\s*(?:\+\s*0\s*)?\]", operand)
        if match is None:
            raise instruction.fail(f"cannot read parameter address {operand!r}")
        return match.group(1)

    def execute(self, instruction: Instruction, thread: Thread):
        parts, ops = instruction.parts, instruction.operands
        name, word = parts[0], instruction.type_name in ("u32", "b32", "s32")
        double = instruction.type_name in ("u64", "b64", "s64")
        if name == "ld" and parts[1] == "param":
            param = self.param_name(ops[1], instruction)
            if param in thread.param_space:
                thread.write(ops[0], thread.param_space[param], instruction.width)
                return
            if param not in self.params:
                raise instruction.fail(f"no parameter {param}")
            thread.write(ops[0], self.params[param], instruction.width)
        elif name == "st" and parts[1] == "param":
            param = self.param_name(ops[0], instruction)
            thread.param_space[param] = thread.read(ops[1], instruction.width, instruction)
        elif name == "ld" and parts[1] == "global" and word:
            thread.write(ops[0], self.memory[self.address(ops[1], thread, instruction)])
        elif name == "st" and parts[1] == "global" and word:
            address = self.address(ops[0], thread, instruction)
            self.memory[address] = thread.read(ops[1], 32, instruction)
        elif name == "ld" and parts[1] == "global" and double:
            address = self.address(ops[1], thread, instruction, 8)
            thread.write(ops[0], self.memory[address] | self.memory[address + 4] << 32, 64)
        elif name == "st" and parts[1] == "global" and double:
            address = self.address(ops[0], thread, instruction, 8)
            value = thread.read(ops[1], 64, instruction)
            self.memory[address], self.memory[address + 4] = value & mask(32), value >> 32
        elif name == "ld" and parts[1] == "local" and word:
            offset = self.address(ops[1], thread, instruction, 4, "local")
            thread.write(ops[0], self.local_word(thread, offset, instruction))
        elif name == "st" and parts[1] == "local" and word:
            offset = self.address(ops[0], thread, instruction, 4, "local")
            thread.local[offset] = thread.read(ops[1], 32, instruction)
        elif name in ("ld", "st") and parts[1] in ("u32", "b32", "s32"):
            self.generic(instruction, thread)
        elif name == "cvta" and parts[1:3] == ["to", "global"]:
            thread.write(ops[0], thread.read(ops[1], 64, instruction), 64)
        elif name == "cvta" and parts[1] == "local":
            thread.write(ops[0], thread.read(ops[1], 64, instruction) + LOCAL_GENERIC_BASE, 64)
        elif name == "cvta" and parts[1:3] == ["to", "local"]:
            thread.write(ops[0], thread.read(ops[1], 64, instruction) - LOCAL_GENERIC_BASE, 64)
        elif name in ("prmt", "dp4a", "dp2a"):
            a, b, c = (thread.read(operand, 32, instruction) for operand in ops[1:4])
            modes = [part for part in parts if part in PRMT_MODES]
            value = permute(a, b, c, modes[0] if modes else None) if name == "prmt" else \
                dot_product(parts, a, b, c)
            thread.write(ops[0], value, 32)
        elif name in ("and", "or", "xor") and parts[1:] == ["pred"]:   # logic on predicates
            a, b = (thread.predicate(operand, instruction) for operand in ops[1:3])
            thread.write(ops[0], {"and": a and b, "or": a or b, "xor": a != b}[name])
        elif instruction.type_name == "f32" or name == "cvt":
            execute_float(instruction, thread)
        else:
            execute_arithmetic(instruction, thread)


def execute_float(instruction: Instruction, thread: Thread):
    """A `.f32` instruction or a `cvt` (ptx_float_reference.py has their meaning)."""
    parts, ops = instruction.parts, instruction.operands
    name, modifiers = parts[0], set(parts[1:-1])
    values = ops[1:3] if name == "selp" else ops[1:]          # selp's last is a predicate
    words = [thread.read(operand, 32, instruction) for operand in values]
    try:
        if name in ("mov", "selp"):
            chosen = words[0] if name == "mov" or thread.predicate(ops[3], instruction) \
                else words[1]
            thread.write(ops[0], chosen, 32)
        elif name == "setp":
            comparison = parts[1]
            thread.write(ops[0], floats.compare(comparison, modifiers - {comparison},
                                                words[0], words[1]))
        elif name in ("add", "sub", "mul", "div", "sqrt", "rcp", "fma"):
            thread.write(ops[0], floats.arithmetic(name, modifiers, words), 32)
        elif name in ("min", "max"):
            thread.write(ops[0], floats.minimum_or_maximum(name, modifiers, *words), 32)
        elif name in ("neg", "abs"):
            thread.write(ops[0], floats.negate_or_absolute(name, modifiers, words[0]), 32)
        elif name == "cvt":
            thread.write(ops[0], floats.convert(parts[1:], words[0]), 32)
        else:
            raise instruction.fail("not a float instruction the reference evaluator knows")
    except floats.FloatError as error:
        raise instruction.fail(f"not modelled: {error}") from None


def execute_arithmetic(instruction: Instruction, thread: Thread):
    parts, ops = instruction.parts, instruction.operands
    name, width, kind = parts[0], instruction.width, instruction.type_name[0]

    def read(index: int, bits: int = width) -> int:
        return thread.read(ops[index], bits, instruction)

    if name == "mov":
        thread.write(ops[0], read(1), width)

    elif name == "not":
        thread.write(ops[0], ~read(1), width)
    elif name == "mul" and parts[1] == "wide":
        a, b = read(1), read(2)
        if kind == "s":
            a, b = signed(a, width), signed(b, width)
        thread.write(ops[0], a * b, 2 * width)
    elif name == "mad" and parts[1] == "lo":
        thread.write(ops[0], read(1) * read(2) + read(3), width)
    elif name == "setp":
        compare = parts[1]
        if compare not in COMPARE or len(parts) != 3:
            raise instruction.fail("unsupported comparison")
        a, b = read(1), read(2)
        if kind == "s" and compare not in UNSIGNED_COMPARE:
            a, b = signed(a, width), signed(b, width)
        thread.write(ops[0], bool(COMPARE[compare](a, b)))
    elif name == "selp":
        chosen = read(1) if thread.predicate(ops[3], instruction) else read(2)
        thread.write(ops[0], chosen, width)
    else:
        operation = ".".join(parts[:2]) if name in ("mul",) else name
        if operation not in BINARY or len(ops) != 3:
            raise instruction.fail("not an instruction the reference evaluator knows")
        b_width = 32 if name in ("shl", "shr") else width   # shift amounts are .u32
        result = BINARY[operation](read(1), read(2, b_width), width, kind)
        thread.write(ops[0], result, width)


def layout(buffers: dict[str, list[int]], alignment: int = 4
           ) -> tuple[dict[int, int], dict[str, int]]:
    """Memory (byte address -> word) with the buffers one after another from address 0, each
    at a multiple of `alignment` bytes, as docs/launch.md lays them out, and the byte address
    of each buffer."""
    memory, addresses, word = {}, {}, 0
    for name, values in buffers.items():
        word = -(-word // (alignment // 4)) * (alignment // 4)
        addresses[name] = 4 * word
        for value in values:
            memory[4 * word] = value & mask(32)
            word += 1
    return memory, addresses


def dim3(shape) -> tuple[int, int, int]:
    """A grid or block (a number, or a list of 1 to 3) as (x, y, z)."""
    numbers = [shape] if isinstance(shape, int) else list(shape)
    return tuple(numbers + [1] * (3 - len(numbers)))


def indices(shape: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """Every (x, y, z) of a shape, in CUDA's order: x fastest."""
    return [(x, y, z) for z in range(shape[2]) for y in range(shape[1]) for x in range(shape[0])]


def run_ptx(text: str, grid, block, buffers: dict[str, list[int]], args: list,
            step_limit: int = DEFAULT_STEP_LIMIT) -> dict[str, list[int]]:
    """Run every thread of the launch (a grid and block of 1 to 3 dimensions); the buffers
    afterwards, as unsigned 32-bit words."""
    kernel = parse_kernel(text)
    if len(args) != len(kernel.params):
        raise PtxReferenceError(f"kernel {kernel.name} takes {len(kernel.params)} arguments, "
                                f"got {len(args)}")
    wide = any(instruction.parts[:2] in (["ld", "global"], ["st", "global"])
               and instruction.width == 64
               for function in (kernel, *kernel.functions.values())
               for instruction in function.instructions)
    memory, addresses = layout(buffers, 8 if wide else 4)
    params = {}
    for (name, type_name), arg in zip(kernel.params, args):
        value = addresses[arg] if isinstance(arg, str) else arg
        params[name] = value & mask(int(type_name[1:]))
    machine = Machine(kernel, memory, params, step_limit)
    symbols = {name: offset for name, (offset, _) in kernel.locals.items()}
    grid, block = dim3(grid), dim3(block)
    for block_index in indices(grid):
        for thread_index in indices(block):
            special = {}
            for kind, values in (("tid", thread_index), ("ntid", block),
                                 ("ctaid", block_index), ("nctaid", grid)):
                special.update({f"%{kind}.{axis}": value for axis, value in zip("xyz", values)})
            machine.run_thread(Thread(special, symbols))
    return {name: [memory[addresses[name] + 4 * i] for i in range(len(values))]
            for name, values in buffers.items()}
