"""A compiled kernel: machine instructions, where each came from, and what the launch must fill.

`Program` is the loader's result.  Its instructions are final except for the addresses of
memory variables (`.global`/`.const` data), which depend on the launch's memory layout and are
filled in by `Program.link(addresses)`.  Parameter words are already numbered: slot `k` of the
machine's parameter words holds word `param_slots[k]` of a kernel parameter.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from qwengpu.errors import Location, PtxError
from qwengpu.isa import MASK32, MEM_WORDS, PARAM_WORDS, PREDS, PROG_WORDS, REGS, WARPS, LANES
from qwengpu.isa import Instruction
from qwengpu.ptx import ir
from qwengpu.ptx.geometry import Geometry
from qwengpu.ptx.ranges import Facts
from qwengpu.ptx.vcode import SymbolRef


@dataclass(frozen=True)
class MachineLimits:
    """The machine parameters the loader needs (defaults: QwenGPU v1, `qwengpu.isa`)."""

    registers: int = REGS
    predicates: int = PREDS
    program_words: int = PROG_WORDS
    memory_words: int = MEM_WORDS
    param_words: int = PARAM_WORDS
    warps: int = WARPS
    lanes: int = LANES
    shared_words: int = 64          # most words of shared memory a block may have
    local_words: int = 16           # most words of local memory a thread may have

    @classmethod
    def from_shape(cls, shape) -> "MachineLimits":
        """The limits of an elaborated spec (`qwengpu.runtime.machine_state.MachineShape`)."""
        return cls(registers=shape.regs, predicates=shape.preds, program_words=shape.prog_words,
                   memory_words=shape.mem_words, param_words=shape.param_words,
                   warps=shape.warps, lanes=shape.lanes, shared_words=shape.shared_words,
                   local_words=shape.local_words)


@dataclass(frozen=True)
class FormedAddressSlots:
    """Where a trap report finds the address a memory access's checks altered (docs/ptx.md,
    "Traps"): operand a of the instruction at `low_pc` held its low word when the lane last ran
    it, operand a at `high_pc` its high word (None: the high word is `high_value`); the access
    covers `size_bytes` and must be aligned to them."""

    low_pc: int
    high_pc: int | None
    high_value: int
    size_bytes: int


@dataclass(frozen=True)
class ProgramSlot:
    """One instruction slot: the instruction, the variable address its immediate still needs
    (or None), the PTX instruction it implements, and for an access whose address a check
    altered, where the address the kernel formed is found; `note` marks the register
    allocator's spill code."""

    instruction: Instruction
    relocation: SymbolRef | None
    origin: ir.Instruction | None
    formed: FormedAddressSlots | None = None
    note: str = ""                  # spill code: `spill %r5`, `reload %r5` (`ptx/spill.py`)

    @property
    def ptx_loc(self) -> Location | None:
        return self.origin.loc if self.origin is not None else None

    @property
    def ptx_text(self) -> str:
        return self.origin.text if self.origin is not None else ""


@dataclass
class Program:
    """A kernel lowered to QwenGPU machine code."""

    kernel: str
    params: list[ir.Param]
    param_slots: list[tuple[str, int]]
    variables: dict[str, ir.Variable]
    slots: list[ProgramSlot]
    registers_used: int
    predicates_used: int
    ptx_path: str
    ptx_source: str
    pass_changes: dict[str, int] = field(default_factory=dict)
    pointer_bytes: int = 8           # a pointer parameter's size (`.address_size` / 8)
    # what the address checks left out rest on (`qwengpu.ptx.ranges`); a launch must keep to it
    assumptions: Facts | None = None
    # PTX line -> CUDA line (`qwengpu.ptx.cuda_lines.CudaLines`), to tell traps in CUDA terms
    cuda_lines: object = field(default=None, repr=False)
    # buffers are laid out at multiples of this many bytes: the widest access's (from 4 to
    # 16); the alignment proofs (`qwengpu.ptx.alignment`) rest on it and on these alignments
    # of parameter values (bytes), which a launch must keep to
    buffer_alignment: int = 4
    aligned_params: dict[str, int] = field(default_factory=dict)
    # bytes of shared memory a block needs (its static .shared variables), whether it also
    # has extern (dynamic) shared memory, whose size a launch gives, and bytes of local memory
    # a thread needs (its .local arrays and the register allocator's spills)
    shared_bytes: int = 0
    dynamic_shared: bool = False
    local_bytes: int = 0
    # the launch shape the special registers were computed for, and the parts of it
    # ("block", "grid") the kernel reads: a launch must have that shape there
    # (`qwengpu.ptx.geometry.launch_mismatch`)
    geometry: Geometry = Geometry()
    shape_reads: frozenset[str] = frozenset()
    local_alignment: int = 4         # bytes each thread's window is aligned to (its .align)

    def __len__(self) -> int:
        return len(self.slots)

    def link(self, addresses: dict[str, int]) -> list[Instruction]:
        """The final instructions, given the byte address of every variable used."""
        linked = []
        for slot in self.slots:
            instruction = slot.instruction
            if slot.relocation is not None:
                base = addresses.get(slot.relocation.symbol)
                if base is None:
                    raise PtxError(f"no memory was laid out for {slot.relocation.symbol}",
                                   slot.ptx_loc, self.ptx_source)
                instruction = replace(instruction,
                                      imm=(base + slot.relocation.offset) & MASK32)
            linked.append(instruction)
        return linked

    @property
    def ptx_locations(self) -> list[Location | None]:
        return [slot.ptx_loc for slot in self.slots]

    def listing(self, addresses: dict[str, int] | None = None) -> str:
        """Assembler text with the PTX each instruction came from (for docs and debugging)."""
        instructions = self.link(addresses) if addresses is not None or not self.variables \
            else [slot.instruction for slot in self.slots]
        lines = []
        for index, (slot, instruction) in enumerate(zip(self.slots, instructions)):
            where = f"line {slot.ptx_loc.line}" if slot.ptx_loc else ""
            note = f"  [{slot.note}]" if slot.note else ""
            lines.append(f"{index:3d}  {str(instruction):32s} ; {where:9s} {slot.ptx_text}"
                         f"{note}")
        return "\n".join(lines)
