"""llama.cpp for compiled checkpoints: the GGUF export and the engine that runs it.

    export_gguf("out/qwengpu", "out/qwengpu.gguf")        # hdlc export DIR --gguf OUT
    engine = LlamaCppEngine.load("out/qwengpu")             # GGUF cached beside the checkpoint
    ids, = engine.generate([prompt], max_new_tokens=5000, eos_id=4)

`export` writes a compiled or spliced checkpoint as a float32 `qwen35` GGUF with llama.cpp's
converter conventions (docs/llamacpp.md says where and why it departs from them); `vocab`
gives it the machine's vocabulary; `engine` runs it greedily in llama.cpp through the
`xllamacpp` wheel (`pip install -e ".[llamacpp]"`), which is optional: without it,
`require_xllamacpp` raises a `UserError` that says what to install.
"""

from qwengpu.llamacpp.export import ExportReport, export_gguf
from qwengpu.llamacpp.engine import LlamaCppEngine, cached_gguf, require_xllamacpp

__all__ = ["ExportReport", "export_gguf", "LlamaCppEngine", "cached_gguf", "require_xllamacpp"]
