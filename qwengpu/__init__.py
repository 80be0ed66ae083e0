"""QwenGPU: a deterministic SIMT GPU compiled into the weights of a Qwen3.5 model.

Subpackages: `dsl` (the HDL: grammar, elaboration, reference interpreter), `isa` (the
instruction set), `ptx` (nvcc driver and PTX loader), `passes` (dataflow graph and its
passes), `backend_torch` (gadgets, scheduling, checkpoint writer), `runtime` (launches on the
interpreter and on the model), `commands` (one module per `hdlc` subcommand).
"""

__version__ = "0.1.0"
