"""Routines the loader writes once per kernel and reaches from several places: one body, a branch in.

A float multiply, division or square root is some 50 to 70 machine instructions (docs/fpu.md),
and a program holds 128.  Inlined at every use, a kernel could hold two multiplies; shared,
it holds one body and a few instructions a use.  The machine has no call instruction and no
return address, so a call is branches (docs/ptx.md, "Shared routines"):

    site k:   mov  arg0, a;  mov  arg1, b;  mov  site, k;  bra  routine
              return_k:  mov  t, result          (the caller's own copy)
    routine:  the body, from arg0 and arg1 into result
              setp.eq p, site, 1;  @p bra return_1;  ...;  bra return_n

Every lane follows its own path (the machine issues a warp's lowest PC first), so lanes that
call from different places, or at different times, each return where they came from.  The
routine's registers are ordinary virtual registers: liveness sees the branches, so a value
the caller keeps across a call is live through the body, and the allocator keeps the two
apart.  A routine used once in a kernel is inlined instead (`call`'s `shared=False`).  The
bodies go after the kernel's last instruction, behind an `exit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from qwengpu.isa import Cmp, Op
from qwengpu.ptx import ir
from qwengpu.ptx.vcode import LabelRef, Source, VInstr, VReg

Body = Callable[..., Source]          # body(sel, *arguments) -> result, emitted through sel


@dataclass
class SharedRoutine:
    label: str
    body: Body
    arguments: list[VReg]
    result: VReg
    site: VReg                        # the calling site's number, 1 up
    origin: ir.Instruction            # the first use: where the body's lines point
    returns: list[str] = field(default_factory=list)


def call(sel, name: str, body: Body, arguments: list[Source], shared: bool) -> Source:
    """`body(sel, *arguments)`, inlined, or through the kernel's one shared copy of it."""
    if not shared or all(isinstance(argument, int) for argument in arguments):
        return body(sel, *arguments)
    routine = sel.routines.get(name)
    if routine is None:
        routine = SharedRoutine(label=sel.new_label(name), body=body,
                                arguments=[sel.temp() for _ in arguments], result=sel.temp(),
                                site=sel.temp(), origin=sel.ins)
        sel.routines[name] = routine
    routine.returns.append(sel.new_label(f"{name}_return"))
    with sel.unguarded():
        for argument, register in zip(arguments, routine.arguments):
            sel.move(argument, register)
        sel.move(len(routine.returns), routine.site)
        sel.emit(Op.BRA, imm=LabelRef(routine.label))
        sel.place_label(routine.returns[-1])
        return sel.move(routine.result, sel.temp())


def uses(kernel: ir.Kernel, kind_of: Callable[[ir.Instruction], str | None], name: str) -> int:
    """How many of the kernel's instructions `kind_of` names `name`."""
    return sum(1 for statement in kernel.body
               if isinstance(statement, ir.Instruction) and kind_of(statement) == name)


def emit_routines(sel) -> None:
    """Each shared routine's body and return dispatch, after the kernel's code."""
    if not sel.routines:
        return
    last = next((item for item in reversed(sel.code) if isinstance(item, VInstr)), None)
    if last is None or last.op != Op.EXIT or last.guarded:
        sel.emit(Op.EXIT)
    for routine in sel.routines.values():
        sel.ins = routine.origin
        with sel.unguarded():
            sel.place_label(routine.label)
            sel.move(routine.body(sel, *routine.arguments), routine.result)
            for number, label in enumerate(routine.returns[:-1], 1):
                here = sel.compare(Cmp.EQ, routine.site, number)
                sel.emit(Op.BRA, imm=LabelRef(label), guard=(here, False))
            sel.emit(Op.BRA, imm=LabelRef(routine.returns[-1]))
