"""Launch geometry: CUDA's 3-D thread and block indices on QwenGPU's 1-D machine.

The machine knows a thread by flat numbers: `s2r tid` is the thread's index in its block,
`ntid` the block's thread count, `ctaid` the block's index in the grid and `nctaid` the
grid's block count (docs/isa.md).  The launch lays threads out x fastest, as CUDA numbers
them, so with a block of (bx, by, bz) threads the flat index t is `x + bx * (y + by * z)`,
and the loader computes

    %tid.x = t % bx        %tid.y = (t / bx) % by        %tid.z = t / (bx * by)

(and `%ctaid.*` from the flat block index and the grid's shape the same way), with the
shape's numbers as constants: a division by a power of two is a shift and its remainder a
mask; by another number d, the quotient is the high word of t times `ceil(2^32 / d)`, exact
for every t the launch can have (t * (that * d - 2^32) < 2^32), and the remainder is `t - q *
d` in one `mad`.  `%ntid.*` and `%nctaid.*` are constants.  A 1-D launch needs none of it:
`%tid.x` is `s2r tid` and `%ntid.x` `s2r ntid`, for any size, and `.y`/`.z` are 0 and 1.

`Geometry` is the shape a kernel is compiled for (`None` per part: 1-D, any size); the code
depends on it, so a program keeps it (`Program.geometry`, with the parts its specials read,
`shape_reads`) and a launch of another shape is refused (`launch_mismatch`).  `%laneid` and
`%warpid` (the warp's index in its block) are the machine's own; `%nwarpid` is the number of
warps in a block, `ceil(threads / LANES)`.  `special_range` gives the range analysis
(`qwengpu.ptx.ranges`) each special register's values.
"""

from __future__ import annotations

from dataclasses import dataclass

from qwengpu.isa import MASK32, Op, Special
from qwengpu.ptx import ir

Dims = tuple[int, int, int]

AXES = ("x", "y", "z")
_FLAT = {"tid": Special.TID, "ntid": Special.NTID, "ctaid": Special.CTAID,
         "nctaid": Special.NCTAID}
_PART = {"tid": "block", "ntid": "block", "ctaid": "grid", "nctaid": "grid"}
SUPPORTED_SPECIALS = tuple(f"%{kind}.{axis}" for kind in _FLAT for axis in AXES) + \
    ("%laneid", "%warpid", "%nwarpid")


def dims_of(value) -> Dims:
    """A launch file's `grid`/`block` (a number, or a list of 1 to 3 numbers) as (x, y, z)."""
    if isinstance(value, int):
        return value, 1, 1
    padded = list(value) + [1] * (3 - len(value))
    return padded[0], padded[1], padded[2]


def volume(dims: Dims) -> int:
    return dims[0] * dims[1] * dims[2]


def shown(dims: Dims) -> str:
    """`8` for a 1-D shape, `4x2` or `2x3x2` otherwise (as CUDA's dim3 reads)."""
    used = list(dims)
    while len(used) > 1 and used[-1] == 1:
        used.pop()
    return "x".join(str(number) for number in used)


