"""Shared helpers of the benchmarks: the timed batch and the common command-line options of the nn benchmarks
(``nn.py``, ``nn_layers.py``), and a function wrapper that records its last call's time (``jit_dispatch.py``,
``compile_dispatch.py``). Scripts in ``bench/`` import it as ``_timing`` (their folder is on ``sys.path``)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from typing import Any


def time_per_call(step: Callable[[], Any], batch_s: float) -> float:
    """Seconds per call of ``step``, calling it until ``batch_s`` seconds of wall time have passed."""
    n, t0 = 0, time.perf_counter()
    while True:
        step()
        n += 1
        el = time.perf_counter() - t0
        if el >= batch_s:
            return el / n


class Timed:
    """Wraps a function (a compiled program's dispatch) and records how long its last call took (``last``, s)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.last = 0.0

    def __call__(self, *args: Any) -> Any:
        t0 = time.perf_counter()
        out = self.fn(*args)
        self.last = time.perf_counter() - t0
        return out


def forward_backward_args(description: str, batch_ms: float,
                          extra: Sequence[tuple[str, str]] = ()) -> argparse.Namespace:
    """Parse ``--rounds``, ``--threads``, ``--batch-ms`` (default ``batch_ms``), ``-k`` and the boolean flags
    ``extra`` gives as ``(flag, help)``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median reported)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS and torch intra-op threads")
    ap.add_argument("--batch-ms", type=float, default=batch_ms, help="length of one timed batch")
    ap.add_argument("-k", default="", help="only cases whose name contains this text")
    for flag, text in extra:
        ap.add_argument(flag, action="store_true", help=text)
    return ap.parse_args()
