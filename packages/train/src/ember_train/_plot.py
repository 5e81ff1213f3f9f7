"""``plot_curves``: the metric curves of an artifact directory, train against valid (matplotlib)."""

from __future__ import annotations

import os
from pathlib import Path

from ._errors import LearnerError
from ._summary import LearnerSummary

__all__ = ["plot_curves"]


def plot_curves(artifact_dir: str | os.PathLike[str], output: str | os.PathLike[str]) -> Path:
    """Draw one panel per metric (x: epoch, y: epoch mean; train and valid lines) into ``output``.

    Raises:
        LearnerError: matplotlib is not installed (``pip install 'ember-train[plot]'``).
        FileNotFoundError: no logs in ``artifact_dir``.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise LearnerError(
            "ember-train plot needs matplotlib, which is not installed: pip install 'ember-train[plot]' "
            "(or pip install matplotlib). `ember-train summary DIR` works without it."
        ) from exc
    summary = LearnerSummary.from_dir(artifact_dir)
    names: list[str] = []
    for m in summary.metrics:
        if m.name not in names:
            names.append(m.name)
    cols = min(3, max(1, len(names)))
    rows = -(-len(names) // cols) if names else 1
    fig, axes = plt.subplots(rows, cols, figsize=(4.5 * cols, 3.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, names):
        for m in summary.metrics:
            if m.name == name:
                xs, ys = zip(*m.history)
                ax.plot(xs, ys, marker="o", label=m.split)
        ax.set_title(name)
        ax.set_xlabel("epoch")
        ax.legend()
    for ax in list(axes.flat)[len(names):]:
        ax.set_visible(False)
    fig.tight_layout()
    out = Path(output)
    fig.savefig(out)
    plt.close(fig)
    return out
