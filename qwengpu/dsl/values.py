"""What names and expressions stand for while a spec is elaborated.

An HDL expression elaborates to one of three kinds of value:

- `Const`: an integer known at elaboration time, of no fixed width (parameters, constants,
  loop variables, literals, enum members).  It takes a width where it meets a signal, and it
  must fit there;
- `Signal`: a node of the netlist under construction, `width` bits wide;
- `ArrayValue`: nested Python lists of values (arrays of wires, rows of a memory).

A `Scope` maps names to these values or to declarations (`EnumBinding`, `TypeBinding`,
`FnBinding`, memories, registers), remembering where each name was defined so that a second
definition can say where the first one is.  `WireArray` collects the elements of an array as
`let x[i] = ...` statements define them, and becomes an `ArrayValue` once it is complete.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from typing import Union

from qwengpu.dsl import ast
from qwengpu.errors import HdlError, Location


@dataclass(frozen=True)
class Const:
    value: int


@dataclass(frozen=True)
class Signal:
    node: int
    width: int


@dataclass(frozen=True)
class ArrayValue:
    """Elements as nested lists: `items[i][j]` is element `[i][j]`."""
    items: list

    @property
    def shape(self) -> tuple[int, ...]:
        shape, level = [], self.items
        while isinstance(level, list):
            shape.append(len(level))
            level = level[0] if level else None
        return tuple(shape)

    def leaves(self) -> list:
        """All elements, row-major."""
        out, stack = [], [self.items]
        while stack:
            level = stack.pop()
            if isinstance(level, list):
                stack.extend(reversed(level))
            else:
                out.append(level)
        return out


Value = Union[Const, Signal, ArrayValue]


@dataclass(frozen=True)
class EnumBinding:
    name: str
    width: int
    members: dict[str, int]


@dataclass(frozen=True)
class TypeBinding:
    name: str
    width: int


@dataclass(frozen=True)
class FnBinding:
    decl: ast.FnDecl


@dataclass
class WireArray:
    """An array wire whose elements `let x[i] = ...` define one at a time."""

    name: str
    loc: Location
    width: int | None = None
    elements: dict[tuple[int, ...], Signal] = field(default_factory=dict)
    frozen_at: Location | None = None

    def define(self, index: tuple[int, ...], signal: Signal, loc: Location) -> None:
        if self.frozen_at is not None:
            raise HdlError(f"{self.name}{_index_text(index)} is defined after {self.name} was "
                           f"used as a whole (at {self.frozen_at})", loc)
        if self.elements and len(index) != len(next(iter(self.elements))):
            raise HdlError(f"{self.name} has {len(next(iter(self.elements)))} dimensions, "
                           f"not {len(index)}", loc)
        if index in self.elements:
            raise HdlError(f"{self.name}{_index_text(index)} is already defined", loc)
        if self.width is not None and signal.width != self.width:
            raise HdlError(f"width mismatch: {self.name}{_index_text(index)} is "
                           f"u{signal.width} but earlier elements are u{self.width}", loc)
        self.width = signal.width
        self.elements[index] = signal

    def shape(self) -> tuple[int, ...]:
        """The array's shape; `HdlError` when some element inside the box is missing."""
        dims = len(next(iter(self.elements)))
        shape = tuple(max(index[d] for index in self.elements) + 1 for d in range(dims))
        for index in product(*(range(n) for n in shape)):
            if index not in self.elements:
                raise HdlError(f"{self.name}{_index_text(index)} is never defined (the "
                               f"array has elements up to {self.name}"
                               f"{_index_text(tuple(n - 1 for n in shape))})", self.loc)
        return shape

    def as_value(self, loc: Location) -> ArrayValue:
        shape = self.shape()
        if self.frozen_at is None:
            self.frozen_at = loc

        def build(prefix: tuple[int, ...]):
            if len(prefix) == len(shape):
                return self.elements[prefix]
            return [build(prefix + (i,)) for i in range(shape[len(prefix)])]

        return ArrayValue(build(()))


def _index_text(index: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in index)


class Scope:
    """Names visible at one level (global, pipeline, stage, function, loop iteration)."""

    def __init__(self, parent: "Scope | None", kind: str):
        self.parent = parent
        self.kind = kind
        self.names: dict[str, tuple[object, Location]] = {}

    def _entry(self, name: str) -> tuple[object, Location] | None:
        scope = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def lookup(self, name: str):
        entry = self._entry(name)
        return entry[0] if entry else None

    def where(self, name: str) -> Location | None:
        entry = self._entry(name)
        return entry[1] if entry else None

    def define(self, name: str, binding: object, loc: Location,
               seen_from: "Scope | None" = None) -> None:
        """Bind `name` here; it must not be visible yet from here or from `seen_from` (an
        inner scope defining into this one), so no name ever shadows another."""
        previous = (seen_from or self).where(name)
        if previous is not None:
            raise HdlError(f"{name} is already defined (at {previous})", loc)
        self.names[name] = (binding, loc)

    def nearest(self, *kinds: str) -> "Scope":
        scope = self
        while scope.kind not in kinds:
            scope = scope.parent
        return scope
