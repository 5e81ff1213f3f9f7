"""The debug print of ``LoadArgs.with_debug_print()``: one row per tensor (Burn's ``debug_print``)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["print_keys"]


def print_keys(rows: Sequence[tuple[str, str, tuple[int, ...], str]], title: str) -> None:
    """Print ``(original key, remapped key, shape, dtype)`` rows as a table (``rich`` if installed)."""
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is optional
        Console = None  # type: ignore[assignment,misc]  # noqa: N806
    if Console is not None:
        table = Table(title=title)
        for col in ("original key", "remapped key", "shape", "dtype"):
            table.add_column(col)
        for orig, new, shape, dtype in rows:
            table.add_row(orig, new if new != orig else "=", str(list(shape)), dtype)
        Console().print(table)
        return
    print(title)  # pragma: no cover
    w0 = max((len(r[0]) for r in rows), default=12)  # pragma: no cover
    w1 = max((len(r[1]) for r in rows), default=12)  # pragma: no cover
    for orig, new, shape, dtype in rows:  # pragma: no cover
        print(f"  {orig:<{w0}}  ->  {new:<{w1}}  {str(list(shape)):<20} {dtype}")