@dataclass(frozen=True)
class Geometry:
    """The launch shape code is compiled for: a block's and a grid's (x, y, z), or None for
    a 1-D one of any size (whose code reads the machine's flat registers)."""

    block: Dims | None = None
    grid: Dims | None = None

    @classmethod
    def of(cls, block: Dims, grid: Dims) -> "Geometry":
        return cls(block if block[1:] != (1, 1) else None, grid if grid[1:] != (1, 1) else None)

    def dims(self, part: str) -> Dims | None:
        return self.block if part == "block" else self.grid

    def constants(self, lanes: int) -> dict[str, int]:
        """The special registers this shape makes constants."""
        known = {}
        for index_name, count_name, part in (("tid", "ntid", "block"),
                                             ("ctaid", "nctaid", "grid")):
            dims = self.dims(part)
            for axis_number, axis in enumerate(AXES):
                if dims is None and axis == "x":
                    continue                    # the flat register, any size
                size = dims[axis_number] if dims is not None else 1
                known[f"%{count_name}.{axis}"] = size
                if size == 1:
                    known[f"%{index_name}.{axis}"] = 0
        if self.block is not None:
            known["%nwarpid"] = -(-volume(self.block) // lanes)
        return known

    def describe(self, part: str) -> str:
        dims = self.dims(part)
        return f"a 1-D {part} (of any size)" if dims is None else f"{part} {shown(dims)}"


def shape_reads(kernel: ir.Kernel) -> frozenset[str]:
    """Which parts of the launch's shape ("block", "grid") the kernel's special registers
    read (`%nwarpid` reads the block's only through a known shape: `Geometry.constants`)."""
    reads = set()
    for statement in kernel.body:
        if isinstance(statement, ir.Instruction):
            for operand in statement.operands:
                for name in _register_names(operand):
                    kind = name[1:].split(".")[0]
                    if kind in _PART and name in SUPPORTED_SPECIALS:
                        reads.add(_PART[kind])
                    elif name == "%nwarpid":
                        reads.add("nwarpid")
    return frozenset(reads)


def _register_names(operand) -> list[str]:
    if isinstance(operand, ir.Register):
        return [operand.name]
    if isinstance(operand, (ir.Vector, ir.OperandList)):
        return [name for element in operand.elements for name in _register_names(element)]
    return []


def launch_mismatch(compiled: Geometry, reads: frozenset[str], grid: Dims, block: Dims
                    ) -> tuple[str, str] | None:
    """Which part ("block" or "grid") of a launch of this grid and block code compiled for
    `compiled` cannot run, and why (None: it can).  Only the parts its special registers
    read matter."""
    launch = Geometry.of(block, grid)
    parts = set(reads) - {"nwarpid"} | ({"block"} if "nwarpid" in reads and
                                        compiled.block is not None else set())
    for part in ("block", "grid"):
        if part in parts and compiled.dims(part) != launch.dims(part):
            dims = block if part == "block" else grid
            return part, (f"this launch has {part} {shown(dims)}, and the kernel was "
                          f"compiled for {compiled.describe(part)} (its thread and block "
                          "indices are computed from the shape)")
    return None


# ---- selection --------------------------------------------------------------------------------


def lower_special(sel, name: str, geometry: Geometry, lanes: int):
    """The value of special register `name` (a source of `qwengpu.ptx.selector.Selector`,
    `sel`, whose `emit`/`alu`/`temp` it uses): a constant, or code over the flat registers."""
    constants = geometry.constants(lanes)
    if name in constants:
        return constants[name]
    if name in ("%laneid", "%warpid"):
        return _read(sel, Special.LANEID if name == "%laneid" else Special.WARPID)
    if name == "%nwarpid":                      # a 1-D block: ceil(ntid / lanes)
        threads = _read(sel, Special.NTID)
        return sel.alu(Op.SHR_U, sel.alu(Op.ADD, threads, lanes - 1),
                       (lanes - 1).bit_length())
    kind, axis = name[1:].split(".")
    dims = geometry.dims(_PART[kind])
    flat = _read(sel, _FLAT[kind])
    if dims is None:
        return flat                             # .x of a 1-D shape: the flat register
    x, y, _ = dims
    largest = volume(dims) - 1
    if axis == "x":
        return _remainder(sel, flat, x, largest)
    if axis == "y":
        rows = _divide(sel, flat, x, largest)
        return rows if dims[2] == 1 else _remainder(sel, rows, y, largest // x)
    return _divide(sel, flat, x * y, largest)


def _read(sel, special: Special):
    temp = sel.temp()
    sel.emit(Op.S2R, d=temp, imm=int(special))
    return temp


def reciprocal(divisor: int, largest: int) -> int:
    """`ceil(2^32 / divisor)`: its product with any n <= `largest`, shifted down 32 bits, is
    n // divisor (checked: the rounding error times `largest` stays below 2^32)."""
    multiplier = -(-(1 << 32) // divisor)
    if largest * (multiplier * divisor - (1 << 32)) >= 1 << 32:
        raise ValueError(f"no 32-bit reciprocal of {divisor} is exact up to {largest}")
    return multiplier


def _divide(sel, value, divisor: int, largest: int):
    if divisor == 1:
        return value
    if divisor & (divisor - 1) == 0:
        return sel.alu(Op.SHR_U, value, divisor.bit_length() - 1)
    return sel.alu(Op.MULHI_U, value, reciprocal(divisor, largest))


def _remainder(sel, value, divisor: int, largest: int):
    if divisor == 1:
        return 0
    if divisor & (divisor - 1) == 0:
        return sel.alu(Op.AND, value, divisor - 1)
    quotient = _divide(sel, value, divisor, largest)
    remainder = sel.temp()
    sel.emit(Op.MAD, d=remainder, a=quotient, b=-divisor & MASK32, c=value)
    return remainder


# ---- ranges -----------------------------------------------------------------------------------


def special_range(name: str, facts) -> tuple[int, int] | None:
    """The values special register `name` takes in the launches of `facts`
    (`qwengpu.ptx.ranges.Facts`); None when it is not one QwenGPU has."""
    geometry = facts.geometry
    constants = geometry.constants(facts.lanes)
    if name in constants:
        return constants[name], constants[name]
    if name == "%laneid":
        return 0, facts.lanes - 1
    if name == "%warpid":
        return 0, facts.warps - 1
    if name == "%nwarpid":
        return -(-facts.block[0] // facts.lanes), -(-facts.block[1] // facts.lanes)
    if name not in SUPPORTED_SPECIALS:
        return None
    kind, axis = name[1:].split(".")
    part = _PART[kind]
    dims = geometry.dims(part)
    if dims is None:                            # .x of a 1-D shape
        count = facts.block if part == "block" else facts.grid
        return count if kind.startswith("n") else (0, count[1] - 1)
    size = dims[AXES.index(axis)]
    return (size, size) if kind.startswith("n") else (0, size - 1)


# ---- constants --------------------------------------------------------------------------------

# Instructions whose first operand is not a destination (`qwengpu.ptx.ranges` has the same).
_NO_DESTINATION = {"st", "bra", "ret", "exit", "bar", "barrier", "membar", "fence", "trap",
                   "red", "prefetch", "prefetchu", "brkpt", "pmevent", "nanosleep"}


def fold_constant_specials(kernel: ir.Kernel, constants: dict[str, int]) -> ir.Kernel:
    """The kernel with each register that only ever holds a constant special register
    (`mov.u32 %r2, %ntid.y` its one write, and the shape makes it 2) read as that number, so
    that `mad.lo.s32 %r4, %r1, %r2, %r3` multiplies by an immediate and no register keeps
    the 2 (the `mov` is then dead code)."""
    writes: dict[str, list[ir.Instruction]] = {}
    for ins in kernel.body:
        if isinstance(ins, ir.Instruction):
            for name in _written(ins):
                writes.setdefault(name, []).append(ins)
    known = {}
    for name, found in writes.items():
        ins = found[0]
        if len(found) == 1 and ins.opcode == "mov" and ins.guard is None and \
                len(ins.operands) == 2 and isinstance(ins.operands[1], ir.Register) and \
                ins.operands[1].name in constants and \
                ir.type_width(kernel.registers.get(name, "pred")) in (16, 32):
            known[name] = constants[ins.operands[1].name]
    if not known:
        return kernel
    body = []
    for statement in kernel.body:
        if isinstance(statement, ir.Instruction):
            first = 0 if statement.opcode in _NO_DESTINATION else 1
            operands = statement.operands[:first] + tuple(
                ir.Immediate(known[operand.name], str(known[operand.name]), operand.loc)
                if isinstance(operand, ir.Register) and operand.name in known else operand
                for operand in statement.operands[first:])
            if operands != statement.operands:
                statement = ir.Instruction(statement.opcode, statement.modifiers, operands,
                                           statement.guard, statement.loc, statement.text,
                                           statement.cuda_loc)
        body.append(statement)
    return ir.Kernel(kernel.name, kernel.params, kernel.registers, body, kernel.variables,
                     kernel.loc, kernel.is_function, kernel.returns)


def _written(ins: ir.Instruction) -> list[str]:
    if ins.opcode in _NO_DESTINATION or not ins.operands:
        return []
    first = ins.operands[0]
    if isinstance(first, ir.RegisterPair):
        return [first.first, first.second]
    return _register_names(first)
