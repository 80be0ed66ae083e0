"""The README's main job as argument lists: tests/engine/test_whole_machine.py runs them, and
tests/test_readme.py holds the README's set-up command to them."""

COMPILE = ["compile", "specs/qwengpu.hdl", "--target", "min"]
OUTPUT = "out/qwengpu"
RUN = ["run", "examples/vector_add/launch.json", "--backend", "model", "--check", "--trace"]
