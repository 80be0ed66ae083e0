"""Elaboration: a parsed spec becomes a `netlist.Design` (state + one step of logic).

This is where the HDL's static meaning lives: parameters (and their overrides) and constants
are computed, types and enums resolved, `for` loops unrolled, functions inlined, arrays
collected, stages elaborated in order, state writes, record fields and the stop condition
gathered.  Expressions are handled by the mixed-in `ExpressionElaborator`.  Every mistake is an
`HdlError` at the offending source: unknown names, duplicate definitions, width mismatches,
writes to things that are not state, failing `assert`s (how a spec rejects bad parameters).

Names never shadow one another.  Scopes nest as: global (declarations) > pipeline (the `out`s
of the stages elaborated so far) > stage > loop iteration; a function body sees only the
global scope and its parameters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from qwengpu.dsl import ast
from qwengpu.dsl.builder import NetlistBuilder
from qwengpu.dsl.expressions import ExpressionElaborator
from qwengpu.dsl.netlist import (Design, MemorySpec, PipelineRegister, RecordField,
                                 RegisterSpec, StageSpec, StateWrite)
from qwengpu.dsl.parser import parse, parse_file
from qwengpu.dsl.values import (ArrayValue, Const, EnumBinding, FnBinding, Scope, Signal,
                                TypeBinding, WireArray)
from qwengpu.errors import HdlError, Location

MAX_LOOP_ITERATIONS = 1 << 16
MAX_MEMORY_ELEMENTS = 1 << 24


class Elaborator(ExpressionElaborator):
    def __init__(self, spec: ast.Spec, overrides: Mapping[str, int] | None = None):
        self.spec = spec
        self.design = Design(name=Path(spec.file).stem, file=spec.file)
        self.builder = NetlistBuilder(self.design)
        self.globals = Scope(None, "global")
        self.pipeline = Scope(self.globals, "pipeline")
        self.scope = self.globals
        self.overrides = dict(overrides or {})
        self.mode: str | None = None            # "stage" or "function" while in a body
        self.name_prefix: list[str] = []
        self.loop_vars: list[tuple[str, int]] = []
        self.call_stack: list[str] = []
        self.stage_outputs: list[str] = []
        self.stage_locs: dict[str, Location] = {}
        self.record_locs: dict[str, Location] = {}
        self.stop_loc: Location | None = None
        self.machine_loc: Location | None = None

    def run(self) -> Design:
        for item in self.spec.items:
            getattr(self, "_decl_" + type(item).__name__.lower())(item)
        record = self.design.record
        for end, which in ((0, "first"), (-1, "last")):
            if record and record[end].when is not None:
                raise HdlError(f"record field {record[end].name} is optional, but the {which} "
                               "field of a record must always be present (the first starts a "
                               "record, the last closes it and commits its writes)",
                               record[end].loc)
        if self.overrides:
            unknown = ", ".join(sorted(self.overrides))
            known = ", ".join(self.design.params) or "none"
            raise HdlError(f"bad parameter: the spec has no parameter {unknown} "
                           f"(its parameters: {known})", Location(self.spec.file))
        return self.design

    # ---- declarations

    def _decl_machinedecl(self, d: ast.MachineDecl) -> None:
        if self.machine_loc is not None:
            raise HdlError(f"the machine is already named (at {self.machine_loc})", d.loc)
        self.machine_loc = d.loc
        self.design.name = d.name

    def _decl_paramdecl(self, d: ast.ParamDecl) -> None:
        value = self.constant(d.value, f"parameter {d.name}")
        self.globals.define(d.name, Const(value), d.loc)
        if d.name in self.overrides:
            value = int(self.overrides.pop(d.name))
            self.globals.names[d.name] = (Const(value), d.loc)
        self.design.params[d.name] = value
        if d.doc:
            self.design.param_docs[d.name] = d.doc

    def _decl_constdecl(self, d: ast.ConstDecl) -> None:
        value = self.constant(d.value, f"constant {d.name}")
        self.globals.define(d.name, Const(value), d.loc)
        self.design.constants[d.name] = value

    def _decl_typedecl(self, d: ast.TypeDecl) -> None:
        self.globals.define(d.name, TypeBinding(d.name, self.resolve_width(d.type)), d.loc)

    def _decl_enumdecl(self, d: ast.EnumDecl) -> None:
        width = self.resolve_width(d.type)
        members: dict[str, int] = {}
        by_value: dict[int, str] = {}
        next_value = 0
        for member in d.members:
            value = next_value if member.value is None else self.constant(
                member.value, f"{d.name}.{member.name}")
            if member.name in members:
                raise HdlError(f"{d.name}.{member.name} is already defined", member.loc)
            if not 0 <= value < (1 << width):
                raise HdlError(f"{d.name}.{member.name} = {value} does not fit in u{width}",
                               member.loc)
            if value in by_value:
                raise HdlError(f"{d.name}.{member.name} has the same value ({value}) as "
                               f"{d.name}.{by_value[value]}", member.loc)
            members[member.name] = value
            by_value[value] = member.name
            next_value = value + 1
        self.globals.define(d.name, EnumBinding(d.name, width, members), d.loc)
        self.design.enums[d.name] = members
        self.design.enum_texts[d.name] = {m.name: m.text for m in d.members if m.text is not None}
        self.design.enum_locs[d.name] = {m.name: m.loc for m in d.members}

    def _decl_fndecl(self, d: ast.FnDecl) -> None:
        seen: set[str] = set()
        for param in d.params:
            if param.name in seen:
                raise HdlError(f"parameter {param.name} of {d.name} is already defined",
                               param.loc)
            seen.add(param.name)
        returns = [s for s in d.body if isinstance(s, ast.Return)]
        if not d.body or not isinstance(d.body[-1], ast.Return) or len(returns) != 1:
            raise HdlError(f"the body of {d.name} must end with one `return`", d.loc)
        self.globals.define(d.name, FnBinding(d), d.loc)

    def _decl_memorydecl(self, d: ast.MemoryDecl) -> None:
        shape = []
        for dim in d.dims:
            size = self.constant(dim, f"a dimension of {d.name}")
            if size < 1:
                raise HdlError(f"a dimension of {d.name} must be at least 1, not {size}",
                               dim.loc)
            shape.append(size)
        memory = MemorySpec(d.name, tuple(shape), self.resolve_width(d.type), d.doc, d.loc)
        if memory.size > MAX_MEMORY_ELEMENTS:
            raise HdlError(f"{d.name} has {memory.size} elements; at most "
                           f"{MAX_MEMORY_ELEMENTS} are supported", d.loc)
        self.globals.define(d.name, memory, d.loc)
        self.design.memories[d.name] = memory

    def _decl_registerdecl(self, d: ast.RegisterDecl) -> None:
        width = self.resolve_width(d.type)
        reset = 0
        if d.reset is not None:
            reset = self.fit_constant(self.constant(d.reset, f"the reset value of {d.name}"),
                                      width, d.reset.loc, f"the reset value of {d.name}")
        register = RegisterSpec(d.name, width, reset, d.doc, d.loc)
        self.globals.define(d.name, register, d.loc)
        self.design.registers[d.name] = register

    def _decl_assert(self, d: ast.Assert) -> None:
        self._stmt_assert(d)

    def _decl_stagedecl(self, d: ast.StageDecl) -> None:
        if d.name in self.stage_locs:
            raise HdlError(f"stage {d.name} is already defined (at {self.stage_locs[d.name]})",
                           d.loc)
        self.stage_locs[d.name] = d.loc
        self.builder.stage = d.name
        self.mode, self.name_prefix, self.stage_outputs = "stage", [d.name], []
        stage_scope = Scope(self.pipeline, "stage")
        self._block(d.body, stage_scope)
        self._check_arrays(stage_scope)
        outputs = []
        for name in self.stage_outputs:
            binding = self.pipeline.lookup(name)
            if isinstance(binding, WireArray):
                outputs.append(PipelineRegister(name, binding.shape(), binding.width))
            elif isinstance(binding, ArrayValue):
                leaves = binding.leaves()
                outputs.append(PipelineRegister(name, binding.shape, leaves[0].width))
            else:
                outputs.append(PipelineRegister(name, (), binding.width))
        self.design.stages.append(StageSpec(d.name, tuple(outputs), d.loc))
        self.mode, self.name_prefix = None, []
        self.builder.stage = None

    @staticmethod
    def _check_arrays(scope: Scope) -> None:
        for binding, _ in scope.names.values():
            if isinstance(binding, WireArray):
                binding.shape()

    # ---- statements

    def _block(self, statements, scope: Scope) -> None:
        saved, self.scope = self.scope, scope
        try:
            for statement in statements:
                getattr(self, "_stmt_" + type(statement).__name__.lower())(statement)
        finally:
            self.scope = saved

    def _wire_name(self, name: str, index: tuple[int, ...] = ()) -> str:
        text = ".".join(self.name_prefix + [name])
        if index:
            return text + "".join(f"[{i}]" for i in index)
        if self.loop_vars:
            text += f"[{_loop_text(self.loop_vars)}]"
        return text

    def _stmt_let(self, s: ast.Let) -> None:
        name, loc = s.target.name, s.target.loc
        if s.is_out and self.mode != "stage":
            raise HdlError("`out` (a pipeline register) is only allowed in a stage", s.loc)
        width = self.resolve_width(s.type) if s.type else None
        value = self.expr(s.value, width)
        if width is not None:
            value = self.fit(value, width, s.value.loc, f"the value of {name}")
        if s.is_out and isinstance(value, Const):
            raise HdlError(f"cannot tell the width of pipeline register {name} (constant "
                           f"{value.value}); give it a type", s.value.loc)
        if not s.target.indices:
            owner = self.pipeline if s.is_out else self.scope
            owner.define(name, value, loc, seen_from=self.scope)
            if isinstance(value, Signal):
                self.builder.name(value, self._wire_name(name))
            if s.is_out:
                self.stage_outputs.append(name)
            return
        index = tuple(self._array_index(i) for i in s.target.indices)
        if not isinstance(value, Signal):
            raise HdlError("an array element must be a scalar signal"
                           + (f"; give {name} a type" if isinstance(value, Const) else ""),
                           s.value.loc)
        array = self.scope.lookup(name)
        if array is None:
            array = WireArray(name, loc)
            owner = self.pipeline if s.is_out else self.scope.nearest("stage", "function")
            owner.define(name, array, loc, seen_from=self.scope)
            if s.is_out:
                self.stage_outputs.append(name)
        elif not isinstance(array, WireArray) or (s.is_out and name not in self.stage_outputs):
            raise HdlError(f"{name} is already defined (at {self.scope.where(name)})", loc)
        array.define(index, value, loc)
        self.builder.name(value, self._wire_name(name, index))

    _stmt_out = _stmt_let

    def _array_index(self, e: ast.Expr) -> int:
        value = self.constant(e, "the index of an array element being defined")
        if value < 0:
            raise HdlError(f"an array index cannot be negative ({value})", e.loc)
        return value

    def _stmt_write(self, s: ast.Write) -> None:
        if self.mode != "stage":
            raise HdlError("a function cannot write state", s.loc)
        target = self.scope.lookup(s.target.name)
        if not isinstance(target, (MemorySpec, RegisterSpec)):
            what = "unknown name" if target is None else "not a state element"
            raise HdlError(f"cannot write {s.target.name}: {what}; only memories and "
                           f"registers can be written with <=", s.target.loc)
        dims = len(target.shape) if isinstance(target, MemorySpec) else 0
        if len(s.target.indices) != dims:
            raise HdlError(f"{s.target.name} needs {dims} ind{'ex' if dims == 1 else 'ices'} "
                           f"to be written, got {len(s.target.indices)}", s.target.loc)
        index = []
        for dim, index_expr in enumerate(s.target.indices):
            value = self.expr(index_expr)
            if isinstance(value, ArrayValue):
                raise HdlError("an index cannot be an array", index_expr.loc)
            index.append(self._memory_index(target, dim, value, index_expr.loc))
        data = self.signal(s.value, target.width, f"the value written to {s.target.name}")
        if s.enable is None:
            enable = self.builder.constant(1, 1, s.loc)
        else:
            enable = self.expr(s.enable)
            if isinstance(enable, Const):
                if not enable.value:
                    return
                enable = self.builder.constant(1, 1, s.loc)
            enable = self._condition(enable, s.enable.loc, "a `when` condition")
        self.design.writes.append(StateWrite(target.name, tuple(i.node for i in index),
                                             data.node, enable.node, s.loc))

    def _stmt_emit(self, s: ast.Emit) -> None:
        if self.mode != "stage":
            raise HdlError("a function cannot emit record fields", s.loc)
        for number, field in enumerate(s.fields):
            value = self.expr(field.value)
            if isinstance(value, Const):
                raise HdlError(f"cannot tell the width of record field {field.name} (constant "
                               f"{value.value}); give it a type, e.g. u8({value.value})",
                               field.value.loc)
            if isinstance(value, ArrayValue):
                if len(value.shape) != 1:
                    raise HdlError(f"record field {field.name}: only one-dimensional arrays "
                                   f"can be emitted", field.loc)
                named = [(f"{field.name}{i}", v) for i, v in enumerate(value.items)]
                paired = field.packed or number + 1 < len(s.fields) and \
                    s.fields[number + 1].packed
                if paired:
                    raise HdlError(f"record field {field.name} is an array: `emit (a, b)` "
                                   "pairs two single fields", field.loc)
            else:
                named = [(field.name, value)]
            conditions = self._emit_conditions(field, len(named))
            for (name, signal), (when, bit) in zip(named, conditions):
                if name in self.record_locs:
                    raise HdlError(f"record field {name} is already emitted "
                                   f"(at {self.record_locs[name]})", field.loc)
                self.record_locs[name] = field.loc
                packed = field.packed and self._pair_fits(self.design.record[-1], name,
                                                          signal.width, field)
                self.design.record.append(RecordField(name, signal.node, signal.width,
                                                      field.loc, when, bit, packed))

    @staticmethod
    def _pair_fits(first: RecordField, name: str, width: int, field: ast.EmitField) -> bool:
        """`emit (a, b)`: one token holds a in its low hex digit and b in its high one, so
        both must be single fields that every record has; a pair wider than 4 bits a field
        (`active`, `exec` of an 8-lane machine) stays two fields, so that a spec holds for
        every value of its parameters."""
        for what, when, loc in ((first.name, first.when, first.loc),
                                (name, field.when, field.loc)):
            if when is not None:
                raise HdlError(f"`emit ({first.name}, {name})`: the two fields of one token "
                               f"must be in every record, but {what} is present `when "
                               f"{when}`", loc)
        return first.width <= 4 and width <= 4

    def _emit_conditions(self, field: ast.EmitField, elements: int
                         ) -> list[tuple[str | None, int | None]]:
        """(condition field, bit) per element of an emitted field: `when F` names a field
        emitted before, itself always present; an array of n elements with an n-bit F takes
        bit i for element i, anything else is present when F != 0."""
        if field.when is None:
            return [(None, None)] * elements
        known = {f.name: f for f in self.design.record}
        condition = known.get(field.when)
        if condition is None:
            later = " (a field cannot depend on itself or on a later one)" \
                if field.when in [field.name] + [f"{field.name}{i}" for i in range(elements)] \
                else ""
            raise HdlError(f"record field {field.name} is present `when {field.when}`, but "
                           f"{field.when} is not a record field emitted before it{later}; "
                           "the model decides what comes next from the fields it has written",
                           field.when_loc)
        if condition.when is not None:
            raise HdlError(f"record field {field.name} is present `when {field.when}`, but "
                           f"{field.when} is itself optional (when {condition.condition_text()}); a "
                           "condition must be a field every record holds", field.when_loc)
        if elements > 1 and condition.width == elements:
            return [(field.when, i) for i in range(elements)]
        return [(field.when, 0 if condition.width == 1 else None)] * elements

    def _stmt_stop(self, s: ast.Stop) -> None:
        if self.mode != "stage":
            raise HdlError("a function cannot stop the machine", s.loc)
        if self.stop_loc is not None:
            raise HdlError(f"the machine already has a stop condition (at {self.stop_loc})",
                           s.loc)
        condition = self.expr(s.condition)
        if isinstance(condition, Const):
            condition = self.builder.constant(1 if condition.value else 0, 1, s.loc)
        condition = self._condition(condition, s.condition.loc, "a stop condition")
        self.stop_loc = s.loc
        self.design.stop = condition.node

    def _stmt_for(self, s: ast.For) -> None:
        start = self.constant(s.start, "the start of a for range")
        stop = self.constant(s.stop, "the end of a for range")
        if stop - start > MAX_LOOP_ITERATIONS:
            raise HdlError(f"for loop of {stop - start} iterations; at most "
                           f"{MAX_LOOP_ITERATIONS} are supported", s.loc)
        if self.scope.where(s.var) is not None:
            raise HdlError(f"{s.var} is already defined (at {self.scope.where(s.var)})", s.loc)
        for value in range(start, stop):
            iteration = Scope(self.scope, "loop")
            iteration.define(s.var, Const(value), s.loc)
            self.loop_vars.append((s.var, value))
            self.builder.loop = _loop_text(self.loop_vars)
            try:
                self._block(s.body, iteration)
            finally:
                self.loop_vars.pop()
                self.builder.loop = _loop_text(self.loop_vars)

    def _stmt_assert(self, s: ast.Assert) -> None:
        holds = self.constant(s.condition, "an assert condition")
        if not holds:
            raise HdlError(s.message or "assertion failed", s.loc)

    def _stmt_return(self, s: ast.Return) -> None:
        raise HdlError("`return` is only allowed as the last statement of a function", s.loc)

    # ---- functions

    def call_function(self, decl: ast.FnDecl, call: ast.Call):
        if decl.name in self.call_stack:
            raise HdlError(f"{decl.name} calls itself; functions are inlined, so recursion "
                           f"is not allowed", call.loc)
        if len(call.args) != len(decl.params):
            raise HdlError(f"{decl.name} takes {len(decl.params)} argument"
                           f"{'s' if len(decl.params) != 1 else ''}, got {len(call.args)}",
                           call.loc)
        scope = Scope(self.globals, "function")
        for param, arg in zip(decl.params, call.args):
            width = self.resolve_width(param.type) if param.type else None
            value = self.expr(arg, width)
            if width is not None:
                value = self.fit(value, width, arg.loc, f"argument {param.name} of {decl.name}")
            scope.define(param.name, value, param.loc)
        saved = (self.mode, self.name_prefix, self.loop_vars, self.scope)
        self.mode = "function"
        self.name_prefix = self.name_prefix + [decl.name]
        self.loop_vars = list(self.loop_vars)
        self.call_stack.append(decl.name)
        try:
            self._block(decl.body[:-1], scope)
            self.scope = scope
            result_width = self.resolve_width(decl.result)
            value = self.expr(decl.body[-1].value, result_width)
            result = self.fit(value, result_width, decl.body[-1].value.loc,
                              f"the result of {decl.name}")
            self._check_arrays(scope)
        finally:
            self.call_stack.pop()
            self.mode, self.name_prefix, self.loop_vars, self.scope = saved
        return result


def elaborate(spec: ast.Spec, overrides: Mapping[str, int] | None = None) -> Design:
    """Elaborate a parsed spec; `overrides` replace parameter values (`{"LANES": 8}`)."""
    return Elaborator(spec, overrides).run()


def elaborate_source(source: str, file: str = "<spec>",
                     overrides: Mapping[str, int] | None = None) -> Design:
    """Parse and elaborate spec text (handy in tests)."""
    return elaborate(parse(source, file), overrides)


def load_design(path: str | Path, overrides: Mapping[str, int] | None = None) -> Design:
    """Parse and elaborate a spec file."""
    return elaborate(parse_file(path), overrides)


def _loop_text(loop_vars: list[tuple[str, int]]) -> str | None:
    """The iterations of the loops being elaborated, as wire names show them (`k=1,lane=0`)."""
    return ",".join(f"{var}={value}" for var, value in loop_vars) or None
