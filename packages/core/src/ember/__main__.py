"""Ember's command line: ``python -m ember backends`` (also the ``ember`` console script).

``ember backends`` lists every installed backend with its distribution, version, array library (``torch 2.13.0``)
and status; a broken plugin is listed with its error and never hides the others. The listing reads installed
metadata only (``importlib.metadata``), so it never imports torch or jax and takes well under a second.
``ember backends --devices`` also loads each backend (importing its array library: seconds for torch and jax) to
list its devices and element types and to check that it loads; while it does, a status line on standard error
names the backend being loaded (a spinner drawn with ``rich`` on a terminal, a plain line otherwise).

Output is a table drawn with ``rich`` when standard output is a terminal and rich is installed
(it is optional, imported only here), plain text otherwise; ``--json`` prints JSON. The exit
status is 0 when every backend is ``ok``, 1 when one is broken, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .backend import BackendInfo

__all__ = ["main"]

_COLUMNS = ("name", "distribution", "version", "library", "status")
_PROBED = ("devices", "dtypes")
#: the footer of a listing without ``--devices``
HINT = "devices and element types: `ember backends --devices` (loads each backend, importing its library)"


def _columns(infos: Sequence[BackendInfo]) -> tuple[str, ...]:
    return _COLUMNS + (_PROBED if any(i.probed for i in infos) else ())


def _cells(info: BackendInfo, columns: Sequence[str]) -> list[str]:
    cells = {"name": info.name, "distribution": info.distribution, "version": info.version,
             "library": info.library or "-", "status": info.status,
             "devices": ", ".join(info.devices) or "-", "dtypes": ", ".join(info.dtypes) or "-"}
    return [cells[c] for c in columns]


def format_plain(infos: Sequence[BackendInfo]) -> str:
    """The backends as an aligned plain-text table; each error on an indented line below its row. The devices and
    dtypes columns are there when the backends were loaded (``backends(devices=True)``), else a hint line says how."""
    if not infos:
        from ._install import install_command

        return f"no Ember backend is installed; install one, e.g. `{install_command('ember-backend-numpy')}`.\n"
    columns = _columns(infos)
    rows = [list(columns)] + [_cells(i, columns) for i in infos]
    widths = [max(len(r[c]) for r in rows) for c in range(len(columns))]
    lines = []
    for k, row in enumerate(rows):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        if k and infos[k - 1].error:
            lines.append(f"    error: {infos[k - 1].error}")
    if "devices" not in columns:
        lines.append(HINT)
    return "\n".join(lines) + "\n"


def _print_rich(infos: Sequence[BackendInfo], out: TextIO) -> bool:
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        return False
    columns = _columns(infos)
    errors = any(i.error for i in infos)
    table = Table(title="Ember backends", caption=None if "devices" in columns else HINT)
    for col in columns:
        table.add_column(col, overflow="fold", no_wrap=col in ("name", "distribution", "version", "status"))
    if errors:
        table.add_column("error", overflow="fold")
    for info in infos:
        style = None if info.status == "ok" else "red"
        table.add_row(*_cells(info, columns), *([info.error] if errors else []), style=style)
    Console(file=out).print(table)
    return True


def _loading(info: BackendInfo) -> str:
    return f"loading {info.name}" + (f" (importing {info.library})..." if info.library else "...")


@contextmanager
def _status(err: TextIO) -> Iterator[Callable[[BackendInfo], None]]:
    """A callback naming the backend being loaded: a ``rich`` spinner on a terminal, a plain line otherwise."""
    console = None
    if err.isatty():
        try:
            from rich.console import Console
        except ImportError:
            pass
        else:
            console = Console(file=err)
    if console is None:
        def line(info: BackendInfo) -> None:
            err.write(f"ember backends: {_loading(info)}\n")
            err.flush()

        yield line
        return
    with console.status("ember backends: reading installed backends") as spinner:
        yield lambda info: spinner.update(f"ember backends: {_loading(info)}")


def _backends(args: argparse.Namespace, out: TextIO) -> int:
    from .backend import backends

    if args.devices:
        with _status(sys.stderr) as progress:
            infos = backends(devices=True, progress=progress)
    else:
        infos = backends(devices=False)
    if args.json:
        out.write(json.dumps([asdict(i) for i in infos], indent=2) + "\n")
    elif not (infos and out.isatty() and _print_rich(infos, out)):
        out.write(format_plain(infos))
    return 0 if all(i.status == "ok" for i in infos) else 1


def _parser() -> argparse.ArgumentParser:
    from ._version import __version__

    parser = argparse.ArgumentParser(prog="ember", description="Ember command line.")
    parser.add_argument("--version", action="version", version=f"ember {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser(
        "backends",
        help="list installed backends: distribution, version, array library, status (--devices: devices, dtypes)",
        description="List every installed backend from its installed metadata, without importing torch or jax. "
        "Exit status 1 if one of them is broken.",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--devices", action="store_true",
                   help="also load each backend (importing its array library: seconds for torch and jax) to list "
                   "its devices and element types and check that it loads")
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
