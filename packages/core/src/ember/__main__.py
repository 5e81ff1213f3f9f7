"""Ember's command line: ``python -m ember backends`` (also the ``ember`` console script).

``ember backends`` lists every installed backend with its distribution, version, devices,
element types and status; a broken plugin is listed with its error and never hides the others.
Listing a backend loads it (and so imports its array library) to ask for its devices.

Output is a table drawn with ``rich`` when standard output is a terminal and rich is installed
(it is optional, imported only here), plain text otherwise; ``--json`` prints JSON. The exit
status is 0 when every backend is ``ok``, 1 when one is broken, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .backend import BackendInfo

__all__ = ["main"]

_COLUMNS = ("name", "distribution", "version", "status", "devices", "dtypes")


def _cells(info: BackendInfo) -> list[str]:
    return [
        info.name,
        info.distribution,
        info.version,
        info.status,
        ", ".join(info.devices) or "-",
        ", ".join(info.dtypes) or "-",
    ]


def format_plain(infos: Sequence[BackendInfo]) -> str:
    """The backends as an aligned plain-text table; each error on an indented line below its row."""
    if not infos:
        from ._install import install_command

        return f"no Ember backend is installed; install one, e.g. `{install_command('ember-backend-numpy')}`.\n"
    rows = [list(_COLUMNS)] + [_cells(i) for i in infos]
    widths = [max(len(r[c]) for r in rows) for c in range(len(_COLUMNS))]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if k and infos[k - 1].error:
            lines.append(f"    error: {infos[k - 1].error}")
    return "\n".join(lines) + "\n"


def _print_rich(infos: Sequence[BackendInfo], out: TextIO) -> bool:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        return False
    errors = any(i.error for i in infos)
    table = Table(title="Ember backends")
    for col in _COLUMNS:
        table.add_column(col, overflow="fold", no_wrap=col in ("name", "distribution", "version", "status"))
    if errors:
        table.add_column("error", overflow="fold")
    for info in infos:
        style = None if info.status == "ok" else "red"
        table.add_row(*_cells(info), *([info.error] if errors else []), style=style)
    Console(file=out).print(table)
    return True


def _backends(args: argparse.Namespace, out: TextIO) -> int:
    from .backend import backends

    infos = backends()
    if args.json:
        out.write(json.dumps([asdict(i) for i in infos], indent=2) + "\n")
    elif not (infos and out.isatty() and _print_rich(infos, out)):
        out.write(format_plain(infos))
    return 0 if all(i.status == "ok" for i in infos) else 1


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="ember", description="Ember command line.")
    parser.add_argument("--version", action="version", version=f"ember {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser(
        "backends",
        help="list installed backends: distribution, version, devices, dtypes, status",
        description="List every installed backend. Exit status 1 if one of them is broken.",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=_backends)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = _parser()
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if getattr(args, "run", None) is None:
        parser.print_usage(sys.stderr)
        sys.stderr.write("ember: error: a command is required (e.g. `ember backends`)\n")
        return 2
    return int(args.run(args, out if out is not None else sys.stdout))


if __name__ == "__main__":
    sys.exit(main())
