"""Running a launch on a compiled checkpoint (`--backend model`), on either engine.

    result = run_launch_model(launch, "build/qwengpu", check=True)
    result.buffers, result.records, result.tokens, result.seconds

Three engines run the same checkpoint files (`ENGINES`):

- `sparse` (the default): `qwengpu.engine.SparseEngine`, which multiplies the checkpoint's
  own nonzero tensors (docs/engine.md), greedy, one token a step for every row;
- `transformers`: stock `AutoModelForCausalLM.from_pretrained(DIR)` (no
  `trust_remote_code`) and `generate(do_sample=False)` with its cache: the judge the sparse
  engine is held to (tests demand the same ids);
- `llama.cpp`: the checkpoint's float32 GGUF (`hdlc export`, cached beside it, or `gguf`)
  greedily in llama.cpp through the optional `xllamacpp` wheel (`qwengpu.llamacpp`,
  docs/llamacpp.md), held to the same ids.

The prompt is built by `qwengpu.runtime.prompt`, and the model writes token by token until
the checkpoint's `eos_token_id`.  The only host code in the loop watches the ids the model
chose (its own argmax): it decodes them into records as they come (a malformed stream stops
that row at once with a `DecodeError`), shows progress on a terminal, and with `check` steps
the reference interpreter in lockstep and stops at the first token that differs from the
interpreter's record (`CheckMismatch`: record, field, expected, got).  Nothing the model
generates is ever replaced or corrected.

    results = run_launches_model([launch_a, launch_b], "build/qwengpu", check=True)

runs several launches as one batch (a row a launch; on transformers one `generate` of
left-padded prompts, docs/trace.md "Several launches at once"; on the sparse engine rows with
state of their own); each row is decoded and checked on its own, and a row that fails ends
alone.

A long launch can be spread over sittings (docs/trace.md, "A launch over several
sittings"): `pause_seconds` stops the batch after that long, and a row still running comes
back as `Unfinished` with the ids the model wrote so far; `resume_ids` goes on from them.
The earlier ids are decoded and checked again first, then they follow the prompt as one
chunked prefill (`generate(prefill_chunk_size=...)`, or the engine's own chunks), and the
model writes the rest.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

from qwengpu.trace.protocol import ProtocolError, TraceProtocol
from qwengpu.errors import LaunchError, UserError

ENGINES = ("sparse", "transformers", "llama.cpp")
DEFAULT_ENGINE = "sparse"
from qwengpu.runtime.decode import DecodedLaunch, launch_outcome
from qwengpu.trace.decode import TraceDecoder
from qwengpu.runtime.launch import Launch
from qwengpu.runtime.machine_state import (DEFAULT_MAX_RECORDS, check_max_records, new_simulator,
                                           unfinished_message)
from qwengpu.runtime.prompt import as_machine, build_prompt
from qwengpu.runtime.spliced import SplicedEngine, SplicedModel, read_splice


class CheckMismatch(UserError):
    """`--check`: the model's trace left the interpreter's at `record`, `field`."""

    def __init__(self, message: str, record: int, field: str | None, expected, got):
        super().__init__(message)
        self.record, self.field, self.expected, self.got = record, field, expected, got


def load_checkpoint(directory: str | Path, device: str | None = None,
                    engine: str = DEFAULT_ENGINE, gguf: str | Path | None = None,
                    threads: int | None = None):
    """(model, protocol) of a compiled checkpoint directory; clear errors for what is amiss.
    The model is the sparse engine (`engine="sparse"`: `SparseEngine`'s compiled kernels on
    the CPU for `device` None or "cpu", else `TorchSparseEngine` on that torch device, e.g.
    "cuda", or "cpu:0" for its torch version on the CPU), a transformers model
    (`"transformers"`, on `device`, default cuda where there is one) or llama.cpp
    (`"llama.cpp"`: on the CPU with `threads`, on the GGUF file `gguf` or the checkpoint's
    cached one)."""
    path = Path(directory)
    if not path.is_dir():
        raise UserError(f"{directory}: no such checkpoint directory")
    if not (path / "config.json").is_file():
        raise UserError(f"{directory}: no config.json, not a checkpoint (hdlc compile writes "
                        "one)")
    if engine not in ENGINES:
        raise UserError(f"unknown engine {engine!r} (known: {', '.join(ENGINES)})")
    if gguf is not None and engine != "llama.cpp":
        raise UserError("--gguf names the file llama.cpp runs: it needs --engine llama.cpp")
    protocol = TraceProtocol.load(path)
    spliced = read_splice(path)
    if engine == "llama.cpp":
        model = _load_llamacpp(path, device, gguf, threads)
        if spliced is not None:
            return SplicedEngine(model, spliced), protocol
        eos, vocab = model.eos_token_id, model.vocab_size
    elif spliced is not None:             # hdlc splice: machine ids sit at an offset
        if engine == "sparse":
            model, _ = load_checkpoint_engine(path, device)
            return SplicedEngine(model, spliced), protocol
        model = SplicedModel(_load_transformers(path, directory, device, spliced), spliced)
        return model, protocol
    elif engine == "sparse":
        model, weights = load_checkpoint_engine(path, device)
        eos, vocab = _generation_eos(path, weights.eos_token_id), weights.vocab_size
    else:
        model = _load_transformers(path, directory, device)
        eos = model.generation_config.eos_token_id
        if eos is None:
            eos = model.config.eos_token_id
        vocab = model.get_output_embeddings().weight.shape[0]
    if eos != protocol.eos_id and not (isinstance(eos, list) and protocol.eos_id in eos):
        raise ProtocolError(f"{directory}: the checkpoint's eos_token_id is {eos}, its "
                            f"protocol.json says <eos> is {protocol.eos_id}")
    if vocab < protocol.vocab_size:
        raise ProtocolError(f"{directory}: the model has {vocab} output tokens, its protocol "
                            f"needs {protocol.vocab_size}")
    return model, protocol


def _load_llamacpp(path: Path, device: str | None, gguf, threads: int | None):
    """llama.cpp on the checkpoint's GGUF (exported into its cache first if need be)."""
    from qwengpu.llamacpp import LlamaCppEngine, require_xllamacpp

    if device is not None and str(device) != "cpu":
        raise UserError(f"--engine llama.cpp runs on the CPU (the xllamacpp wheel), not on "
                        f"{device}")
    require_xllamacpp()
    show = sys.stderr.isatty()
    return LlamaCppEngine.load(path, gguf, threads, progress=(lambda text: print(
        text, file=sys.stderr, flush=True)) if show else None)


