"""The compiler: an HDL spec to a 45-layer Qwen3.5 checkpoint, as one list of named steps.

    result = compile("specs/counter.hdl", "min", output="out/counter")
    result = compile(spec, "qwen3.5-2b", stop_after="schedule")       # no weights
    result = compile(spec, dump_after={"plan"}, dump=print, check=True)
    result = resume(compile(spec, stop_after="schedule"), "emit")        # taken on later

| step | what it does | its output (`Compilation` field) | dumped as |
|---|---|---|---|
| load | parse and elaborate the spec (`-P` overrides) | `design` | the netlist |
| graph | the dataflow graph of one machine step | `graph` | the IR's text form |
| passes | the passes (`--passes`, default `DEFAULT_PIPELINE`) | `graph`, `pass_stats` | stats, IR |
| plan | residual values and the ops of one pass of the model | `protocol`, `plan` | the ops |
| encodings | binary where the readers allow it, else one-hot | `plan` | the values |
| schedule | ops into the 45 layers; residual reuse | `schedule` | the schedule |
| allocate | every value's residual dims | `groups` | the residual layout |
| emit | the weights (gadgets, heads, embedding, lm_head) | `model` | nonzeros per layer |
| write | safetensors, config, tokenizer, protocol, schedule.txt, machine.json | `files` | files |

`encoding` None follows the dtype: binary values in float32 (they are exact only there),
one-hot in bfloat16: the one default of the API, `hdlc compile` and the tests.  With
`check=True` each step's IR is verified after it runs (`qwengpu.ir.verify`,
`backend_torch.verify`).  The same inputs give byte-identical files
(tests/test_checkpoint_fingerprints.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

import torch

from qwengpu.backend_torch.checkpoint import allocate, build_model, format_layout, \
    write_checkpoint
from qwengpu.backend_torch.emit import bf16_risks
from qwengpu.backend_torch.encodings import BINARY_WHERE_READABLE, ONEHOT_ONLY, \
    choose_encodings, format_encodings
from qwengpu.backend_torch.ops import format_plan
from qwengpu.backend_torch.plan import build_plan
from qwengpu.backend_torch.schedule import format_schedule, schedule_plan
from qwengpu.backend_torch.target import Target, load_target
from qwengpu.backend_torch.verify import verify_plan, verify_schedule
from qwengpu.dsl.elaborate import load_design
from qwengpu.dsl.netlist import format_design
from qwengpu.errors import UserError, check_output_location
from qwengpu.ir import build_graph, format_graph, verify
from qwengpu.passes import DEFAULT_PIPELINE, run_passes
from qwengpu.passes import format_stats as format_pass_stats
from qwengpu.runtime.machine_file import write_machine_file
from qwengpu.trace.optional import check_optional_reads
from qwengpu.trace.protocol import TraceProtocol

STEPS = ("load", "graph", "passes", "plan", "encodings", "schedule", "allocate", "emit",
         "write")


@dataclass
class Compilation:
    """What the steps of one compile produced (fields fill in as the steps run)."""

    spec: str
    target: str
    params: dict[str, int]
    passes: list[str]
    encoding: str
    dtype: torch.dtype
    output: Path | None = None
    estimate: bool = False
    design: object = None
    graph: object = None
    pass_stats: list = field(default_factory=list)
    protocol: TraceProtocol | None = None
    plan: object = None
    schedule: object = None
    groups: dict = field(default_factory=dict)
    model: object = None
    figures: dict = field(default_factory=dict)
    files: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    steps_run: list[str] = field(default_factory=list)


def default_encoding(dtype: torch.dtype) -> str:
    """Binary values where the readers allow it in float32; all one-hot in bfloat16."""
    return BINARY_WHERE_READABLE if dtype == torch.float32 else ONEHOT_ONLY


def compile(spec: str, target: "str | Target" = "min", *, params: dict[str, int] | None = None,
            passes: Iterable[str] | None = None, encoding: str | None = None,
            dtype: torch.dtype = torch.float32, output: str | Path | None = None,
            stop_after: str | None = None, dump_after: Iterable[str] = (),
            dump: Callable[[str, str], None] | None = None,
            progress: Callable[[str], None] | None = None, check: bool = False,
            estimate: bool = False) -> Compilation:
    """Run the steps (see the module doc) up to `stop_after` (default: `write` when
    `output` is given, else `allocate`); `dump(step, text)` gets the text form of each step
    in `dump_after`; `progress` hears about every step; `check` verifies each IR."""
    encoding = encoding or default_encoding(dtype)
    if encoding == BINARY_WHERE_READABLE and dtype != torch.float32:
        raise UserError("binary values are exact in float32 only (docs/schedule.md, "
                        "\"Binary values\"); bfloat16 needs the onehot encoding")
    last = stop_after or ("write" if output is not None else "allocate")
    unknown = sorted(set(dump_after) - set(STEPS)) + ([last] if last not in STEPS else [])
    if unknown:
        raise UserError(f"unknown compile step {unknown[0]!r} (the steps: {', '.join(STEPS)})")
    late = [step for step in dump_after if STEPS.index(step) > STEPS.index(last)]
    if late:
        raise UserError(f"the compile stops after {last}, before {late[0]}: nothing to dump")
    if STEPS.index(last) > STEPS.index("allocate") and estimate:
        raise UserError("an estimate (writes not carried by the trace) cannot be built into "
                        "weights")
    if output is not None and STEPS.index(last) == len(STEPS) - 1:
        _check_output(Path(output))
    result = Compilation(spec, target, dict(params or {}), list(passes or DEFAULT_PIPELINE),
                         encoding, dtype, Path(output) if output is not None else None,
                         estimate)
    return _run(result, STEPS[:STEPS.index(last) + 1], progress, check, dump_after, dump)


def resume(result: Compilation, stop_after: str, *,
           progress: Callable[[str], None] | None = None, check: bool = False) -> Compilation:
    """Take a compile that stopped early on: run the steps after the last one `result` ran, up
    to `stop_after` (a splice goes on from the schedule its base check made)."""
    if stop_after not in STEPS:
        raise UserError(f"unknown compile step {stop_after!r} (the steps: {', '.join(STEPS)})")
    done = STEPS.index(result.steps_run[-1]) + 1
    if STEPS.index(stop_after) < done:
        raise UserError(f"the compile has run {stop_after} already (it stopped after "
                        f"{result.steps_run[-1]})")
    if STEPS.index(stop_after) == len(STEPS) - 1 and result.output is None:
        raise UserError("the write step needs the compile's output directory")
    return _run(result, STEPS[done:STEPS.index(stop_after) + 1], progress, check)


def _run(result: Compilation, steps: Iterable[str], progress, check: bool,
         dump_after: Iterable[str] = (), dump=None) -> Compilation:
    say = progress or (lambda _message: None)
    started = time.perf_counter()
    for name in steps:
        begun = time.perf_counter()
        STEP_FUNCTIONS[name](result, say, check)
        result.seconds[name] = time.perf_counter() - begun
        result.steps_run.append(name)
        say(f"{name}: {summary(result, name)} ({result.seconds[name]:.1f} s)")
        if name in dump_after:
            (dump or _print_dump)(name, dump_text(result, name))
    result.seconds["total"] = result.seconds.get("total", 0.0) + time.perf_counter() - started
    return result


def _check_output(directory: Path) -> None:
    """The checkpoint directory must be one the write step can fill (missing folders above it
    are created then): refused before any weight is built.  An existing checkpoint
    directory is written over."""
    if directory.exists() and not directory.is_dir():
        raise UserError(f"{directory}: exists and is not a directory (the checkpoint is a "
                        "directory of files)")
    check_output_location(directory, "checkpoint")


def _print_dump(name: str, text: str) -> None:
    print(f"// after {name}")
    print(text, end="" if text.endswith("\n") else "\n")


# -- the steps ------------------------------------------------------------------------------

def _load(c: Compilation, say, check: bool) -> None:
    c.design = load_design(c.spec, c.params) if c.params else load_design(c.spec)


def _graph(c: Compilation, say, check: bool) -> None:
    c.graph = build_graph(c.design)
    if check:
        verify(c.graph)


def _passes(c: Compilation, say, check: bool) -> None:
    c.pass_stats = run_passes(c.graph, c.passes, check=check)


def _plan(c: Compilation, say, check: bool) -> None:
    check_optional_reads(c.design)
    c.protocol = TraceProtocol.from_design(c.design)
    c.plan = build_plan(c.graph, c.protocol, c.estimate)
    if check:
        verify_plan(c.plan)


def _encodings(c: Compilation, say, check: bool) -> None:
    choose_encodings(c.plan, c.encoding)
    if check:
        verify_plan(c.plan)


def _schedule(c: Compilation, say, check: bool) -> None:
    target = c.target if isinstance(c.target, Target) else load_target(c.target)
    c.schedule = schedule_plan(c.plan, target)
    if check:
        verify_schedule(c.schedule)


def _allocate(c: Compilation, say, check: bool) -> None:
    _, c.groups = allocate(c.schedule)


def _emit(c: Compilation, say, check: bool) -> None:
    c.model = build_model(c.schedule, c.dtype, say, c.groups)


def _write(c: Compilation, say, check: bool) -> None:
    c.figures = write_checkpoint(c.schedule, c.protocol, c.model, c.output,
                                 precision_note(c.plan, c.dtype, say))
    write_machine_file(c.output, c.spec, c.params)
    c.files = {path.name: path.stat().st_size for path in sorted(c.output.iterdir())}


STEP_FUNCTIONS = {"load": _load, "graph": _graph, "passes": _passes, "plan": _plan,
                  "encodings": _encodings, "schedule": _schedule, "allocate": _allocate,
                  "emit": _emit, "write": _write}


def precision_note(plan, dtype: torch.dtype, say=None) -> str:
    """The precision decision schedule.txt states (and a warning for a risky bf16)."""
    risks = bf16_risks(plan)
    if risks:
        widest = max(r for _, r in risks)
        risk = (f"{len(risks)} sum(s) span more than 16 values (widest {widest} at "
                f"{risks[0][0].loc}): bf16 may round them wrong (fp32 is safe)")
    else:
        risk = "no wide sums: bf16 expected exact (prove it with the spec's tests)"
    if risks and dtype != torch.float32 and say is not None:
        say(f"warning: {risk}")
    if dtype == torch.float32:
        return f"float32 (the default); bf16: {risk}"
    return f"bfloat16 (requested); {risk}"


# -- what each step shows -------------------------------------------------------------------

def summary(c: Compilation, step: str) -> str:
    """One line on a step's output (progress and `--stats`)."""
    if step == "load":
        return f"machine {c.design.name}, {len(c.design.nodes)} netlist nodes"
    if step in ("graph", "passes"):
        return f"{len(c.graph)} nodes"
    if step == "plan":
        return f"{len(c.plan.ops)} ops, {len(c.plan.values)} values"
    if step == "encodings":
        binary = sum(1 for v in c.plan.values.values() if v.encoding == "binary")
        return f"{binary} of {len(c.plan.values)} values binary ({c.encoding})"
    if step == "schedule":
        return (f"{len(c.plan.ops)} ops in {c.schedule.layers_used} of "
                f"{c.schedule.target.num_layers} layers, target {c.schedule.target.name}")
    if step == "allocate":
        return f"{c.schedule.dims} of {c.schedule.target.hidden_size} residual dims"
    if step == "emit":
        return f"weights built ({c.dtype})".replace("torch.", "")
    return (f"wrote {c.output}: {c.figures['nonzeros']} nonzero of "
            f"{c.figures['parameters']} parameters, {c.figures['bytes']} bytes")


