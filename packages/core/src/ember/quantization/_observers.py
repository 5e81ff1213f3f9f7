"""Calibration observers: the range ``(min, max)`` a tensor's values take over a calibration run.

Burn's ``Calibration`` (``burn::tensor::quantization::Calibration::MinMax``) and ``torch.ao``'s observers
(``torch/ao/quantization/observer.py``). An observer sees the tensors of a calibration run one after the other
(:meth:`Observer.update`) and keeps a running range on the host, in float64; :meth:`Observer.range` hands it to
:func:`ember.quantization.compute_qparams`. The formulas:

- ``min_max`` (``MinMaxObserver``, ``PerChannelMinMaxObserver``): ``min = min(min, x.min())``,
  ``max = max(max, x.max())``.
- ``moving_average(momentum)`` (``MovingAverageMinMaxObserver`` with ``averaging_constant = momentum``, default
  0.01): the first tensor sets ``min = x.min()``, ``max = x.max()``; each later one moves them,
  ``min = min + momentum * (x.min() - min)`` (and the same for ``max``).
- ``percentile(p, bins)``: a histogram of every value seen (``bins`` equal bins over the running range, 2048 as
  ``torch.ao``'s ``HistogramObserver``; when a tensor widens the range, the old counts move to the bins of the
  wider range, as ``HistogramObserver._combine_histograms`` does), and the range is the ``(100 - p)``-th and
  ``p``-th percentiles of that histogram (NVIDIA ``pytorch-quantization``'s ``HistogramCalibrator`` percentile
  method, default ``p = 99.99``), each kept inside the observed ``[min, max]``. It clips rare outliers, which
  min-max keeps and pays for with a coarser scale.

An observer is per tensor (``axis=None``) or per channel (``axis=a``: one range per index of dim ``a``, reduced
over the other dims; ``min_max`` and ``moving_average`` only). NaN or infinite values raise
:class:`~ember.quantization.QuantizationError`: a range cannot hold them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._errors import ConfigError
from .._quantization._errors import QuantizationError

__all__ = ["Calibration", "Observer", "MinMaxObserver", "MovingAverageObserver", "PercentileObserver"]


def _host(x: Any) -> np.ndarray:
    """``x`` (an ember Tensor, TensorData or array) as a float64 numpy array on the host."""
    to_data = getattr(x, "to_data", None)
    arr = to_data().to_numpy() if to_data is not None else np.asarray(x)
    return np.asarray(arr, dtype=np.float64)


def _error(message: str) -> Exception:
    return QuantizationError(message)


class Observer:
    """Keeps the running range of the tensors it sees (the base of the observers; ``torch.ao``'s
    ``ObserverBase``). Make one with :meth:`Calibration.observer`.

    Args:
        axis: ``None`` for one range over every value, or the dim that keeps one range per index (per-channel).
    """

    name = "observer"

    def __init__(self, axis: int | None = None) -> None:
        self.axis = axis
        self.count = 0
        self.min: np.ndarray | None = None
        self.max: np.ndarray | None = None

    def _reduce(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not np.isfinite(x).all():
            bad = "NaN" if np.isnan(x).any() else "an infinite value"
            raise _error(f"{type(self).__name__}: the observed tensor (shape {list(x.shape)}) holds {bad}; a "
                         "quantization range needs finite values. Check the model's inputs and outputs for NaN/inf.")
        if x.size == 0:
            raise _error(f"{type(self).__name__}: the observed tensor is empty (shape {list(x.shape)}).")
        if self.axis is None:
            return np.asarray(x.min()), np.asarray(x.max())
        if x.ndim == 0 or not -x.ndim <= self.axis < x.ndim:
            raise _error(f"{type(self).__name__}: axis {self.axis} is out of range for a tensor of shape "
                         f"{list(x.shape)} (rank {x.ndim}).")
        dims = tuple(d for d in range(x.ndim) if d != self.axis % x.ndim)
        lo, hi = x.min(axis=dims), x.max(axis=dims)
        if self.min is not None and lo.shape != self.min.shape:
            raise _error(f"{type(self).__name__}: axis {self.axis} has {lo.shape[0]} channels in this tensor but "
                         f"{self.min.shape[0]} in the earlier ones.")
        return lo, hi

    def update(self, x: Any) -> None:
        """Observe ``x`` (an ember Tensor or array, any shape, any float dtype; read on the host).

        Raises:
            QuantizationError: NaN or infinite values, an empty tensor, an axis out of range or a channel count
                that changed.
        """
        raise NotImplementedError

    def range(self) -> tuple[np.ndarray, np.ndarray]:
        """``(min, max)`` float64 arrays: scalars (shape ``()``) per tensor, shape ``[channels]`` per axis.

        Raises:
            QuantizationError: nothing was observed yet (run the calibration data through the prepared model).
        """
        if self.min is None or self.max is None:
            raise _error(f"{type(self).__name__}: no tensor was observed; run calibration data through the prepared "
                         "model (ember.quantization.calibrate) before converting it.")
        return self.min, self.max

    def __repr__(self) -> str:
        axis = "" if self.axis is None else f", axis={self.axis}"
        if self.min is None or self.max is None:
            return f"{type(self).__name__}(empty{axis})"
        return (f"{type(self).__name__}(count={self.count}, min={np.round(self.min, 6).tolist()}, "
                f"max={np.round(self.max, 6).tolist()}{axis})")


class MinMaxObserver(Observer):
    """The running minimum and maximum (``torch.ao`` ``MinMaxObserver`` / ``PerChannelMinMaxObserver``; Burn's
    ``Calibration::MinMax``)."""

    def update(self, x: Any) -> None:
        lo, hi = self._reduce(_host(x))
        if self.min is None or self.max is None:
            self.min, self.max = lo, hi
        else:
            self.min, self.max = np.minimum(self.min, lo), np.maximum(self.max, hi)
        self.count += 1


class MovingAverageObserver(Observer):
    """The exponential moving average of each tensor's min and max (``torch.ao``
    ``MovingAverageMinMaxObserver``: ``min += momentum * (x.min() - min)``; the first tensor sets the range)."""

    def __init__(self, momentum: float, axis: int | None = None) -> None:
        super().__init__(axis)
        self.momentum = momentum

    def update(self, x: Any) -> None:
        lo, hi = self._reduce(_host(x))
        if self.min is None or self.max is None:
            self.min, self.max = lo, hi
        else:
            c = self.momentum
            self.min = self.min + c * (lo - self.min)
            self.max = self.max + c * (hi - self.max)
        self.count += 1


class PercentileObserver(Observer):
    """The ``(100 - p)``-th and ``p``-th percentiles of a running histogram (see the module docstring)."""

    def __init__(self, p: float, bins: int, axis: int | None = None) -> None:
        if axis is not None:
            raise ConfigError("Calibration.percentile: the percentile observer is per tensor only (axis=None); use "
                              "min_max or moving_average for a per-axis range.")
        super().__init__(None)
        self.p = p
        self.bins = bins
        self.hist = np.zeros(bins, dtype=np.float64)
        self.lo = 0.0
        self.hi = 0.0

    def update(self, x: Any) -> None:
        arr = _host(x).ravel()
        lo, hi = self._reduce(arr)
        lo_f, hi_f = float(lo), float(hi)
        if self.min is None or self.max is None:
            self.min, self.max = lo, hi
            self.lo, self.hi = lo_f, hi_f if hi_f > lo_f else lo_f + 1e-12
        else:
            self.min, self.max = np.minimum(self.min, lo), np.maximum(self.max, hi)
            if lo_f < self.lo or hi_f > self.hi:  # widen: move the old counts onto the wider bins
                new_lo, new_hi = min(lo_f, self.lo), max(hi_f, self.hi)
                old_edges = np.linspace(self.lo, self.hi, self.bins + 1)
                centers = (old_edges[:-1] + old_edges[1:]) / 2
                self.hist, _ = np.histogram(centers, bins=self.bins, range=(new_lo, new_hi), weights=self.hist)
                self.lo, self.hi = new_lo, new_hi
        counts, _ = np.histogram(arr, bins=self.bins, range=(self.lo, self.hi))
        self.hist = self.hist + counts
        self.count += 1

    def range(self) -> tuple[np.ndarray, np.ndarray]:
        lo, hi = super().range()
        cdf = np.cumsum(self.hist)
        total = cdf[-1]
        edges = np.linspace(self.lo, self.hi, self.bins + 1)
        q = self.p / 100.0

        def at(fraction: float) -> float:
            # the value below which `fraction` of the counts lie, interpolated inside its bin
            target = fraction * total
            i = int(np.searchsorted(cdf, target, side="left"))
            i = min(i, self.bins - 1)
            before = cdf[i - 1] if i > 0 else 0.0
            inside = self.hist[i]
            t = (target - before) / inside if inside > 0 else 0.0
            return float(edges[i] + t * (edges[i + 1] - edges[i]))

        low = max(at(1.0 - q), float(lo))
        high = min(at(q), float(hi))
        return np.asarray(low), np.asarray(max(high, low))


class Calibration:
    """How a range is measured (Burn's ``Calibration``; ``torch.ao``'s observer choice). Build one with the
    constructors :meth:`min_max`, :meth:`moving_average` or :meth:`percentile`; :meth:`observer` makes a fresh
    :class:`Observer` for one tensor.
    """

    __slots__ = ("kind", "momentum", "p", "bins")

    def __init__(self, kind: str, momentum: float = 0.01, p: float = 99.99, bins: int = 2048) -> None:
        if kind not in ("min_max", "moving_average", "percentile"):
            raise ConfigError(f"Calibration: unknown kind {kind!r}; expected 'min_max', 'moving_average' or "
                              "'percentile' (use Calibration.min_max() ...).")
        if not (isinstance(momentum, (int, float)) and 0.0 < momentum <= 1.0):
            raise ConfigError(f"Calibration.moving_average: momentum must be in (0, 1], got {momentum!r} "
                              "(torch.ao's averaging_constant, default 0.01).")
        if not (isinstance(p, (int, float)) and 50.0 < p <= 100.0 and math.isfinite(p)):
            raise ConfigError(f"Calibration.percentile: p must be in (50, 100], got {p!r} (default 99.99).")
        if not (isinstance(bins, int) and bins >= 16):
            raise ConfigError(f"Calibration.percentile: bins must be an int >= 16, got {bins!r} (default 2048).")
        self.kind = kind
        self.momentum = float(momentum)
        self.p = float(p)
        self.bins = bins

    @staticmethod
    def min_max() -> Calibration:
        """The running min and max (Burn's ``Calibration::MinMax``, ``torch.ao`` ``MinMaxObserver``)."""
        return Calibration("min_max")

    @staticmethod
    def moving_average(momentum: float = 0.01) -> Calibration:
        """The moving average of each batch's min and max (``torch.ao`` ``MovingAverageMinMaxObserver``,
        ``averaging_constant = momentum``, default 0.01).

        Raises:
            ConfigError: ``momentum`` outside ``(0, 1]``.
        """
        return Calibration("moving_average", momentum=momentum)

    @staticmethod
    def percentile(p: float = 99.99, bins: int = 2048) -> Calibration:
        """The ``(100 - p)``-th and ``p``-th percentiles of a histogram of ``bins`` bins (per tensor only).

        Raises:
            ConfigError: ``p`` outside ``(50, 100]`` or ``bins < 16``.
        """
        return Calibration("percentile", p=p, bins=bins)

    def observer(self, axis: int | None = None) -> Observer:
        """A fresh observer of this calibration, per tensor (``axis=None``) or per ``axis``.

        Raises:
            ConfigError: a per-axis percentile observer.
        """
        if self.kind == "min_max":
            return MinMaxObserver(axis)
        if self.kind == "moving_average":
            return MovingAverageObserver(self.momentum, axis)
        return PercentileObserver(self.p, self.bins, axis)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Calibration) and (self.kind, self.momentum, self.p, self.bins) == (
            other.kind, other.momentum, other.p, other.bins)

    def __hash__(self) -> int:
        return hash((self.kind, self.momentum, self.p, self.bins))

    def __repr__(self) -> str:
        if self.kind == "moving_average":
            return f"Calibration.moving_average({self.momentum})"
        if self.kind == "percentile":
            return f"Calibration.percentile({self.p}, bins={self.bins})"
        return "Calibration.min_max()"
