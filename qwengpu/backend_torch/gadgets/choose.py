"""Selection gadgets: `choose` (an input per selector value, the plan's `choose` ops and the
graph's `select` digits) and `priority` (if-else chains merged by `flatten-selects`).

An arm copies its input into `out` under its conditions: one AND step (`step.step_all`) per
value the arm's input can hold, writing that value; a constant arm is one step.  Values an
output group cannot hold (the high bytes staged above an element's width, always 0 by the
trace protocol) are not written.
"""

from __future__ import annotations

from typing import Sequence

from qwengpu.backend_torch.gadgets.core import MlpWriter, put
from qwengpu.backend_torch.gadgets.step import Input, step_all
from qwengpu.backend_torch.residual import Group


def _arm(writer, conditions, arm, out: Group) -> None:
    group, domain, value = arm
    if group is None:
        step_all(writer, conditions, put(out, value))
        return
    for v in domain:
        if v < out.count:     # staged bytes above an element's width are 0 (protocol)
            step_all(writer, conditions + [(group, {v}, domain)], put(out, v))


def choose(writer: MlpWriter, selector: Input, arms, default: Input | None, out: Group
           ) -> None:
    """The input of the arm whose value set holds the selector's value (`arms`: (values,
    input); a value in two arms goes to the first), else `default` (None: no default).
    One AND step per (arm, arm value)."""
    sel_group, sel_domain, sel_value = selector
    covered = set()
    for values, arm in arms:
        live = [v for v in values if v in sel_domain and v not in covered]
        covered.update(live)
        if not live:
            continue
        _arm(writer, [] if sel_group is None else [(sel_group, set(live), sel_domain)],
                  arm, out)
    rest = [v for v in sel_domain if v not in covered]
    if rest and default is not None:
        _arm(writer, [] if sel_group is None else [(sel_group, set(rest), sel_domain)],
                  default, out)


def priority(writer: MlpWriter, terms, conditions: Sequence[Input], arms: Sequence[Input],
             default: Input, out: Group) -> None:
    """The arm of the first condition whose term holds (`terms[k][v]`: whether condition k
    holds when its input is v), else `default`: each arm ANDs its condition with the
    false sets of every earlier one."""
    conds = list(conditions)
    arms = list(arms)
    previous_false: list = []
    blocked = False
    for term, cond, arm in zip(terms, conds, arms + [default]):
        group, domain, value = cond
        true = {v for v in domain if term[v]}
        false = set(domain) - true
        if group is None:
            if term[value]:
                if not blocked:
                    _arm(writer, list(previous_false), arm, out)
                return
            continue
        if true and not blocked:
            _arm(writer, previous_false + [(group, true, domain)], arm, out)
        if not false:
            blocked = True
            break
        previous_false.append((group, false, domain))
    if not blocked:
        _arm(writer, previous_false, default, out)
