"""Running a checkpoint in llama.cpp: greedy decoding of its GGUF through `xllamacpp`.

    engine = LlamaCppEngine.load("out/qwengpu")        # exports out/qwengpu.gguf if needed
    ids, = engine.generate([prompt], max_new_tokens=5000, eos_id=4)
    for step in engine.session([prompt_a, prompt_b], max_new_tokens=5000):  # [(row, id)]
        ...

`xllamacpp` (PyPI, prebuilt CPU wheels: nothing to compile) holds llama.cpp's own server
in the process; a completion request takes the prompt as token ids and streams back every
id llama.cpp picks.  The settings are those exactness needs (docs/llamacpp.md): the
float32 GGUF, a float32 KV cache (the default float16 overflows on large gate values),
flash attention off, greedy decoding with the temperature sampler alone (temperature 0
keeps the first of the highest logits, as `torch.argmax`), no repetition penalties, no
prompt cache, `ignore_eos` off (it would set the `<eos>` logit to -inf); llama.cpp stops
at the GGUF's end-of-generation tokens by itself.  Nothing here looks at the logits: the
ids are llama.cpp's own choices, passed on as they come.

Rows run one after the other in one llama.cpp slot (each from an empty state), so a row's
ids never depend on the others.  The context (the KV cache of the full-attention layers,
float32) is sized to what a row needs: it starts at the prompt plus 8,192 tokens (or
`max_new_tokens`, if smaller) and doubles when a long trace fills it: the row then goes on
in a larger context from its prompt and the ids it has written so far, taken as a prefill,
as a launch resumed over sittings does (docs/trace.md).

A checkpoint's GGUF is cached beside it (`cached_gguf`: `out/qwengpu.gguf` for the
checkpoint `out/qwengpu`, exported again when the checkpoint's files have changed since; the
checkpoint's own folder stays as `hdlc compile` wrote it); `--gguf FILE` names another.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from pathlib import Path
from typing import Iterator, Sequence

from qwengpu.errors import UserError

FIRST_ROOM = 8192                     # new tokens the first context leaves room for
CONTEXT_STEP = 256                    # contexts are whole multiples of this
MAX_CONTEXT = 1 << 20
# llama.cpp's log level (0: nothing but its errors; QWENGPU_LLAMACPP_VERBOSITY=3 for all)
VERBOSITY = int(os.environ.get("QWENGPU_LLAMACPP_VERBOSITY", "0") or 0)
_DONE = object()


def require_xllamacpp():
    """The `xllamacpp` module (the `[llamacpp]` extra), or a `UserError` saying how to get
    it."""
    # llama.cpp's CPU threads meet at an OpenMP barrier after every operation; spinning
    # there (OpenMP's default) stalls a whole token whenever another process holds a core
    # (docs/llamacpp.md, "Threads"): wait passively unless told otherwise
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import xllamacpp
    except ImportError:
        raise UserError("--engine llama.cpp needs the xllamacpp package (llama.cpp's prebuilt "
                        "CPU wheels): pip install -e \".[llamacpp]\" (or pip install xllamacpp "
                        "gguf)") from None
    return xllamacpp


def cache_path(directory: str | Path) -> Path:
    """Where a checkpoint's GGUF is cached: beside its folder, `DIR.gguf`."""
    directory = Path(directory).absolute()
    return directory.with_name(directory.name + ".gguf")


def cached_gguf(directory: str | Path, progress=None) -> Path:
    """The checkpoint's GGUF in its cache (`cache_path`), exported first when it is missing
    or older than the checkpoint's files."""
    from qwengpu.llamacpp.export import SOURCE_KEY, export_gguf, require_gguf, source_stamp

    directory = Path(directory)
    path = cache_path(directory)
    if path.is_file():
        try:
            reader = require_gguf().GGUFReader(str(path))
            field = reader.fields.get(SOURCE_KEY)
            stamp = json.loads(field.contents()) if field is not None else None
        except (ValueError, OSError):
            stamp = None
        if stamp == source_stamp(directory):
            return path
    if progress:
        progress(f"exporting {directory} to {path} for llama.cpp")
    export_gguf(directory, path, progress)
    return path


