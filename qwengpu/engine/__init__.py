"""The sparse engine: runs a compiled Qwen3.5 checkpoint from its own tensors, fast.

`weights` reads a checkpoint and keeps its nonzero weights (`matrix`: CSR where a matrix is
mostly zero, panels where it is not); `kernels` holds the decoder's arithmetic as compiled
loops; `engine` runs the forward pass and greedy decoding for a batch of independent rows.
docs/engine.md says what it computes, what it skips and why that is exact, and how it is
held to stock transformers.  `mixer_kernels` holds the mixers (the delta rule, attention),
`dense_kernels` the products of dense matrices kept in panels (`register_blocks` their
inner loops), `gate_families` the machine's gate rows taken as small dense products,
`fused` runs of sparse layers in one compiled call, `thread_parts` a step's pieces shared
over threads in numba's parallel loops; `numba_cache` keeps the kernels' on-disk cache true
to their source.
"""

from qwengpu.engine.numba_cache import drop_stale_cache

drop_stale_cache()

from qwengpu.engine.engine import SparseEngine  # noqa: E402
from qwengpu.engine.weights import CheckpointError, read_weights  # noqa: E402

__all__ = ["SparseEngine", "CheckpointError", "read_weights"]
