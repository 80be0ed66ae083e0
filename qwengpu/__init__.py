"""QwenGPU: a deterministic SIMT GPU compiled into the weights of a Qwen3.5 model.

Packages, from the bottom layer up (tests/test_architecture.py holds the layers):

- `errors` (module): user errors with a location, printed as `file:line:col: error: ...`;
- `dsl`: the HDL: grammar, parser, elaboration and the reference interpreter;
- `isa`: the QwenGPU instruction set: opcodes, fields, encoding, assembler text;
- `ir`: the compiler's dataflow graph over networkx, its checker and text form;
- `passes`: the named passes over that graph (`hdlc passes` lists them);
- `trace`: the token vocabulary of a compiled machine, prompts and trace decoding;
- `ptx`: the nvcc driver and the PTX loader (CUDA kernels to machine code, docs/ptx.md);
- `engine`: the sparse engine that runs a compiled checkpoint from its own tensors;
- `llamacpp`: the GGUF export and the llama.cpp engine, held to stock transformers;
- `backend_torch`: gadgets, the schedule into 45 layers and the checkpoint writer;
- `runtime`: launches on the interpreter and on the model, `--check`, decoding of traces;
- `compiler` (module): the compile pipeline as one list of named steps;
- `splice`: the compiled machine put in front of a Qwen3.5 checkpoint's own layers;
- `commands`: one module per `hdlc` subcommand, and `cli` (module): the command line.
"""

import os

# How long a GNU OpenMP thread spins for its next piece of work before it sleeps.  OpenMP
# reads it once, when it is first loaded, and torch loads it on import: so it is set here,
# before any module of the package imports torch.  Its default, 300,000 spins, keeps the
# engine's idle threads on the cores between a step's pieces (docs/engine.md, "Threads").
# A value the user sets is kept.
os.environ.setdefault("GOMP_SPINCOUNT", "1000")

__version__ = "0.1.0"