def gguf_facts(path: Path) -> dict:
    """What the runtime checks a GGUF against its checkpoint by: vocabulary size, eos."""
    from qwengpu.llamacpp.export import require_gguf

    try:
        reader = require_gguf().GGUFReader(str(path))
    except (ValueError, OSError) as error:
        raise UserError(f"{path}: not a readable GGUF file ({error})") from None

    def value(key, default=None):
        field = reader.fields.get(key)
        return default if field is None else field.contents()

    if value("general.architecture") != "qwen35":
        raise UserError(f"{path}: a {value('general.architecture')!r} GGUF; the machine "
                        "runs as qwen35 (hdlc export DIR --gguf FILE writes one)")
    return {"vocab_size": len(value("tokenizer.ggml.tokens", [])),
            "eos_token_id": value("tokenizer.ggml.eos_token_id"),
            "context_length": value("qwen35.context_length", 0)}


class LlamaCppEngine:
    """A GGUF in llama.cpp, decoded greedily (see the module doc)."""

    name = "llama.cpp"

    def __init__(self, gguf: str | Path, threads: int | None = None):
        require_xllamacpp()
        self.path = Path(gguf)
        if not self.path.is_file():
            raise UserError(f"{gguf}: no such GGUF file")
        facts = gguf_facts(self.path)
        self.vocab_size, self.eos_token_id = facts["vocab_size"], facts["eos_token_id"]
        self.threads = threads or 2
        self.context = 0
        self._server = None

    @classmethod
    def load(cls, directory: str | Path, gguf: str | Path | None = None,
             threads: int | None = None, progress=None) -> "LlamaCppEngine":
        """The engine on `gguf`, or on the checkpoint's cached GGUF (exported if needed)."""
        return cls(gguf if gguf is not None else cached_gguf(directory, progress), threads)

    @property
    def device(self) -> str:
        return "cpu"

    def server(self, context: int):
        """llama.cpp's server (an `xllamacpp.Server`) with a context of at least `context`
        tokens, loaded anew when the one there is smaller."""
        if self._server is not None and self.context >= context:
            return self._server
        xllamacpp = require_xllamacpp()
        self.close()
        params = xllamacpp.CommonParams()
        params.model.path = str(self.path)
        params.n_ctx = context
        params.n_parallel = 1
        params.cache_type_k = xllamacpp.ggml_type.GGML_TYPE_F32
        params.cache_type_v = xllamacpp.ggml_type.GGML_TYPE_F32
        params.flash_attn_type = xllamacpp.llama_flash_attn_type.LLAMA_FLASH_ATTN_TYPE_DISABLED
        params.warmup = False
        params.fit_params = False
        params.ctx_shift = False
        params.n_ctx_checkpoints = 0
        params.cache_ram_mib = 0
        params.verbosity = VERBOSITY
        params.cpuparams.n_threads = self.threads
        params.cpuparams_batch.n_threads = self.threads
        try:
            self._server = xllamacpp.Server(params)
        except RuntimeError as error:
            raise UserError(f"{self.path}: llama.cpp cannot load it ({error}; "
                            "QWENGPU_LLAMACPP_VERBOSITY=3 shows llama.cpp's log)") from None
        self.context = context
        return self._server

    def close(self) -> None:
        """Let the llama.cpp server go (its memory with it)."""
        server, self._server, self.context = self._server, None, 0
        del server

    def session(self, prompts: Sequence[Sequence[int]], eos_id: int | None = None,
                max_new_tokens: int = MAX_CONTEXT, **ignored) -> "Session":
        """Greedy decoding of each prompt in turn: iterate for `[(row, id)]` steps (one row
        a step); `end(row)` stops a row.  A row also ends at llama.cpp's end of generation,
        at `eos_id`, or after `max_new_tokens`.  (`prefill_chunk` and `threads`, which the
        sparse engine takes, are llama.cpp's own business here: its batch size and the
        threads it was loaded with.)"""
        return Session(self, prompts, eos_id, max_new_tokens)

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int,
                 eos_id: int | None = None, **ignored) -> list[list[int]]:
        """The ids greedy decoding writes after each prompt: up to `max_new_tokens`, ending
        with llama.cpp's end of generation (or `eos_id`) where the row writes it."""
        written: list[list[int]] = [[] for _ in prompts]
        for step in self.session(prompts, eos_id, max_new_tokens):
            for row, token_id in step:
                written[row].append(token_id)
        return written

    def stream(self, ids: Sequence[int], max_tokens: int, grow: bool = False) -> "_Stream":
        """One completion of `ids` (at most `max_tokens` new ones) on a thread; `grow`: in
        a context twice the last one (a row that filled it goes on)."""
        room = min(max_tokens, FIRST_ROOM)
        wanted = max(len(ids) + room, 2 * self.context if grow else 0)
        if wanted > MAX_CONTEXT:
            raise UserError(f"llama.cpp: a row needs a context of {wanted} tokens, more than "
                            f"{MAX_CONTEXT}")
        server = self.server(-(-wanted // CONTEXT_STEP) * CONTEXT_STEP)
        return _Stream(server, list(ids), min(max_tokens, self.context - len(ids)))


class Session:
    """The rows of `LlamaCppEngine.session`, one after the other."""

    def __init__(self, engine: LlamaCppEngine, prompts, eos_id, max_new_tokens: int):
        if any(len(prompt) == 0 for prompt in prompts):
            raise ValueError("every prompt needs at least one token")
        self.engine, self.eos_id, self.max_new_tokens = engine, eos_id, max_new_tokens
        self.prompts = [list(prompt) for prompt in prompts]
        self.ended: set[int] = set()

    def end(self, row: int) -> None:
        self.ended.add(row)

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        for row, prompt in enumerate(self.prompts):
            written: list[int] = []
            full = False
            while row not in self.ended and len(written) < self.max_new_tokens:
                stream = self.engine.stream(prompt + written,
                                            self.max_new_tokens - len(written), grow=full)
                try:
                    for token_id in stream:
                        written.append(token_id)
                        yield [(row, token_id)]
                        if token_id == self.eos_id or row in self.ended:
                            self.ended.add(row)
                            break
                finally:
                    stream.close()
                if stream.finish_reason == "stop":       # llama.cpp's end of generation
                    self.ended.add(row)
                full = True                              # else the context was full


class _Stream:
    """A streamed completion: the ids llama.cpp picks, in order, from a thread that runs
    the (blocking) request; `close()` stops it at the next token."""

    def __init__(self, server, prompt: list[int], max_tokens: int):
        self.finish_reason: str | None = None
        self._ids: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        request = {"prompt": prompt, "max_tokens": max_tokens, "stream": True,
                   "temperature": 0.0, "samplers": ["temperature"], "n_probs": 1,
                   "cache_prompt": False, "repeat_penalty": 1.0, "ignore_eos": False}
        self._thread = threading.Thread(target=self._run, args=(server, request), daemon=True)
        self._thread.start()

    def _run(self, server, request: dict) -> None:
        def on_chunk(chunk: dict) -> bool:
            if "choices" not in chunk:
                self._ids.put(UserError(f"llama.cpp: {chunk.get('error', chunk)}"))
                return True
            for choice in chunk["choices"]:
                for token in (choice.get("logprobs") or {}).get("content") or []:
                    self._ids.put(int(token["id"]))
                if choice.get("finish_reason"):
                    self.finish_reason = choice["finish_reason"]
            return self._stop.is_set()

        try:
            server.handle_completions(request, on_chunk)
        except Exception as error:                 # noqa: BLE001 - handed to the reader
            self._ids.put(error)
        finally:
            self._ids.put(_DONE)

    def __iter__(self) -> Iterator[int]:
        while True:
            item = self._ids.get()
            if item is _DONE:
                return
            if isinstance(item, Exception):
                raise item
            yield item

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
