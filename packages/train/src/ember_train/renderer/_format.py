"""Small text helpers shared by the renderers: durations, sparklines."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["duration", "sparkline", "BLOCKS"]

BLOCKS = "▁▂▃▄▅▆▇█"


def duration(seconds: float | None) -> str:
    """``h:mm:ss`` (``-:--:--`` when unknown)."""
    if seconds is None or not math.isfinite(seconds):
        return "-:--:--"
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def sparkline(values: Sequence[float], lo: float | None = None, hi: float | None = None, width: int = 24) -> str:
    """Values as block characters scaled to ``[lo, hi]`` (default their range); the last ``width`` values.
    Non-finite values show as a space."""
    vals = list(values)[-width:]
    finite = [v for v in vals if math.isfinite(v)]
    if not finite:
        return " " * len(vals)
    lo = min(finite) if lo is None else lo
    hi = max(finite) if hi is None else hi
    span = hi - lo
    out = []
    for v in vals:
        if not math.isfinite(v):
            out.append(" ")
        elif span <= 0:
            out.append(BLOCKS[len(BLOCKS) // 2])
        else:
            i = int((v - lo) / span * (len(BLOCKS) - 1) + 0.5)
            out.append(BLOCKS[min(max(i, 0), len(BLOCKS) - 1)])
    return "".join(out)
