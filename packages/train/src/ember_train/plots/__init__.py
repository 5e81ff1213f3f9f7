"""Metric plots: the Learner's ``plots/<Metric>.png`` and ``plots/index.html`` (:class:`PlotWriter`), and the
curves of finished runs side by side (:func:`plot_runs`, ``python -m ember_train plot DIR --compare OTHER``).

Needs matplotlib (``pip install 'ember-train[plot]'``); figures are built without pyplot.
"""

from __future__ import annotations

from ._figure import Curve, matplotlib_missing, metric_figure, require_matplotlib, save_figure, write_plots
from ._runs import plot_runs, run_curves
from ._writer import PlotWriter

__all__ = ["Curve", "PlotWriter", "matplotlib_missing", "metric_figure", "plot_runs", "require_matplotlib",
           "run_curves", "save_figure", "write_plots"]
