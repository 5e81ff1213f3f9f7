"""Renderers: the live rich dashboard (:class:`TuiMetricsRenderer`) and plain log lines
(:class:`CliMetricsRenderer`); :func:`default_renderer` picks one by whether stdout is a terminal."""

from __future__ import annotations

from ._base import MetricsRenderer, MetricState, TrainingProgress
from ._format import sparkline
from ._plain import CliMetricsRenderer
from ._tui import TuiMetricsRenderer, summary_table

__all__ = ["CliMetricsRenderer", "MetricState", "MetricsRenderer", "TrainingProgress", "TuiMetricsRenderer",
           "default_renderer", "sparkline", "summary_table"]


def default_renderer() -> MetricsRenderer:
    """The dashboard when stdout is a terminal (rich's detection, so ``FORCE_COLOR``/``TERM=dumb`` apply),
    plain lines otherwise."""
    from rich.console import Console

    console = Console()
    if console.is_terminal and not console.is_dumb_terminal:
        return TuiMetricsRenderer(console)
    return CliMetricsRenderer()
