"""Launch files: a kernel, its grid, its buffers and arguments, made ready for the machine.

A launch file is JSON (docs/launch.md):

    {"source": "kernel.cu", "kernel": "vector_add", "grid": 2, "block": 8,
     "buffers": {"a": [1, 2], "c": [0, 0]}, "args": ["a", "c", 14]}

`load_launch(path)` validates it (every mistake is a `LaunchError` pointing into the file),
compiles the kernel (`qwengpu.ptx`), lays the buffers out in the 126 words of memory (in the
order the file lists them, from word 0, then any `.global`/`.const` variables the kernel
uses), links the program against that layout and fills the parameter words.  The result, a
`Launch`, is everything a backend needs; `run_launch_sim` runs it on the reference
interpreter and returns a `LaunchResult` (final buffers, records, trap).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, replace

from qwengpu.errors import CapacityError, LaunchError, Location, UserError
from qwengpu.isa import MASK32, RZ, TRAP_TEXTS, Instruction, Op, Space, Trap
from qwengpu.ptx import ir
from qwengpu.ptx.alignment import variable_alignment
from qwengpu.ptx.compile import compile_kernel, find_kernel, kernel_list, read_module
from qwengpu.ptx.cuda_lines import in_cuda_terms, put_in_cuda_terms, readable
from qwengpu.ptx.program import MachineLimits, Program
from qwengpu.ptx.ranges import Facts, default_facts, kept_to
from qwengpu.runtime.memory_image import buffer_words, f32_buffer_problem, variable_words
from qwengpu.runtime.float_words import WrittenNumber
from qwengpu.runtime.launch_shape import (Dims, count, dims_of, launch_geometry, shape_problem,
                                          shape_refusal, shown, thread_name)
from qwengpu.runtime.trap_address import fault_detail, formed_address
from qwengpu.runtime.machine_state import (DEFAULT_MAX_RECORDS, Machine, MachineShape,
                                           Windows, load_machine, new_simulator,
                                           run_simulator, signed_word)

LAUNCH_KEYS = ("source", "kernel", "grid", "block", "buffers", "args")
OPTIONAL_KEYS = ("check_addresses", "shared_bytes")    # docs/launch.md


@dataclass(frozen=True)
class Region:
    """A named run of memory words: a launch buffer or a kernel's memory variable."""

    name: str
    base_word: int
    words: int
    kind: str = "buffer"          # "buffer", "variable", "shared" or "local"
    element: str = "word"         # "f32": a buffer the launch file gave as binary32 values

    @property
    def base_address(self) -> int:
        """The byte address a pointer to it holds."""
        return 4 * self.base_word


