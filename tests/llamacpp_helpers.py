"""Running compiled checkpoints in llama.cpp from the tests (`qwengpu.llamacpp`).

llama.cpp comes from the optional `xllamacpp` wheel (`pip install -e ".[llamacpp]"`).  Where
it is missing, `skip_without_llamacpp` skips a test with what to install, and
`llamacpp_generate` answers None (so `compile_helpers.run_case` holds only the sparse engine
to stock transformers); with `QWENGPU_REQUIRE_LLAMACPP=1` (CI) both fail instead.

`run_case` asks llama.cpp for the first case it runs on each checkpoint (every compiled test
machine, each dtype: some forty seconds of the default run), and for every case with
`QWENGPU_LLAMACPP_EVERY_CASE=1` (three minutes more).

The engine runs on one thread: on a 2-core machine shared with other work, llama.cpp's
threads wait on each other at every operation (the ids never depend on the count).  One
engine is kept loaded at a time, for the checkpoint the last call named.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

_LOADED: dict = {}
_CHECKED: set[str] = set()


def llamacpp_installed() -> bool:
    return importlib.util.find_spec("xllamacpp") is not None and \
        importlib.util.find_spec("gguf") is not None


def _required() -> bool:
    return os.environ.get("QWENGPU_REQUIRE_LLAMACPP") == "1"


def skip_without_llamacpp() -> None:
    """Skip the calling test when llama.cpp's wheel is not installed (fail under CI)."""
    if llamacpp_installed():
        return
    message = ("llama.cpp is not installed: pip install -e \".[llamacpp]\" (the xllamacpp "
               "and gguf packages)")
    if _required():
        pytest.fail(message + " (QWENGPU_REQUIRE_LLAMACPP=1)")
    pytest.skip(message)


def llamacpp_engine(directory):
    """llama.cpp on the checkpoint at `directory` (its GGUF cached beside it), one thread."""
    from qwengpu.llamacpp import LlamaCppEngine

    key = str(Path(directory).resolve())
    if key not in _LOADED:
        for engine in _LOADED.values():
            engine.close()
        _LOADED.clear()
        _LOADED[key] = LlamaCppEngine.load(directory, threads=1)
    return _LOADED[key]


def llamacpp_generate(directory, prompt: list[int], max_new_tokens: int,
                      every_case: bool = False) -> list[int] | None:
    """What llama.cpp writes greedily after `prompt`; None where it is not installed, and
    (unless `every_case` or `QWENGPU_LLAMACPP_EVERY_CASE=1`) for a checkpoint it has
    already run."""
    if not llamacpp_installed():
        if _required():
            pytest.fail("llama.cpp is not installed (QWENGPU_REQUIRE_LLAMACPP=1)")
        return None
    key = str(Path(directory).resolve())
    every_case = every_case or os.environ.get("QWENGPU_LLAMACPP_EVERY_CASE") == "1"
    if key in _CHECKED and not every_case:
        return None
    _CHECKED.add(key)
    written, = llamacpp_engine(directory).generate([prompt], max_new_tokens)
    return written