def load_checkpoint_engine(path: Path, device: str | None):
    """The sparse engine on `path` (its torch version on a torch `device`), and its weights."""
    from qwengpu.engine import SparseEngine, read_weights

    weights = read_weights(path)
    if device is None or str(device) == "cpu":
        return SparseEngine(weights), weights
    from qwengpu.engine.torch_engine import TorchSparseEngine

    return TorchSparseEngine(weights, device), weights


def _generation_eos(path: Path, config_eos):
    """The eos id generate() would use: generation_config.json's, else config.json's."""
    import json

    try:
        generation = json.loads((path / "generation_config.json").read_text())
    except (OSError, ValueError):
        return config_eos
    eos = generation.get("eos_token_id") if isinstance(generation, dict) else None
    return config_eos if eos is None else eos


def _load_transformers(path: Path, directory, device: str | None, spliced=None):
    import torch
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    quiet_cpu_fallbacks(not str(device).startswith("cuda"))
    if str(device).startswith("cuda"):
        # fp32 means fp32: TF32 (10-bit mantissas) in matmuls or the DeltaNet convolution
        # would round the gadgets' drive constants (docs/trace.md, "Running on a GPU")
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    try:
        auto = AutoModelForImageTextToText if spliced and spliced.multimodal \
            else AutoModelForCausalLM
        model = auto.from_pretrained(str(path), dtype="auto")
    except (OSError, ValueError) as error:
        raise UserError(f"{directory}: transformers cannot load the checkpoint: {error}") \
            from None
    model.to(device).eval()
    return model


