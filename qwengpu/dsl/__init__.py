"""The HDL: grammar, parser, elaboration and the reference interpreter.

    design = load_design("specs/qwengpu.hdl")    # parse + elaborate -> netlist.Design
    sim = Simulator(design)                       # compile the step once
    record = sim.step()                           # dict field -> int, or None when stopped

Modules: `hdl.lark` (grammar), `parser` (text -> `ast`), `elaborate` + `expressions`
(`ast` -> `netlist.Design`, with `values` for what a name stands for and `builder` creating the
nodes), `semantics` (the one table of operator meanings), `netlist` (the elaborated form the
compiler starts from), `interp` (the reference interpreter).
docs/hdl.md is the language reference.
"""

from qwengpu.dsl.elaborate import elaborate, elaborate_source, load_design
from qwengpu.dsl.interp import Simulator, compile_step, step_source
from qwengpu.dsl.netlist import Design, Node, format_design, verify_design
from qwengpu.dsl.parser import parse, parse_file

__all__ = ["Design", "Node", "Simulator", "compile_step", "elaborate", "elaborate_source",
           "format_design", "load_design", "parse", "parse_file", "step_source",
           "verify_design"]