@dataclass
class Launch:
    """A launch ready to run: program, memory image, parameter words and configuration."""

    source_path: str
    kernel: str
    grid: int                     # blocks, all dimensions together (the machine's nctaid)
    block: int                    # threads a block (its ntid)
    program: Program
    instructions: list[Instruction]
    memory: list[int]
    params: list[int]
    regions: list[Region]
    limits: MachineLimits = field(default_factory=MachineLimits)
    launch_path: str | None = None
    windows: Windows = field(default_factory=Windows)     # shared and local memory
    grid_dims: Dims | None = None     # the grid and block as CUDA's dim3 (x, y, z); None:
    block_dims: Dims | None = None    # (grid, 1, 1) and (block, 1, 1)

    @property
    def warps_per_block(self) -> int:
        return -(-self.block // self.limits.lanes)

    @property
    def warps(self) -> int:
        return self.grid * self.warps_per_block

    @property
    def buffers(self) -> dict[str, Region]:
        return {region.name: region for region in self.regions if region.kind == "buffer"}

    @property
    def variables(self) -> dict[str, Region]:
        return {region.name: region for region in self.regions if region.kind == "variable"}

    @property
    def ptx_locations(self) -> list[Location | None]:
        """The PTX instruction each machine instruction comes from, by program index."""
        return self.program.ptx_locations

    def region_of_word(self, word: int) -> tuple[Region, int] | None:
        """The region holding memory word `word` and the index within it."""
        for region in self.regions:
            if region.base_word <= word < region.base_word + region.words:
                return region, word - region.base_word
        return None

    def thread_of(self, warp: int, lane: int) -> tuple[int, int]:
        """(block, thread in block) of a lane, as flat indices (x fastest)."""
        return warp // self.warps_per_block, (warp % self.warps_per_block) * self.limits.lanes \
            + lane


# ---- reading and checking a launch file ----------------------------------------------------------


class _LaunchText:
    """The text of a launch file, to point errors at the key they are about."""

    def __init__(self, path: str, text: str):
        self.path, self.text = path, text

    def loc(self, *keys: str) -> Location:
        """Where the first of `keys` (a JSON string) appears, else the file itself."""
        for key in keys:
            position = self.text.find(json.dumps(key))
            if position >= 0:
                line = self.text.count("\n", 0, position) + 1
                column = position - (self.text.rfind("\n", 0, position) + 1) + 1
                return Location(self.path, line, column)
        return Location(self.path)

    def error(self, message: str, *keys: str) -> LaunchError:
        return LaunchError(message, self.loc(*keys), self.text)


def machine_limits(machine: Machine | str | None = None) -> MachineLimits:
    """What fits, read from the machine's spec (default: specs/qwengpu.hdl)."""
    if not isinstance(machine, Machine):
        machine = load_machine(machine)
    return MachineLimits.from_shape(machine.shape)


def load_launch(path: str, limits: MachineLimits | None = None) -> Launch:
    """Read, check, compile and lay out a launch file.  The limits (registers, memory words,
    ...) default to those of the spec, `machine_limits()`."""
    limits = limits or machine_limits()
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise LaunchError("launch file not found", Location(path)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise LaunchError(f"cannot read the launch file: {error}", Location(path)) from None
    source = _LaunchText(path, text)
    try:
        data = json.loads(text, parse_float=WrittenNumber)    # f32 buffers round from the text
    except json.JSONDecodeError as error:
        raise LaunchError(f"not valid JSON: {error.msg}",
                          Location(path, error.lineno, error.colno), text) from None
    except RecursionError:
        raise LaunchError("the JSON nests too deeply to be a launch", Location(path)) from None
    return launch_from_dict(data, base_dir=os.path.dirname(path), limits=limits,
                            _source=source)


def launch_from_dict(data, base_dir: str = ".", limits: MachineLimits | None = None,
                     _source: _LaunchText | None = None) -> Launch:
    """A launch from already-parsed launch-file contents; `source` is relative to `base_dir`."""
    limits = limits or machine_limits()
    source = _source or _LaunchText("<launch>", json.dumps(data, indent=1))
    _check_shape(data, source)
    source_path = os.path.join(base_dir, data["source"])
    module = read_module(source_path)
    kernel = find_kernel(module.kernels, data["kernel"])
    if kernel is None:
        raise source.error(f"{data['source']} has no kernel named {data['kernel']!r}; it has: "
                           f"{kernel_list(module)}", "kernel")
    data = {**data, "kernel": kernel.name}
    check = data.get("check_addresses", True)
    facts = _launch_facts(data, module, limits)     # the alignment proofs use them too
    program = compile_kernel(module, kernel.name, limits, check_addresses=check, facts=facts)
    with in_cuda_terms(lambda: program.cuda_lines):     # a variable's own mistakes
        return _build(data, source_path, program, limits, source)


def _launch_facts(data: dict, module: ir.Module, limits: MachineLimits) -> Facts:
    """What the address analysis may assume of this launch: its grid and block, a buffer's
    address for a pointer argument and an integer argument's own value (`qwengpu.ptx.ranges`;
    `_param_words` checks the arguments themselves)."""
    kernel = module.kernels[data["kernel"]]
    general = default_facts(kernel, limits, module.address_size // 8)
    params = dict(general.params)
    for param, arg in zip(kernel.params, data["args"] if isinstance(data["args"], list) else []):
        if _is_int(arg) and not param.is_array:
            value = arg & ((1 << (8 * param.size_bytes)) - 1)
            params[param.name] = (value, value)
    block, grid = count(data["block"]), count(data["grid"])
    return replace(general, block=(block, block), grid=(grid, grid), params=params,
                   geometry=launch_geometry(data))


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_shape(data, source: _LaunchText):
    if not isinstance(data, dict):
        raise source.error("a launch file is a JSON object with the keys "
                           + ", ".join(LAUNCH_KEYS))
    for key in data:
        if key not in LAUNCH_KEYS + OPTIONAL_KEYS:
            raise source.error(f"unknown key {key!r} (a launch has: {', '.join(LAUNCH_KEYS)}; "
                               f"and may have: {', '.join(OPTIONAL_KEYS)})", key)
    if not isinstance(data.get("check_addresses", True), bool):
        raise source.error("'check_addresses' must be true or false", "check_addresses")
    missing = [key for key in LAUNCH_KEYS if key not in data]
    if missing:
        raise source.error("missing " + ", ".join(repr(key) for key in missing)
                           + f" (a launch has: {', '.join(LAUNCH_KEYS)})")
    for key in ("source", "kernel"):
        if not isinstance(data[key], str) or not data[key]:
            raise source.error(f"{key!r} must be a non-empty string", key)
    for key in ("grid", "block"):
        if (problem := shape_problem(data[key], key)) is not None:
            raise source.error(problem, key)
    buffers = data["buffers"]
    if not isinstance(buffers, dict):
        raise source.error("'buffers' must be an object: name -> list of integers", "buffers")
    for name, values in buffers.items():
        if not isinstance(values, list) or not all(_is_int(value) for value in values):
            if (problem := f32_buffer_problem(name, values)) is not None:
                raise source.error(problem, name)
            continue
        for value in values:
            if not -(1 << 31) <= value < (1 << 32):
                raise source.error(f"buffer {name!r} holds {value}, which is not a 32-bit "
                                   "integer (-2147483648 .. 4294967295)", name)
    if not isinstance(data["args"], list):
        raise source.error("'args' must be a list (buffer names and integers)", "args")


def launch_for_program(program: Program, grid, block, buffers: dict[str, list[int]],
                       args: list, limits: MachineLimits | None = None,
                       shared_bytes: int = 0) -> Launch:
    """A launch of an already compiled kernel (the Python API behind launch files); `grid`
    and `block` are numbers or (x, y, z), `shared_bytes` its extern shared memory."""
    data = {"source": program.ptx_path, "kernel": program.kernel, "grid": grid,
            "block": block, "buffers": buffers, "args": args}
    if shared_bytes:
        data["shared_bytes"] = shared_bytes
    source = _LaunchText("<launch>", json.dumps(data, indent=1))
    _check_shape(data, source)
    with in_cuda_terms(lambda: program.cuda_lines):
        return _build(data, program.ptx_path, program, limits or machine_limits(), source)


def _build(data: dict, source_path: str, program: Program, limits: MachineLimits,
           source: _LaunchText) -> Launch:
    grid_dims, block_dims = dims_of(data["grid"]), dims_of(data["block"])
    grid, block = count(grid_dims), count(block_dims)
    warps = grid * -(-block // limits.lanes)
    if warps > limits.warps:
        raise CapacityError(
            f"the launch needs {warps} warps (grid {shown(grid_dims)} x ceil("
            f"{shown(block_dims)} / {limits.lanes}) threads per warp), but QwenGPU has "
            f"{limits.warps}", source.loc("grid"), source.text)
    words, floats = buffer_words(data["buffers"])
    data = {**data, "buffers": words}
    regions = [replace(region, element="f32") if region.name in floats else region
               for region in _layout(words, program, limits, source)]
    addresses = {region.name: region.base_address for region in regions}
    memory = [0] * limits.memory_words
    for name, values in data["buffers"].items():
        base = addresses[name] // 4
        memory[base:base + len(values)] = [value & MASK32 for value in values]
    for region in regions:
        if region.kind == "variable":
            words = variable_words(program.variables[region.name])
            memory[region.base_word:region.base_word + len(words)] = words
    params, values = _param_words(data["args"], data["buffers"], program, addresses, limits,
                                  source)
    _check_assumptions(program, data, values, source)
    windows = _windows(data, program, limits, regions, source)
    regions += window_regions(windows)
    return Launch(source_path=source_path, kernel=program.kernel, grid=grid, block=block,
                  program=program, instructions=program.link(addresses), memory=memory,
                  params=params, regions=regions, limits=limits,
                  launch_path=source.path if source.path != "<launch>" else None,
                  windows=windows, grid_dims=grid_dims, block_dims=block_dims)


def _windows(data: dict, program: Program, limits: MachineLimits, regions: list[Region],
             source: _LaunchText) -> Windows:
    """The launch's shared memory (a window a block: the kernel's static shared variables
    and `shared_bytes` of extern shared memory) and local memory (a window a thread), laid
    out after its buffers and variables (docs/launch.md, "Memory layout")."""
    dynamic = data.get("shared_bytes", 0)
    if not _is_int(dynamic) or dynamic < 0:
        raise source.error("shared_bytes must be a number of bytes (0 or more)",
                           "shared_bytes")
    if dynamic and not program.dynamic_shared:
        raise source.error(f"shared_bytes gives extern shared memory, but kernel "
                           f"{readable(program.kernel)} declares none", "shared_bytes")
    shared_words = -(-(program.shared_bytes + dynamic) // 4)
    local_words = -(-program.local_bytes // 4)
    first = max((region.base_word + region.words for region in regions), default=0)
    shape = MachineShape(limits.lanes, limits.warps, limits.registers, limits.predicates,
                         limits.memory_words, limits.param_words, limits.program_words,
                         limits.shared_words, limits.local_words)
    try:
        return Windows.laid_out(first, count(data["grid"]), count(data["block"]), shared_words,
                                local_words, shape, max(program.local_alignment // 4, 1))
    except CapacityError as error:
        raise CapacityError(error.message, source.loc("buffers"), source.text) from None


def window_regions(windows: Windows) -> list[Region]:
    """Each block's shared memory and each thread's local memory, as named regions."""
    regions = [Region(f"shared[block {block}]", base, windows.shared_words, "shared")
               for block, base in enumerate(windows.shared_bases)]
    regions += [Region(f"local[block {block}, thread {thread}]", base, windows.local_words,
                       "local")
                for block, threads in enumerate(windows.local_bases)
                for thread, base in enumerate(threads)]
    return regions


def _check_assumptions(program: Program, data: dict, param_values: dict[str, list[int]],
                       source: _LaunchText):
    """A program leaves out the address checks its assumptions make unneeded
    (`Program.assumptions`); a launch outside them would run unchecked, so it is refused."""
    values = {name: sum(word << (32 * index) for index, word in enumerate(words))
              for name, words in param_values.items()}
    refused = shape_refusal(program, data)
    if refused is not None:
        raise source.error(*refused)
    for name, alignment in program.aligned_params.items():
        if values.get(name, 0) % alignment:
            raise source.error(f"this launch has parameter {readable(name)} = {values[name]}, "
                               f"not a multiple of {alignment}, and the kernel's alignment "
                               "checks were left out on that ground: compile the kernel for "
                               "this launch (a launch file does)", "args")
    if program.assumptions is None:
        return
    broken = kept_to(program.assumptions, count(data["block"]), count(data["grid"]), values)
    if broken is not None:
        raise source.error(f"this launch has {broken}, and the kernel's address checks were left "
                           "out on that ground: compile the kernel for this launch (a launch "
                           "file does)", "args")


def _layout(buffers: dict, program: Program, limits: MachineLimits,
            source: _LaunchText) -> list[Region]:
    """Buffers in order from word 0, each at a multiple of the kernel's widest access
    (`Program.buffer_alignment`: one word unless it reads 8 or 16 bytes at once), then the
    memory variables, each at a multiple of its `.align`."""
    regions, next_word = [], 0
    step = program.buffer_alignment // 4
    for name, values in buffers.items():
        if name in program.variables:
            raise source.error(f"buffer {name!r} has the name of a variable of the kernel", name)
        next_word = -(-next_word // step) * step
        regions.append(Region(name, next_word, len(values)))
        next_word += len(values)
    for name, variable in program.variables.items():
        words, step = -(-variable.size_bytes // 4), variable_alignment(variable) // 4
        next_word = -(-next_word // step) * step
        regions.append(Region(name, next_word, words, "variable"))
        next_word += words
    if next_word > limits.memory_words:
        sizes = ", ".join(f"{region.name}: {region.words}" for region in regions)
        raise CapacityError(
            f"the buffers need {next_word} words ({sizes}), but QwenGPU has "
            f"{limits.memory_words} words of memory ({next_word - limits.memory_words} too "
            "many)", source.loc("buffers"), source.text)
    return regions


def _param_words(args: list, buffers: dict, program: Program, addresses: dict[str, int],
                 limits: MachineLimits, source: _LaunchText
                 ) -> tuple[list[int], dict[str, list[int]]]:
    """The machine's parameter words, and each parameter's words (the whole value)."""
    params = program.params
    if len(args) != len(params):
        listing = ", ".join(f"{readable(param.name)} (.{param.type}"
                            f"{f'[{param.array_length}]' if param.is_array else ''})"
                            for param in params) or "none"
        raise source.error(f"kernel {readable(program.kernel)} takes {len(params)} arguments, "
                           f"the launch gives {len(args)}; its parameters: {listing}", "args")
    values: dict[str, list[int]] = {}
    for param, arg in zip(params, args):
        values[param.name] = _argument_words(param, arg, buffers, addresses, source,
                                             program.pointer_bytes)
    words = [0] * limits.param_words
    for slot, (name, word) in enumerate(program.param_slots):
        words[slot] = values[name][word] if word < len(values[name]) else 0
    return words, values


def _argument_words(param: ir.Param, arg, buffers: dict, addresses: dict[str, int],
                    source: _LaunchText, pointer_bytes: int) -> list[int]:
    """The little-endian 32-bit words a parameter holds for this argument (a buffer name
    only for a parameter of the PTX's pointer size: `.u64` under `.address_size 64`)."""
    size_words = max(-(-param.size_bytes // 4), 1)
    if isinstance(arg, str):
        if arg not in buffers:
            known = ", ".join(buffers) or "none"
            raise source.error(f"argument {arg!r} names no buffer (buffers: {known})", arg,
                               "args")
        if param.is_array or param.size_bytes != pointer_bytes:
            raise source.error(f"parameter {readable(param.name)} (.{param.type}) cannot hold a pointer "
                               f"(a pointer is {pointer_bytes} bytes in this PTX, .address_size "
                               f"{8 * pointer_bytes}), but the launch passes buffer {arg!r}; "
                               "pass an integer", "args")
        return [addresses[arg]] + [0] * (size_words - 1)
    if _is_int(arg):
        if param.is_array:
            raise source.error(f"parameter {readable(param.name)} is a {param.size_bytes}-byte struct or "
                               "array: pass a list of 32-bit words", "args")
        bits = 8 * param.size_bytes
        if not -(1 << (bits - 1)) <= arg < (1 << bits):
            raise source.error(f"argument {arg} does not fit parameter {readable(param.name)} "
                               f"(.{param.type}, {bits} bits)", "args")
        value = arg & ((1 << bits) - 1)
        return [(value >> (32 * index)) & MASK32 for index in range(size_words)]
    if isinstance(arg, list) and all(_is_int(word) for word in arg):
        if not param.is_array:
            raise source.error(f"parameter {readable(param.name)} (.{param.type}) takes a buffer name or "
                               "an integer, not a list", "args")
        if len(arg) != size_words:
            raise source.error(f"parameter {readable(param.name)} has {size_words} words, the launch gives "
                               f"{len(arg)}", "args")
        return [word & MASK32 for word in arg]
    raise source.error(f"argument {arg!r}: use a buffer name, an integer, or a list of words for "
                       "a struct parameter", "args")


# ---- running -------------------------------------------------------------------------------------

# What each trap is called: the spec's strings on its `enum Trap`.
TRAP_DESCRIPTIONS = dict(TRAP_TEXTS)


@dataclass
class TrapInfo:
    """A fault that stopped the launch: what, where in the machine, where in the PTX."""

    code: int
    kind: str
    message: str
    record: int
    warp: int
    lane: int
    block: int
    thread: int
    pc: int
    instruction: str
    ptx_loc: Location | None
    ptx_text: str
    address: int | None = None
    cuda_loc: Location | None = None        # the CUDA line, when the PTX has line info
    ptx_in_memory: bool = False             # nvcc made the PTX of a .cu: no file holds it

    def as_json(self) -> dict:
        return {"code": self.code, "kind": self.kind, "message": self.message,
                "record": self.record, "warp": self.warp, "lane": self.lane,
                "block": self.block, "thread": self.thread, "pc": self.pc,
                "instruction": self.instruction,
                "ptx_file": self.ptx_loc.file if self.ptx_loc and not self.ptx_in_memory
                else None,
                "ptx_line": self.ptx_loc.line if self.ptx_loc else None,
                "ptx": self.ptx_text, "address": self.address,
                "cuda_file": self.cuda_loc.file if self.cuda_loc else None,
                "cuda_line": self.cuda_loc.line if self.cuda_loc else None}


class LaunchTrap(UserError):
    """A run-time fault of the machine, printed like a compile error at the PTX line."""

    kind = "trap"


@dataclass
class LaunchResult:
    """The outcome of a launch: final memory, every record, and the trap if one stopped it."""

    launch: Launch
    memory: list[int]
    records: list[dict[str, int]]
    trap: TrapInfo | None = None
    # what the launch costs a compiled model (`qwengpu.runtime.prompt.trace_cost`), when asked
    tokens: int | None = None
    prompt_tokens: int | None = None

    def region_values(self, region: Region) -> list[int]:
        """A region's words as signed 32-bit integers."""
        words = self.memory[region.base_word:region.base_word + region.words]
        return [signed_word(word) for word in words]

    @property
    def buffers(self) -> dict[str, list[int]]:
        return {name: self.region_values(region) for name, region in self.launch.buffers.items()}

    @property
    def variables(self) -> dict[str, list[int]]:
        return {name: self.region_values(region)
                for name, region in self.launch.variables.items()}

    def as_json(self) -> dict:
        result = {"buffers": self.buffers, "records": len(self.records)}
        if self.tokens is not None:
            result["tokens"], result["prompt_tokens"] = self.tokens, self.prompt_tokens
        result["trap"] = self.trap.as_json() if self.trap else None
        return result

    def trap_error(self) -> LaunchTrap | None:
        """The trap as a message at its CUDA line (and PTX line), `qwengpu.ptx.cuda_lines`."""
        if self.trap is None:
            return None
        program = self.launch.program
        error = LaunchTrap(self.trap.message, self.trap.ptx_loc, program.ptx_source)
        return put_in_cuda_terms(error, program.cuda_lines) if program.cuda_lines else error


def run_launch_sim(launch: Launch, max_records: int = DEFAULT_MAX_RECORDS,
                   machine: Machine | str | None = None) -> LaunchResult:
    """Run a launch on the reference interpreter of the spec (default specs/qwengpu.hdl)."""
    simulator = new_simulator(machine, launch.instructions, launch.memory, launch.params,
                              launch.grid, launch.block, launch.windows)
    outcome = run_simulator(simulator, max_records)
    trap = None
    if outcome.trapped:
        trap = describe_trap(launch, len(outcome.records) - 1, outcome.trap_record,
                             lambda warp, lane, index: simulator.read_memory(
                                 "regs", (warp, lane, index)), outcome.records)
    return LaunchResult(launch, list(outcome.memory), outcome.records, trap)


def _window_detail(launch: Launch, instruction: Instruction, code: int, address: int) -> str:
    """A fault of a shared or local access (an offset into a window), or of a halfword
    store, in those terms; "" for the others."""
    space = getattr(instruction, "space", Space.GLOBAL)
    if code == Trap.MISALIGNED and instruction.op == Op.ST_U16:
        return f": byte address {address} is not a multiple of 2 (a 2-byte store)"
    if code != Trap.ADDRESS_RANGE or space not in (Space.SHARED, Space.LOCAL):
        return ""
    if space == Space.SHARED:
        words, what = launch.windows.shared_words, "the block's shared memory"
    else:
        words, what = launch.windows.local_words, "the thread's local memory"
    return (f": {Space(space).name.lower()} address {address} (word {address // 4}) is past "
            f"the {words} word{'s' if words != 1 else ''} of {what}")


def describe_trap(launch: Launch, record_index: int, record: dict,
                  read_register=None, records: list[dict] | None = None) -> TrapInfo:
    """A readable account of the trap in `record`.  `read_register(warp, lane, r)` gives the
    registers at the fault (the faulting step writes nothing), to name the bad address;
    `records`, the trace up to the trap, to name it as the kernel formed it where a check
    altered it (`qwengpu.runtime.trap_address`)."""
    code, warp, lane, pc = record["trap"], record["warp"], record["trap_lane"], record["pc"]
    kind = TRAP_DESCRIPTIONS.get(code, f"trap {code}")
    block, thread = launch.thread_of(warp, lane)
    instructions = launch.instructions
    instruction = instructions[pc] if pc < len(instructions) else None
    slot = launch.program.slots[pc] if pc < len(launch.program.slots) else None
    text = str(instruction) if instruction is not None else "(empty slot)"
    detail, address = "", None
    if code == Trap.BAD_OPCODE and instruction is None:
        detail = (f": the program has {len(instructions)} instructions and this warp ran past "
                  "the end")
    elif code in (Trap.ADDRESS_RANGE, Trap.MISALIGNED) and instruction is not None \
            and read_register is not None:
        base = 0 if instruction.a == RZ else read_register(warp, lane, instruction.a)
        address = (base + instruction.imm) & MASK32
        formed = slot.formed if slot is not None else None
        kernel_address = formed_address(instructions, records, record_index, warp, lane,
                                        formed) if formed and records is not None else None
        detail = fault_detail(code, address, kernel_address, formed.size_bytes if formed else 4,
                              launch.limits.memory_words)
        address = address if kernel_address is None else kernel_address
        detail = _window_detail(launch, instruction, code, address) or detail
    where = f"warp {warp}, lane {lane} ({thread_name(launch, warp, lane)}), pc {pc}: {text}"
    message = f"{kind}{detail}; in {where}"
    ptx_loc = slot.ptx_loc if slot else None
    lines = launch.program.cuda_lines
    return TrapInfo(code=code, kind=kind, message=message, record=record_index, warp=warp,
                    lane=lane, block=block, thread=thread, pc=pc, instruction=text,
                    ptx_loc=ptx_loc, ptx_text=slot.ptx_text if slot else "", address=address,
                    cuda_loc=lines.at(ptx_loc.line) if lines and ptx_loc else None,
                    ptx_in_memory=bool(lines and lines.compiled_from))