def dump_text(c: Compilation, step: str) -> str:
    """The text form of a step's output (`--dump-after STEP`)."""
    if step == "load":
        return format_design(c.design, with_locations=False)
    if step == "graph":
        return format_graph(c.graph)
    if step == "passes":
        return format_pass_stats(c.pass_stats) + format_graph(c.graph)
    if step == "plan":
        return format_plan(c.plan)
    if step == "encodings":
        return format_encodings(c.plan)
    if step == "schedule":
        return format_schedule(c.schedule)
    if step == "allocate":
        return format_layout(c.schedule, c.groups)
    if step == "emit":
        return _format_nonzeros(c.model)
    return "".join(f"{name}  {size} bytes\n" for name, size in c.files.items())


def _format_nonzeros(model) -> str:
    lines = []
    for name, tensor in model.state_dict().items():
        nonzeros = int(torch.count_nonzero(tensor))
        if nonzeros:
            lines.append(f"{name}  {tuple(tensor.shape)}  {nonzeros} nonzero")
    return "\n".join(lines) + "\n"


def format_stats(c: Compilation) -> str:
    """`hdlc compile --stats`: every step's seconds and output, then the passes' table."""
    width = max(len(name) for name in STEPS)
    lines = [f"{'step':<{width}}  {'seconds':>8}  output"]
    for name in c.steps_run:
        lines.append(f"{name:<{width}}  {c.seconds[name]:>8.2f}  {summary(c, name)}")
    lines.append(f"{'total':<{width}}  {c.seconds.get('total', 0):>8.2f}")
    return "\n".join(lines) + "\n\n" + format_pass_stats(c.pass_stats)
