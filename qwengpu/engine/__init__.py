"""The sparse engine: runs a compiled Qwen3.5 checkpoint from its own tensors, fast.

`weights` reads a checkpoint and keeps its nonzero weights (CSR where a matrix is mostly
zero); `kernels` holds the decoder's arithmetic as compiled loops; `engine` runs the forward
pass and greedy decoding for a batch of independent rows.  docs/engine.md says what it
computes, what it skips and why that is exact, and how it is held to stock transformers.
"""

from qwengpu.engine.engine import SparseEngine
from qwengpu.engine.weights import CheckpointError, read_weights

__all__ = ["SparseEngine", "CheckpointError", "read_weights"]
