"""The sparse engine: a Qwen3.5 checkpoint's forward pass and greedy decoding, row by row.

    engine = SparseEngine.load("out/qwengpu")
    for step in engine.session([prompt_a, prompt_b], eos_id=4):   # one token per live row
        for row, token_id in step: ...                             # session.end(row) drops one

`SparseEngine` runs the decoder of `qwengpu.engine.weights.Weights` on columns (a column is
one token of one row): embedding, then per layer the zero-centred RMSNorm, the mixer (Gated
DeltaNet or full attention, `qwengpu.engine.kernels`), the residual add, the RMSNorm, the
SwiGLU MLP, the residual add; the final norm, `lm_head` and argmax for the columns whose
next token is wanted.  A prompt is prefilled in chunks (`prefill_chunk` tokens at once
through the matrices, the recurrences stepped token by token inside the kernels); then every
live row writes one token a step.  Rows keep separate state (conv windows, DeltaNet memory,
attention caches, positions from 0), so a row's ids never depend on the other rows.

Runs of sparse layers (the compiled machine's) go through one compiled call each
(`qwengpu.engine.fused`), the other layers kernel by kernel.  With threads (`session(...,
threads=N)`), a decode step's work is shared out without changing a sum: a dense product's
panels of rows, and the rows of the batch through the sparse runs and the mixers.

The engine computes only from the checkpoint's tensors: stock transformers'
`generate(do_sample=False)` is the judge it is held to (tests demand the same ids).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numba
import numpy as np

from qwengpu.engine import dense_kernels, kernels, mixer_kernels, thread_parts
from qwengpu.engine.fused import FusedLayers, fusable
from qwengpu.engine.mixer_kernels import KEY_BLOCK
from qwengpu.engine.weights import AttentionMixer, DeltaNetMixer, Layer, Matrix, Mlp, \
    Weights, read_weights, rotary_tables

DEFAULT_PREFILL_CHUNK = 256
FLOAT = np.float32


class Workers:
    """The threads a session shares its work over: a decode step's pieces in numba's
    parallel loops (`qwengpu.engine.thread_parts`), a prefill's rows on a pool of Python
    threads (the kernels release the GIL)."""

    def __init__(self, threads: int):
        self.threads = threads
        self._executor = ThreadPoolExecutor(threads)
        thread_parts.start_threads()

    def map(self, work: Callable, items) -> list:
        return list(self._executor.map(work, items))

    def bounds(self, count: int) -> np.ndarray:
        """0..count cut into as many nearly equal parts as there are threads (part p from
        bounds[p] to bounds[p + 1] - 1; no part empty), for a `thread_parts` call from this
        thread, which this sets numba to run on that many threads (as many as it has)."""
        numba.set_num_threads(min(self.threads, numba.config.NUMBA_NUM_THREADS))
        cuts = [count * part // self.threads for part in range(self.threads + 1)]
        return np.unique(np.asarray(cuts, dtype=np.int64))

    def shutdown(self) -> None:
        self._executor.shutdown()


def dense_into(panels: np.ndarray, x: np.ndarray, out: np.ndarray,
               workers: Workers | None = None) -> None:
    """out = the dense product of `panels` (`dense_kernels.dense_product`), the panels shared out
    over the workers' threads: each output row is summed by one thread, as it would be
    alone."""
    if workers is None:
        dense_kernels.dense_product(panels, x, out)
        return
    thread_parts.dense_in_parts(panels, x, out, workers.bounds(panels.shape[0]))


def matmul(matrix: Matrix, x: np.ndarray, workers: Workers | None = None) -> np.ndarray:
    """matrix @ x for x [columns of matrix, n]."""
    out = np.empty((matrix.rows, x.shape[1]), dtype=FLOAT)
    if matrix.stored is not None:
        if matrix.transposed_products:
            raise ValueError("a matrix kept for products with its transpose (down_by_unit)")
        if matrix.apart is None:
            dense_into(matrix.stored, x, out, workers)
            return out
        if matrix.panels_first:
            dense_into(matrix.stored, x, out[:matrix.product_rows], workers)
        else:
            held = np.empty((matrix.product_rows, x.shape[1]), dtype=FLOAT)
            dense_into(matrix.stored, x, held, workers)
            out[matrix.panel_rows] = held
        out[matrix.apart_rows] = matmul(matrix.apart, x, workers)
    else:
        kernels.csr_matmul(matrix.indptr, matrix.indices, matrix.data, x, out)
    return out


def matmul_add(matrix: Matrix, x: np.ndarray, residual: np.ndarray,
               workers: Workers | None = None) -> None:
    """residual += matrix @ x (a sublayer's output into the residual stream)."""
    if matrix.stored is not None:
        residual += matmul(matrix, x, workers)
        return
    kernels.csr_matmul_add(matrix.indptr, matrix.indices, matrix.data, x, residual)


def mlp_add(mlp: Mlp, x: np.ndarray, residual: np.ndarray,
            workers: Workers | None = None) -> None:
    """residual += down(silu(gate(x)) * up(x)): one kernel when all three are sparse."""
    gate, up, down = mlp.gate, mlp.up, mlp.down_by_unit
    if gate.stored is None and up.stored is None and down.stored is None:
        kernels.mlp_add(gate.indptr, gate.indices, gate.data, mlp.gate_twins,
                        mlp.gate_finite, *mlp.families.arrays, up.indptr, up.indices, up.data, down.indptr,
                        down.indices, down.data, x, residual)
        return
    hidden = matmul(gate, x, workers)
    kernels.silu_rows(hidden)
    hidden *= matmul(up, x, workers)
    if down.stored is not None:               # down_by_unit, its transpose multiplied
        total = np.empty_like(residual)
        dense_into(down.stored, hidden, total, workers)
    else:
        total = np.zeros_like(residual)
        kernels.csr_scatter_add(down.indptr, down.indices, down.data, hidden, total)
    residual += total


@dataclass
class Span:
    """Layers `first` to `last` - 1 of the decoder, run together: `fused` where every one
    is sparse (`fused.fusable`), else one by one."""
    first: int
    last: int
    fused: FusedLayers | None


def layer_spans(layers: list[Layer], fuse: bool = True) -> list[Span]:
    """The decoder cut into runs of fusable layers (fused where `fuse`) and runs of the
    others."""
    spans: list[Span] = []
    first = 0
    for index in range(1, len(layers) + 1):
        if index < len(layers) and fusable(layers[index]) == fusable(layers[first]):
            continue
        run = layers[first:index]
        spans.append(Span(first, index, FusedLayers(run, first)
                          if fuse and fusable(layers[first]) else None))
        first = index
    return spans


class State:
    """What each row of a batch carries from token to token."""

    def __init__(self, weights: Weights, rows: int):
        self.rows = rows
        self.positions = np.zeros(rows, dtype=np.int64)
        self.conv: dict[int, np.ndarray] = {}
        self.memory: dict[int, np.ndarray] = {}
        self.keys: dict[int, np.ndarray] = {}
        self.values: dict[int, np.ndarray] = {}
        self.lengths: dict[int, np.ndarray] = {}
        for index, layer in enumerate(weights.layers):
            mixer = layer.mixer
            if isinstance(mixer, DeltaNetMixer):
                self.conv[index] = np.zeros((rows, 3, mixer.conv_inputs), dtype=FLOAT)
                self.memory[index] = np.zeros((rows,) + mixer.state_shape, dtype=FLOAT)
            elif isinstance(mixer, AttentionMixer):
                kv_heads, dims = len(mixer.kv_heads), mixer.head_dim
                self.keys[index] = np.zeros((rows, kv_heads, 64 // KEY_BLOCK, dims, KEY_BLOCK),
                                            dtype=FLOAT)
                self.values[index] = np.zeros((rows, kv_heads, 64, dims), dtype=FLOAT)
                self.lengths[index] = np.zeros(rows, dtype=np.int64)
        self.fused_lists: dict[int, tuple] = {}   # a fused span's state, as it reads it

    def reserve(self, length: int) -> None:
        """Room in every attention cache for `length` tokens a row (the keys in blocks of
        KEY_BLOCK positions: `mixer_kernels.attention_columns`)."""
        for index, values in self.values.items():
            held = values.shape[2]
            if held >= length:
                continue
            capacity = -(-max(length, 2 * held) // KEY_BLOCK) * KEY_BLOCK
            grown = np.zeros(values.shape[:2] + (capacity,) + values.shape[3:], dtype=FLOAT)
            grown[:, :, :held] = values
            self.values[index] = grown
            keys = self.keys[index]
            grown = np.zeros(keys.shape[:2] + (capacity // KEY_BLOCK,) + keys.shape[3:],
                             dtype=FLOAT)
            grown[:, :, :keys.shape[2]] = keys
            self.keys[index] = grown


class SparseEngine:
    """A compiled checkpoint's decoder, run from its own tensors (see the module doc)."""

    def __init__(self, weights: Weights, fuse: bool = True):
        self.weights = weights
        # runs of sparse layers in one compiled call each (engine/fused.py)
        self.spans = layer_spans(weights.layers, fuse)
        self._cos = self._sin = np.zeros((0, max(weights.rotary_dims, 2)), dtype=FLOAT)

    @property
    def fused(self) -> FusedLayers | None:
        """The decoder's layers in one compiled call, where they all fuse."""
        return self.spans[0].fused if len(self.spans) == 1 else None

    @classmethod
    def load(cls, directory: str | Path, fuse: bool = True) -> "SparseEngine":
        return cls(read_weights(directory), fuse)

    def new_state(self, rows: int) -> State:
        state = State(self.weights, rows)
        for span in self.spans:                  # made here, not by threads racing to it
            self._fused_lists(state, span)
        return state

    @staticmethod
    def _fused_lists(state: State, span: Span) -> tuple | None:
        """The state of a fused span's layers as it reads it (made on first use)."""
        if span.fused is None:
            return None
        lists = state.fused_lists.get(span.first)
        if lists is None:
            lists = state.fused_lists[span.first] = span.fused.state_lists(state.conv,
                                                                           state.memory)
        return lists

    def reserve(self, state: State, positions: int) -> None:
        """Room for `positions` tokens a row in `state`'s caches and the rotary tables."""
        state.reserve(positions)
        self._rotary(positions)

    def _rotary(self, positions: int) -> tuple[np.ndarray, np.ndarray]:
        if self._cos.shape[0] < positions:
            count = max(positions, 2 * self._cos.shape[0], 1024)
            self._cos, self._sin = rotary_tables(self.weights.rope_theta,
                                                 self.weights.rotary_dims, count)
        return self._cos, self._sin

    def forward(self, state: State, tokens: Sequence[int], slots: Sequence[int],
                wanted: Sequence[int], logits: bool = False,
                workers: Workers | None = None) -> np.ndarray:
        """Run one column per (token, slot), in order (a row's columns in time order), and
        return the greedy next id after each column listed in `wanted` (with `logits`, the
        logits themselves, [vocab, len(wanted)]).  With `workers`, the dense products are
        shared out over their threads by panels, and where every column is a row of its
        own (a decode step) the sparse runs and the mixers by columns."""
        weights = self.weights
        tokens = np.asarray(tokens, dtype=np.int64)
        slots = np.asarray(slots, dtype=np.int64)
        columns = tokens.shape[0]
        if columns and not 0 <= tokens.min() <= tokens.max() < weights.vocab_size:
            raise ValueError(f"token ids must lie in 0..{weights.vocab_size - 1}")
        positions = np.empty(columns, dtype=np.int64)
        for column, slot in enumerate(slots.tolist()):
            positions[column] = state.positions[slot]
            state.positions[slot] += 1
        x = self._embed(tokens)
        if state.keys:
            state.reserve(int(state.positions.max()))
            self._rotary(int(positions.max()) + 1)
        by_rows = workers if workers is not None and columns > 1 \
            and np.unique(slots).shape[0] == columns else None
        for span in self.spans:
            if by_rows is not None and span.fused is not None:
                thread_parts.layers_in_parts(by_rows.bounds(columns), x, slots,
                                             FLOAT(weights.eps), *span.fused.weight_arguments,
                                             *self._fused_lists(state, span))
            else:
                self._span(state, span, x, slots, positions, workers, by_rows)
        chosen = np.ascontiguousarray(x[:, np.asarray(wanted, dtype=np.int64)])
        final = np.empty_like(chosen)
        kernels.rms_norm(chosen, weights.final_scale, FLOAT(weights.eps), final)
        scores = matmul(weights.lm_head, final, workers)
        if logits:
            return scores
        ids = np.empty(chosen.shape[1], dtype=np.int64)
        kernels.argmax_columns(scores, ids)
        return ids

    def _span(self, state: State, span: Span, x: np.ndarray, slots: np.ndarray,
              positions: np.ndarray, workers: Workers | None = None,
              by_rows: Workers | None = None) -> None:
        """The span's layers on x ([hidden, columns], updated in place)."""
        weights = self.weights
        if span.fused is not None:
            span.fused.run(x, slots, FLOAT(weights.eps), self._fused_lists(state, span))
            return
        normed = np.empty_like(x)
        for index in range(span.first, span.last):
            layer = weights.layers[index]
            mixer, mlp = layer.mixer, layer.mlp
            if mixer is not None:
                kernels.rms_norm(x, layer.input_scale, FLOAT(weights.eps), normed)
                projected = matmul(mixer.projection, normed, workers)
                out = self._mixer(state, index, projected, slots, positions, by_rows)
                matmul_add(mixer.out_proj, out, x, workers)
            if mlp is not None:
                kernels.rms_norm(x, layer.post_scale, FLOAT(weights.eps), normed)
                mlp_add(mlp, normed, x, workers)

    @staticmethod
    def _mixer_outputs(mixer: DeltaNetMixer | AttentionMixer) -> int:
        if isinstance(mixer, DeltaNetMixer):
            return len(mixer.value_heads) * mixer.value_head_dim
        return len(mixer.query_heads) * mixer.head_dim

    def _mixer(self, state: State, index: int, projected: np.ndarray, slots: np.ndarray,
               positions: np.ndarray, by_rows: Workers | None = None) -> np.ndarray:
        """Layer `index`'s mixer between its projections: its output for each column (with
        `by_rows`, each thread's share of the columns, each a row of its own)."""
        weights = self.weights
        mixer = weights.layers[index].mixer
        out = np.empty((self._mixer_outputs(mixer), projected.shape[1]), dtype=FLOAT)
        if isinstance(mixer, DeltaNetMixer):
            arguments = (
                projected, slots, mixer.conv_channel, mixer.conv_weight, state.conv[index],
                len(mixer.key_heads) * mixer.key_head_dim, len(mixer.value_heads),
                mixer.key_of_value_head, mixer.key_head_dim, mixer.value_head_dim,
                mixer.neg_a, mixer.dt_bias, mixer.norm_weight, FLOAT(weights.eps),
                mixer.state_rows, mixer.state_row_count, mixer.state_columns,
                mixer.state_column_count, state.memory[index], out)
            kernel, in_parts = mixer_kernels.deltanet_columns, thread_parts.deltanet_in_parts
        else:
            cos, sin = self._rotary(int(positions.max()) + 1)
            arguments = (
                projected, slots, positions, mixer.kv_of_head, len(mixer.kv_heads),
                mixer.head_dim, mixer.q_scale, mixer.k_scale, FLOAT(weights.eps), cos, sin,
                state.keys[index], state.values[index], state.lengths[index], out)
            kernel, in_parts = mixer_kernels.attention_columns, thread_parts.attention_in_parts
        if by_rows is None:
            kernel(*arguments)
        else:
            in_parts(by_rows.bounds(projected.shape[1]), *arguments)
        return out

    def _embed(self, tokens: np.ndarray) -> np.ndarray:
        embed = self.weights.embed
        if embed.stored is not None:          # kept transposed: a column per token
            return embed.columns_of(tokens)
        x = np.zeros((embed.columns, tokens.shape[0]), dtype=FLOAT)
        for column, token in enumerate(tokens.tolist()):
            start, stop = embed.indptr[token], embed.indptr[token + 1]
            x[embed.indices[start:stop], column] = embed.data[start:stop]
        return x

    def session(self, prompts: Sequence[Sequence[int]], eos_id: int | None = None,
                prefill_chunk: int = DEFAULT_PREFILL_CHUNK,
                on_prefill: Callable[[int, int], None] | None = None,
                threads: int = 1) -> "Session":
        return Session(self, prompts, eos_id, prefill_chunk, on_prefill, threads)

    def generate(self, prompts: Sequence[Sequence[int]], max_new_tokens: int,
                 eos_id: int | None = None, prefill_chunk: int = DEFAULT_PREFILL_CHUNK,
                 threads: int = 1) -> list[list[int]]:
        """The ids greedy decoding writes after each prompt: up to `max_new_tokens`, ending
        with `eos_id` where the row writes it."""
        session = self.session(prompts, eos_id, prefill_chunk, threads=threads)
        written: list[list[int]] = [[] for _ in prompts]
        for step in session:
            for row, token_id in step:
                written[row].append(token_id)
                if len(written[row]) >= max_new_tokens:
                    session.end(row)
        return written


class Session:
    """Greedy decoding of several prompts (rows): iterate to get each step's (row, id)
    pairs, one per live row.  A row ends after it writes `eos_id`, or when `end(row)` is
    called.  `prefill_seconds` is the time the prompts took.

    With `threads` > 1 the prompts are prefilled a row to a thread (with fewer rows than
    threads, a row at a time, its products shared over the threads), and each step runs
    every live row at once with its work shared out over the threads (`forward`'s
    `workers`): rows touch only their own state, each sum is taken by one thread as it
    would be alone, and the kernels release the GIL, so this changes the time, not a
    single id."""

    def __init__(self, engine: SparseEngine, prompts: Sequence[Sequence[int]],
                 eos_id: int | None, prefill_chunk: int,
                 on_prefill: Callable[[int, int], None] | None, threads: int = 1):
        if any(len(prompt) == 0 for prompt in prompts):
            raise ValueError("every prompt needs at least one token")
        self.engine, self.eos_id = engine, eos_id
        self.prompts = [list(prompt) for prompt in prompts]
        self.prefill_chunk = max(1, prefill_chunk)
        self.on_prefill = on_prefill
        self.threads = max(1, threads)
        self.state = engine.new_state(len(prompts))
        self.live = list(range(len(prompts)))
        self.prefill_seconds: float | None = None
        self.steps = 0
        self._workers = Workers(self.threads) if self.threads > 1 else None

    def end(self, row: int) -> None:
        if row in self.live:
            self.live.remove(row)

    def _map(self, work: Callable, groups: list) -> list:
        """work(group) for each group, on the session's threads when there are several."""
        if self._workers is None or len(groups) == 1:
            return [work(group) for group in groups]
        return self._workers.map(work, groups)

    def _grow(self, positions: int) -> None:
        """Room for `positions` tokens a row (caches, rotary tables), before threads run."""
        self.engine.reserve(self.state, positions)

    def _prefill(self) -> dict[int, int]:
        started = time.perf_counter()
        total = sum(len(prompt) for prompt in self.prompts)
        done = [0]
        self._grow(max(len(prompt) for prompt in self.prompts) + 1)

        # Fewer rows than threads: the rows one after another, each chunk's products
        # shared over the threads; else a row to a thread.
        shared = self._workers if len(self.prompts) < self.threads else None

        def prefill_row(row: int) -> int:
            prompt = self.prompts[row]
            for start in range(0, len(prompt), self.prefill_chunk):
                piece = prompt[start:start + self.prefill_chunk]
                ids = self.engine.forward(self.state, piece, [row] * len(piece),
                                          [len(piece) - 1], workers=shared)
                done[0] += len(piece)
                if self.on_prefill is not None:
                    self.on_prefill(done[0], total)
            return int(ids[0])

        rows = list(range(len(self.prompts)))
        following = dict(zip(rows, [prefill_row(row) for row in rows] if shared is not None
                             else self._map(prefill_row, rows)))
        self.prefill_seconds = time.perf_counter() - started
        return following

    def _step(self, following: dict[int, int]) -> dict[int, int]:
        rows = list(self.live)
        self._grow(int(self.state.positions[rows].max()) + 1)
        ids = self.engine.forward(self.state, [following[row] for row in rows], rows,
                                  list(range(len(rows))), workers=self._workers)
        return dict(zip(rows, ids.tolist()))

    def __iter__(self) -> Iterator[list[tuple[int, int]]]:
        try:
            following = self._prefill()
            while self.live:
                step = [(row, following[row]) for row in self.live]
                self.steps += 1
                yield step
                for row, token_id in step:
                    if token_id == self.eos_id:
                        self.end(row)
                if not self.live:
                    return
                following = self._step(following)
        finally:
            if self._workers is not None:
                self._workers.shutdown()
