"""Write qwengpu/isa/table.py: the default machine's instruction set, read from its spec.

    python -m qwengpu.isa.generate            # after editing specs/qwengpu.hdl

The table is what `qwengpu.isa.machine.MachineIsa.from_design` reads from specs/qwengpu.hdl,
as plain Python data, so that importing `qwengpu.isa` needs no parse of the spec.
tests/isa/test_isa_table.py regenerates it in memory and fails when it differs from the file.
"""

from __future__ import annotations

import pprint
import sys
from pathlib import Path

from qwengpu.dsl.elaborate import load_design
from qwengpu.isa.machine import MachineIsa

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SPEC = ROOT / "specs" / "qwengpu.hdl"
TABLE = Path(__file__).with_name("table.py")
# The ISA does not depend on the machine's size: read it from the smallest instance.
SMALL = {"LANES": 1, "WARPS": 1}

HEADER = '''"""The default machine's instruction set, read from specs/qwengpu.hdl.

Written by `python -m qwengpu.isa.generate`: do not edit.  Edit the spec and run it again
(tests/isa/test_isa_table.py fails until the two agree).
"""

'''


def table_source(isa: MachineIsa) -> str:
    fields = tuple((f.name, f.low, f.width) for f in isa.fields.values())
    opcodes = tuple((o.name, o.value, o.syntax.text, tuple(sorted(o.classes)))
                    for o in sorted(isa.opcodes.values(), key=lambda o: o.value))
    enums = {name: members for name, members in isa.enums.items()}
    parts = [HEADER,
             f"FIELDS = {pprint.pformat(fields, width=96)}\n\n",
             f"OPCODES = {pprint.pformat(opcodes, width=96)}\n\n",
             f"ENUMS = {pprint.pformat(enums, width=96, sort_dicts=False)}\n\n",
             f"ENUM_TEXTS = {pprint.pformat(isa.enum_texts, width=96, sort_dicts=False)}\n\n",
             f"CLASSES = {pprint.pformat(isa.class_names, width=96)}\n"]
    return "".join(parts)


def default_isa_from_spec() -> MachineIsa:
    return MachineIsa.from_design(load_design(str(DEFAULT_SPEC), SMALL))


def main() -> int:
    TABLE.write_text(table_source(default_isa_from_spec()))
    print(f"{TABLE}: written from {DEFAULT_SPEC}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
