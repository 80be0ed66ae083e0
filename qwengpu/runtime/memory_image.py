"""A launch's initial memory words: its buffers (integers, or binary32 values written
`{"f32": [...]}`, docs/launch.md) and the kernel's initialised `.global`/`.const` variables."""

from __future__ import annotations

import json

from qwengpu.errors import LaunchError
from qwengpu.ptx import ir
from qwengpu.runtime.float_words import f32_bits, is_f32_value


def f32_buffer_problem(name: str, values) -> str | None:
    """What is wrong with a launch file's buffer that is not a list of integers: nothing for
    `{"f32": [...]}` of numbers and the names in NAMED."""
    if not (isinstance(values, dict) and list(values) == ["f32"]
            and isinstance(values["f32"], list)):
        return f'buffer {name!r} must be a list of integers, or {{"f32": [numbers]}}'
    for value in values["f32"]:
        if not is_f32_value(value):
            return (f"buffer {name!r} holds {json.dumps(str(value))}, which is not a number, "
                    '"nan", "inf" or "-inf"')
    return None


def buffer_words(buffers: dict) -> tuple[dict[str, list[int]], set[str]]:
    """A launch's buffers as words (f32 buffers as their values' bits), and the names of the
    f32 ones."""
    words, floats = {}, set()
    for name, values in buffers.items():
        if isinstance(values, dict):
            words[name] = [f32_bits(value) for value in values["f32"]]
            floats.add(name)
        else:
            words[name] = values
    return words, floats


def variable_words(variable: ir.Variable) -> list[int]:
    """The initial memory words of a `.global`/`.const` variable (little-endian bytes)."""
    size = -(-variable.size_bytes // 4) * 4
    data = bytearray(size)
    element = variable.element_bytes
    for index, value in enumerate(variable.initializer or ()):
        if not isinstance(value, int):
            raise LaunchError(f"{variable.name} is initialised with an address, which is not "
                              "supported", variable.loc)
        start = index * element
        if start + element > variable.size_bytes:
            raise LaunchError(f"{variable.name} has more initial values than elements",
                              variable.loc)
        data[start:start + element] = (value & ((1 << (8 * element)) - 1)).to_bytes(
            element, "little")
    return [int.from_bytes(data[i:i + 4], "little") for i in range(0, size, 4)]
