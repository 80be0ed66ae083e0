"""The `hdlc` command line: one subcommand per module in `qwengpu.commands`.

Each command module exposes `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`.
User mistakes (`UserError`) print located messages and exit 1, as does a disk or quota that
fills up while writing; internal errors print a traceback and exit 70.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import sys
import traceback

from qwengpu.errors import UserError

COMMAND_MODULES = ["check", "sim", "run", "compile", "splice", "generate", "graph", "passes", "launch",
                   "decode", "export"]


def _load_commands():
    for name in COMMAND_MODULES:
        yield importlib.import_module(f"qwengpu.commands.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hdlc", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for module in _load_commands():
        command = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(command)
        command.set_defaults(handler=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except UserError as error:
        print(error.render(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # noqa: BLE001 - a compiler bug: show everything
        if _out_of_space(error):
            print(f"error: no space left to write the output ({error}); free some space or "
                  "write elsewhere", file=sys.stderr)
            return 1
        traceback.print_exc()
        print("hdlc: internal error (a bug in the compiler, not in your input)", file=sys.stderr)
        return 70


def _out_of_space(error: Exception) -> bool:
    """A full disk or quota, from Python's own writes or a library's (safetensors reports
    the OS error in its message)."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return f"(os error {errno.ENOSPC})" in str(error) or f"(os error {errno.EDQUOT})" in str(error)


if __name__ == "__main__":
    sys.exit(main())
