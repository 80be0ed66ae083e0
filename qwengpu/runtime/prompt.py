"""The launch prompt: the machine's initial state for a launch, as tokens of the trace protocol.

The prompt carries inputs only — the state the launch loader puts into the machine before
the first step (docs/isa.md, "State"), never anything the kernel computes; its layout is
`qwengpu.trace.prompt.state_prompt`'s.  The initial state is taken from the reference
interpreter's launch filling (`qwengpu.runtime.machine_state.new_simulator`), so the prompt
and the interpreter start from the same state by construction.
"""

from __future__ import annotations

from qwengpu.dsl.netlist import Design
from qwengpu.trace.prompt import check_protocol, simulator_state, state_prompt
from qwengpu.trace.protocol import TraceProtocol
from qwengpu.runtime.launch import Launch
from qwengpu.runtime.machine_state import Machine, load_machine, new_simulator


def as_machine(machine: Machine | Design | str | None) -> Machine:
    """A `Machine` from a machine, an elaborated design, a spec path, or None (the default)."""
    if isinstance(machine, Machine):
        return machine
    if isinstance(machine, Design):
        return Machine(machine)
    return load_machine(machine)


def initial_state(launch: Launch, machine: Machine | Design | str | None = None
                  ) -> dict[str, list[int]]:
    """Every state element's value before the first step, flat and row-major (a register is a
    list of one value), as the reference interpreter's launch filling sets it."""
    return simulator_state(new_simulator(as_machine(machine), launch.instructions,
                                         launch.memory, launch.params, launch.grid,
                                         launch.block, launch.windows))


def build_prompt(launch: Launch, protocol: TraceProtocol,
                 machine: Machine | Design | str | None = None) -> list[int]:
    """The prompt's token ids (see the module docstring); `machine` defaults to the spec
    the launch was loaded against (specs/qwengpu.hdl)."""
    machine = as_machine(machine)
    check_protocol(protocol, machine.design)
    return state_prompt(protocol, initial_state(launch, machine))


def trace_cost(launch: Launch, records: list[dict[str, int]],
               machine: Machine | Design | str | None = None,
               protocol: TraceProtocol | None = None) -> tuple[int, int]:
    """What a launch costs a compiled model, in tokens, known without running one: the
    length of the trace the model would write for `records` (`<eos>` included when the last
    record ends the launch, as in every finished run) and of the launch's prompt."""
    machine = as_machine(machine)
    protocol = protocol or TraceProtocol.from_design(machine.design)
    return (len(protocol.encode_records(records)),
            len(build_prompt(launch, protocol, machine)))