class _CpuFallbackFilter(logging.Filter):
    """Drops transformers' warnings that a kernel "is falling back to its reference PyTorch
    implementation because `flash-linear-attention` (or `causal-conv1d`) is not installed":
    one each for the DeltaNet's chunked and recurrent rules and its convolution's two forms.
    Those packages are CUDA kernels; on a CPU the PyTorch forms are the only ones there are
    (and the same arithmetic), so the four warnings tell a CPU user nothing to act on."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "falling back to its reference PyTorch implementation" not in record.getMessage()


CPU_FALLBACK_FILTER = _CpuFallbackFilter()
_FALLBACK_LOGGER = "transformers.integrations.hub_kernels"


def quiet_cpu_fallbacks(on_cpu: bool) -> None:
    """Hide the fallback warnings for a model on the CPU; show them again for one on a GPU,
    where installing the packages would help."""
    logger = logging.getLogger(_FALLBACK_LOGGER)
    if on_cpu:
        logger.addFilter(CPU_FALLBACK_FILTER)
    else:
        logger.removeFilter(CPU_FALLBACK_FILTER)


class LockstepChecker:
    """Compares the model's ids with the interpreter's records, one token at a time."""

    def __init__(self, launch: Launch, protocol: TraceProtocol, machine=None):
        self.protocol = protocol
        self.simulator = new_simulator(as_machine(machine), launch.instructions,
                                       launch.memory, launch.params, launch.grid, launch.block,
                                       launch.windows)
        self.record_index = 0
        self.ended = False
        self._at = 0
        self._record: dict[str, int] | None = None
        self._expected: list[int] = []
        self._differing: tuple[str, int, int] | None = None   # field, first byte, value so far

    def feed(self, token_id: int) -> None:
        protocol = self.protocol
        if self.ended:
            raise CheckMismatch(f"--check: a token after <eos>: {token_id}",
                                self.record_index, None, "nothing", token_id)
        if self._differing is not None:
            self._continue_difference(token_id)
            return
        if self._at == 0:
            self._record = self.simulator.step()
            self._expected = protocol.encode_record(self._record) if self._record else \
                [protocol.eos_id]
        if token_id == self._expected[self._at]:
            if self._record is None:
                self.ended = True
                return
            self._at = (self._at + 1) % len(self._expected)   # the record's next id
            self.record_index += self._at == 0
            return
        got = protocol.describe(token_id) if 0 <= token_id < protocol.vocab_size else None
        if self._record is None:
            self._fail(None, "<eos> (the interpreter stops here)", got.text if got else token_id)
        expected = protocol.describe(self._expected[self._at])
        if expected.kind == "port":
            self._fail(None, expected.text, got.text if got else f"token id {token_id}",
                       f"its commit of write port {expected.port}")
        name, byte = expected.name, expected.byte
        if got is None or got.kind != "field" or got.slot != expected.slot:
            self._fail(name, self._record[name], got.text if got else f"token id {token_id}")
        if expected.pair is not None:             # two fields in one token: name the one
            for field, bits in protocol.field_values(got):
                if bits != self._record[field]:
                    self._fail(field, self._record[field], bits)
        value = (self._record[name] & ((1 << 8 * byte) - 1)) | got.value << (8 * byte)
        self._differing = (name, byte, value)
        self._continue_difference(None)

    def _continue_difference(self, token_id: int | None) -> None:
        """Collect the rest of a differing field's bytes to report its whole value."""
        name, byte, value = self._differing
        if token_id is not None:
            token = self.protocol.describe(token_id) \
                if 0 <= token_id < self.protocol.vocab_size else None
            if token is None or token.kind != "field" or (token.name, token.byte) != (name, byte):
                self._fail(name, self._record[name], f"{value:#x} in its first {byte} bytes, "
                           f"then {token.text if token else f'token id {token_id}'}")
            value |= token.value << (8 * byte)
        byte += 1
        if byte == self.protocol.field_by_name[name].bytes:
            self._fail(name, self._record[name], value)
        self._differing = (name, byte, value)

    def _fail(self, name: str | None, expected, got, what: str | None = None) -> None:
        record = self._record
        where = f"record {self.record_index}"
        if record is not None and "warp" in record and "pc" in record:
            where += f" (warp {record['warp']}, pc {record['pc']})"
        what = what or (f"field {name}" if name else "the end of the launch")
        raise CheckMismatch(f"--check: {where} differs from the interpreter's at {what}: "
                            f"expected {expected}, got {got}", self.record_index, name,
                            expected, got)


class Unfinished:
    """A launch that `pause_seconds` stopped before its <eos>: the ids the model wrote after
    its prompt so far (the earlier sittings' included), to pass back as `resume_ids`;
    `first_token_seconds` is the part of `seconds` before the first new id (the prefill)."""

    def __init__(self, ids: list[int], records: int, seconds: float,
                 first_token_seconds: float | None = None):
        self.ids, self.records, self.seconds = ids, records, seconds
        self.first_token_seconds = first_token_seconds

    @property
    def tokens(self) -> int:
        return len(self.ids)


class _Progress:
    """Records and tokens/s on a terminal (rich bar), and with `every` a plain line to stderr
    every `every` seconds (long runs in a log): the seconds so far, each row's records and
    the new tokens/s (the prompts' and earlier sittings' ids not counted)."""

    def __init__(self, enabled: bool, every: float | None = None):
        self.bar, self.every = None, every
        if enabled:
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.bar = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                TimeElapsedColumn(), console=Console(stderr=True),
                                transient=True)
            self.task = self.bar.add_task("prefill")
            self.bar.start()
        self.start = self.last_line = time.perf_counter()
        self.tokens_before = 0                       # the earlier sittings' ids
        self.first_token_at: float | None = None     # when generate's first new id came

    def prompts_given(self, tokens_before: int) -> None:
        """generate has the prompts: the clock for tokens/s starts."""
        self.start = self.last_line = time.perf_counter()
        self.tokens_before = tokens_before

    def update(self, records_per_row: list[int], tokens: int) -> None:
        now = time.perf_counter()
        if self.first_token_at is None:
            self.first_token_at = now
        if self.bar is None and self.every is None:
            return
        rate = (tokens - self.tokens_before) / max(now - self.start, 1e-9)
        records = sum(records_per_row)
        if self.bar is not None:
            self.bar.update(self.task, description=f"{records} records, {tokens} tokens, "
                                                   f"{rate:.1f} tokens/s")
        if self.every is not None and now - self.last_line >= self.every:
            self.last_line = now
            rows = " ".join(str(count) for count in records_per_row)
            print(f"  {now - self.start:.0f} s: {records} records (a row: {rows}), "
                  f"{tokens} tokens, {rate:.1f} new tokens/s", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


class _Row:
    """One launch of a batch: its prompt, decoder, optional checker, and how it ended."""

    def __init__(self, launch: Launch, protocol: TraceProtocol, machine, check: bool,
                 max_records: int):
        self.launch = launch
        self.prompt = build_prompt(launch, protocol, machine)
        self.decoder = TraceDecoder(protocol, offset=len(self.prompt))
        self.checker = LockstepChecker(launch, protocol, machine) if check else None
        self.max_records = max_records
        self.error: UserError | None = None
        self.ids: list[int] = []                 # what the model wrote after the prompt

    @property
    def done(self) -> bool:
        return self.decoder.ended or self.error is not None

    def feed(self, token_id: int) -> None:
        """Watch one id the model chose for this launch; the first problem ends the row."""
        self.ids.append(token_id)
        try:
            if self.checker is not None:
                self.checker.feed(token_id)
            self.decoder.feed(token_id)
        except UserError as error:
            self.error = error
            return
        if not self.decoder.ended and len(self.decoder.records) >= self.max_records:
            self.error = LaunchError(unfinished_message(self.decoder.records,
                                                        self.max_records))


def _streamer(rows: list[_Row], progress: _Progress):
    from transformers.generation.streamers import BaseStreamer

    class TraceStreamer(BaseStreamer):
        """Sees every id generate() picks, one per row a step; the first call carries the
        prompts.  A row that has ended (or failed) ignores the padding generate appends."""

        prompt_seen = False

        def put(self, value) -> None:
            if not self.prompt_seen:
                self.prompt_seen = True
                progress.prompts_given(sum(len(row.ids) for row in rows))
                return
            for row, token_id in zip(rows, value.reshape(-1).tolist()):
                if not row.done:
                    row.feed(token_id)
            progress.update([len(row.decoder.records) for row in rows],
                            sum(len(row.ids) for row in rows))

        def end(self) -> None:
            pass

    return TraceStreamer()


def _stop_finished_rows(rows: list[_Row], deadline: float | None = None):
    """A stopping criterion: a row is finished once it ended, failed its check, or hit
    `max_records`; generate stops when every row is, or at `deadline` (perf_counter)."""
    import torch
    from transformers.generation.stopping_criteria import StoppingCriteria

    class RowsDone(StoppingCriteria):
        def __call__(self, input_ids, scores, **kwargs):
            paused = deadline is not None and time.perf_counter() >= deadline
            return torch.tensor([paused or row.done for row in rows], dtype=torch.bool,
                                device=input_ids.device)

    return RowsDone()


def generate_greedy(model, protocol: TraceProtocol, prompts: list[list[int]],
                    max_records: int, streamer=None, stopping_criteria=None,
                    prefill_chunk_size: int | None = None) -> list[list[int]]:
    """The ids the model picks greedily after each prompt, until <eos> or `max_records`
    records (the prompts left off); each row's ids end at its <eos>.  On transformers,
    several prompts run as one `generate`, left-padded with `<pad>` under an attention mask
    of 0 (docs/trace.md, "Several launches at once"), with `streamer` and
    `stopping_criteria` passed on; `prefill_chunk_size` has it take the prompts in chunks of
    that many tokens (long prompts: a launch resumed from its earlier ids).  The sparse
    engine runs every row on its own state."""
    max_new_tokens = max_records * protocol.tokens_per_record + 1
    if _is_engine(model):
        extra = {} if prefill_chunk_size is None else {"prefill_chunk": prefill_chunk_size}
        return model.generate(prompts, max_new_tokens, protocol.eos_id, **extra)
    import torch

    width = max(len(prompt) for prompt in prompts)
    input_ids = torch.tensor([[protocol.pad_id] * (width - len(prompt)) + prompt
                              for prompt in prompts], dtype=torch.long, device=model.device)
    attention_mask = torch.tensor([[0] * (width - len(prompt)) + [1] * len(prompt)
                                   for prompt in prompts], dtype=torch.long,
                                  device=model.device)
    extra = {} if stopping_criteria is None else {"stopping_criteria": [stopping_criteria]}
    if prefill_chunk_size is not None:
        extra["prefill_chunk_size"] = prefill_chunk_size
    with torch.inference_mode():
        output = model.generate(input_ids, attention_mask=attention_mask,
                                do_sample=False, num_beams=1, use_cache=True,
                                max_new_tokens=max_new_tokens,
                                eos_token_id=protocol.eos_id, pad_token_id=protocol.pad_id,
                                streamer=streamer, **extra)
    generated = []
    for row in output[:, width:].tolist():
        generated.append(row[:row.index(protocol.eos_id) + 1] if protocol.eos_id in row
                         else row)
    return generated


def model_device(model) -> str:
    """Where a loaded model runs (the sparse engine on the CPU unless it was put on a torch
    device)."""
    return str(getattr(model, "device", "cpu"))


def _is_engine(model) -> bool:
    from qwengpu.engine import SparseEngine
    from qwengpu.llamacpp import LlamaCppEngine

    return isinstance(model, (SparseEngine, SplicedEngine, LlamaCppEngine))


def engine_name(model) -> str:
    """`ENGINES`' name of a loaded model."""
    inner = model.engine if isinstance(model, SplicedEngine) else model
    if not _is_engine(inner):
        return "transformers"
    return getattr(inner, "name", "sparse")


def _run_on_engine(engine, rows: list[_Row], display: _Progress, deadline: float | None,
                   prefill_chunk_size: int, threads: int, max_new_tokens: int) -> None:
    """Feed each row the ids the engine (sparse or llama.cpp) writes for it, a step at a
    time, until every row is done or `deadline` (perf_counter) has passed."""
    budget = {"max_new_tokens": max_new_tokens} if engine_name(engine) == "llama.cpp" else {}
    session = engine.session([row.prompt + row.ids for row in rows], eos_id=None,
                             prefill_chunk=prefill_chunk_size, threads=threads, **budget)
    display.prompts_given(sum(len(row.ids) for row in rows))
    for step in session:
        for index, token_id in step:
            row = rows[index]
            row.feed(token_id)
            if row.done:
                session.end(index)
        display.update([len(row.decoder.records) for row in rows],
                       sum(len(row.ids) for row in rows))
        if deadline is not None and time.perf_counter() >= deadline:
            break


def run_launches_model(launches: list[Launch], model_dir: str | Path,
                       max_records: int = DEFAULT_MAX_RECORDS, check: bool = False,
                       progress: bool | None = None, device: str | None = None,
                       machine=None, loaded=None, resume_ids: list[list[int]] | None = None,
                       pause_seconds: float | None = None, prefill_chunk_size: int = 1024,
                       progress_every: float | None = None, engine: str = DEFAULT_ENGINE,
                       threads: int = 1, gguf: str | Path | None = None,
                       ) -> list[DecodedLaunch | Unfinished | UserError]:
    """Run several launches on a compiled checkpoint as one batch (one row a launch) on
    `engine` (`ENGINES`).  Each entry of the answer is the launch's outcome, or the error that ended its
    row (a `DecodeError`, a `CheckMismatch`, a `LaunchError` for `max_records`); the other
    rows run on.  `seconds` is the whole batch's time.  `loaded` reuses the (model,
    protocol) pair `load_checkpoint` gave.

    `pause_seconds` stops generating after that many seconds: a row still running then is
    `Unfinished` (its ids so far).  `resume_ids[i]` are ids an earlier sitting's model wrote
    for launch i (its `Unfinished.ids`): they are decoded and checked again, then given after
    the prompt in prefill chunks of `prefill_chunk_size` tokens, and generation goes on.
    `progress_every` writes a progress line to stderr that often (seconds), terminal or not.
    `threads` shares the rows out over that many threads on the sparse engine (the ids do
    not depend on it) and is llama.cpp's thread count; `gguf` is the file llama.cpp runs
    (default: the checkpoint's cached GGUF)."""
    check_max_records(max_records)
    model, protocol = loaded or load_checkpoint(model_dir, device, engine, gguf, threads)
    rows = [_Row(launch, protocol, machine, check, max_records) for launch in launches]
    for row, earlier in zip(rows, resume_ids or []):
        for token_id in earlier:
            if not row.done:
                row.feed(token_id)
    running = [row for row in rows if not row.done]
    display = _Progress(sys.stderr.isatty() if progress is None else progress, progress_every)
    started = time.perf_counter()
    deadline = None if pause_seconds is None else started + pause_seconds
    try:
        if running and _is_engine(model):
            _run_on_engine(model, running, display, deadline, prefill_chunk_size, threads,
                           max_records * protocol.tokens_per_record + 1)
        elif running:
            generate_greedy(model, protocol, [row.prompt + row.ids for row in running],
                            max_records, streamer=_streamer(running, display),
                            stopping_criteria=_stop_finished_rows(running, deadline),
                            prefill_chunk_size=prefill_chunk_size if any(
                                row.ids for row in running) else None)
    finally:
        display.close()
    seconds = time.perf_counter() - started
    first_token = None if display.first_token_at is None else display.first_token_at - started
    paused = deadline is not None and time.perf_counter() >= deadline
    outcomes: list[DecodedLaunch | Unfinished | UserError] = []
    for row in rows:
        if paused and not row.done:
            outcomes.append(Unfinished(row.ids, len(row.decoder.records), seconds, first_token))
            continue
        if row.error is None:
            try:
                records = row.decoder.finish()
            except UserError as error:
                row.error = error
        if row.error is not None:
            outcomes.append(row.error)
            continue
        try:
            result = launch_outcome(row.launch, records, tokens=row.decoder.tokens)
        except UserError as error:       # a trace that breaks a rule of the launch's traces
            outcomes.append(error)
            continue
        result.prompt_tokens, result.seconds = len(row.prompt), seconds
        result.ids = list(row.ids)
        result.first_token_seconds = first_token
        result.engine = engine_name(model)
        result.ids = row.ids                     # what the model wrote after the prompt
        outcomes.append(result)
    return outcomes


def run_launch_model(launch: Launch, model_dir: str | Path, max_records: int =
                     DEFAULT_MAX_RECORDS, check: bool = False, progress: bool | None = None,
                     device: str | None = None, machine=None,
                     engine: str = DEFAULT_ENGINE) -> DecodedLaunch:
    """Run a launch on a compiled checkpoint (see the module docstring); its first problem
    is raised."""
    outcome, = run_launches_model([launch], model_dir, max_records, check, progress, device,
                                  machine, engine=engine)
    if isinstance(outcome, UserError):
        raise outcome
    return outcome
