"""``MetricsSet``: the metrics of one split, fed with each step's item, read back lazily.

Device metrics (``DeviceMetric``) queue their per-step scalar tensors; :meth:`MetricsSet.flush` converts
everything queued since the previous flush with one concatenation and one host transfer, then logs the
entries, fills the metric store and updates the renderer. Host metrics log at once.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ember import Float, Tensor

from ._adaptor import find_adaptor, no_adaptor_error
from ._logger import MetricLogger
from ._store import MetricStore, Split
from ._tracking import TrackingLogger
from .metric._base import DeviceMetric, Metric, MetricEntry, MetricMetadata, Numeric, NumericEntry
from .metric._inputs import LossInput
from .renderer._base import MetricsRenderer, MetricState, TrainingProgress

__all__ = ["MetricsSet", "sync_item"]


def sync_item(item: Any) -> Any:
    """The item with its tensors on the inner backend (no autodiff graph), as Burn's ``ItemLazy::sync``:
    metric computations then never record gradients. Dataclasses, tuples, lists and dicts are walked."""
    if isinstance(item, Tensor):
        return item.inner()
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        changes = {}
        for f in dataclasses.fields(item):
            v = getattr(item, f.name)
            if isinstance(v, Tensor):
                changes[f.name] = v.inner()
        if not changes:
            return item
        try:
            return dataclasses.replace(item, **changes)
        except (TypeError, ValueError):
            return item
    if isinstance(item, tuple) and not hasattr(item, "_fields"):
        return tuple(sync_item(x) for x in item)
    if isinstance(item, list):
        return [sync_item(x) for x in item]
    if isinstance(item, dict):
        return {k: sync_item(v) for k, v in item.items()}
    return item


class _Slot:
    __slots__ = ("metric", "numeric", "name", "adaptors", "pending", "device")

    def __init__(self, metric: Metric, numeric: bool) -> None:
        self.metric = metric
        self.numeric = numeric
        self.name = metric.name()
        self.adaptors: dict[type, Callable[[Any], Any]] = {}
        self.pending: list[tuple[Any, Any]] = []
        self.device = isinstance(metric, DeviceMetric)

    def adaptor(self, item_type: type) -> Callable[[Any], Any]:
        fn = self.adaptors.get(item_type)
        if fn is None:
            fn = find_adaptor(item_type, self.metric.input_type)
            if fn is None:
                raise no_adaptor_error(item_type, self.metric.input_type, f"the {self.name} metric")
            self.adaptors[item_type] = fn
        return fn


def _host_values(values: list[Any]) -> list[float]:
    """Python floats of numbers and ``[1]`` tensors, with one transfer for all tensors when possible."""
    out: list[float] = [0.0] * len(values)
    tensors: list[tuple[int, Tensor]] = []
    for i, v in enumerate(values):
        if isinstance(v, Tensor):
            tensors.append((i, v))
        else:
            out[i] = float(v)
    if not tensors:
        return out
    try:
        parts = [t if t.kind is Float and t.shape == (1,) else t.float().reshape([1]) for _, t in tensors]
        flat = Tensor.cat(parts, 0).to_numpy().astype(np.float64) if len(parts) > 1 else parts[0].to_numpy()
        for (i, _), x in zip(tensors, flat.reshape(-1)):
            out[i] = float(x)
    except Exception:  # noqa: BLE001 - mixed devices/dtypes: fall back to one transfer each
        for i, t in tensors:
            out[i] = float(t.to_numpy().reshape(-1)[0])
    return out


class MetricsSet:
    """The metrics of one split with its loggers, store and renderer."""

    def __init__(self, split: Split, metrics: list[tuple[Metric, bool]], loggers: list[MetricLogger],
                 renderer: MetricsRenderer, store: MetricStore, check_loss: bool = True,
                 trackers: list[TrackingLogger] | None = None) -> None:
        self.split = split
        self.slots = [_Slot(m, numeric) for m, numeric in metrics]
        self.loggers = loggers
        self.trackers = list(trackers or [])
        #: the loader's iterations per epoch when known (``len(loader)``): the step of epochs not logged here
        self.iterations_total: int | None = None
        self._lengths: dict[int, int] = {}   # iterations logged per epoch (this run, or read back on resume)
        self._counts: dict[str, int] = {}    # entries logged per metric in the current epoch
        self._offset = 0                     # the split's global steps before the current epoch
        self._keep = 0
        self._restored: dict[tuple[str, int], tuple[list[float], float | None]] = {}
        self.renderer = renderer
        self.store = store
        self.check_loss = check_loss
        self._loss: list[tuple[int, Any]] = []
        self._loss_adaptors: dict[type, Callable[[Any], Any] | None] = {}
        self.epoch = 1
        #: sums a list of host numbers over the data-parallel ranks (set by the Learner under DDP; ``None``: one
        #: process). Called at every flush, by every rank, with lists of the same length.
        self.reduce: Callable[[list[float]], list[float]] | None = None
        self._update = renderer.update_train if split is Split.TRAIN else renderer.update_valid
        self._render = renderer.render_train if split is Split.TRAIN else renderer.render_valid

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.slots]

    def check(self, item: Any) -> None:
        """Raise ``MetricAdaptError`` now if any metric cannot take this item (before the loop)."""
        item = sync_item(item)
        for slot in self.slots:
            slot.adaptor(type(item))

    def steps_before(self, epoch: int) -> int:
        """The split's global step count before ``epoch``: the iterations of the earlier epochs (logged or read
        back; ``iterations_total`` for one neither)."""
        return sum(self._lengths.get(e, self.iterations_total or 0) for e in range(1, epoch))

    def start_epoch(self, epoch: int, keep: int = 0) -> None:
        """Begin ``epoch``; ``keep > 0`` resumes it after ``keep`` iterations already logged."""
        self.epoch = epoch
        self._offset = self.steps_before(epoch)
        self._keep = keep
        self._counts = {s.name: keep for s in self.slots}
        for slot in self.slots:
            slot.metric.clear()
            slot.pending.clear()
        self._loss.clear()
        for lg in self.loggers:
            lg.start_epoch(epoch, keep)
        self.store.reset_epoch(self.split, epoch)
        if keep:
            self.reload(epoch)

    def reload(self, epoch: int) -> None:
        """Refill the store for ``epoch`` from the first logger that can read entries back."""
        for slot in self.slots:
            for lg in self.loggers:
                entries = lg.read_numeric(slot.name, epoch)
                if entries:
                    self.store.load(self.split, slot.name, epoch, entries)
                    self._lengths[epoch] = max(self._lengths.get(epoch, 0), len(entries))
                    values = [e.value for e in entries]
                    mean = self.store.aggregate(slot.name, epoch, self.split)
                    self._restored[(slot.name, epoch)] = (values, mean)
                    for t in self.trackers:
                        t.restore(self.split.value, slot.name, epoch, values, mean)
                    break

    def replay(self) -> None:
        """Hand the trackers the values :meth:`reload` read back before they were started (a resumed run)."""
        for (name, epoch), (values, mean) in self._restored.items():
            for t in self.trackers:
                t.restore(self.split.value, name, epoch, values, mean)

    def update(self, item: Any, metadata: MetricMetadata) -> None:
        item = sync_item(item)
        item_type = type(item)
        for slot in self.slots:
            inp = slot.adaptor(item_type)(item)
            if slot.device:
                slot.pending.append(slot.metric.compute(inp, metadata))  # type: ignore[attr-defined]
            else:
                entry = slot.metric.update(inp, metadata)
                self._emit(slot, entry, None, None)
        if self.check_loss:
            fn = self._loss_adaptors.get(item_type, False)
            if fn is False:
                fn = self._loss_adaptors[item_type] = find_adaptor(item_type, LossInput)
            if fn is not None:
                self._loss.append((metadata.iteration, fn(item).tensor))  # type: ignore[operator]

    def _emit(self, slot: _Slot, entry: MetricEntry, value: float | None, weight: float | None) -> None:
        for lg in self.loggers:
            lg.log(entry)
        numeric: NumericEntry | None
        if value is not None:
            numeric = NumericEntry(value, None if weight is None else int(weight))
        else:
            try:
                numeric = NumericEntry.deserialize(entry.serialize)
            except ValueError:
                numeric = NumericEntry(float(slot.metric.value())) if isinstance(slot.metric, Numeric) else None
        if numeric is not None:
            self.store.add(self.split, slot.name, self.epoch, numeric)
            it = self._counts[slot.name] = self._counts.get(slot.name, 0) + 1
            for t in self.trackers:
                t.log_iteration(self.split.value, slot.name, numeric.value, self.epoch, it, self._offset + it)
        m = slot.metric
        if isinstance(m, Numeric):
            self._update(MetricState(entry, float(m.value()), float(m.running_value())))
        else:
            self._update(MetricState(entry))

    def flush(self, progress: TrainingProgress | None) -> tuple[int, float] | None:
        """Log everything queued; render ``progress``. Returns ``(iteration, value)`` of the first
        non-finite loss among the queued steps, else ``None``."""
        flat: list[Any] = []
        for slot in self.slots:
            for v, w in slot.pending:
                flat.append(v)
                flat.append(w)
        flat.extend(t for _, t in self._loss)
        host = _host_values(flat) if flat else []
        if self.reduce is not None:
            host = self._reduced(host)
        k = 0
        for slot in self.slots:
            for _ in slot.pending:
                v, w = slot.metric.finalize(host[k], host[k + 1])  # type: ignore[attr-defined]
                k += 2
                entry = slot.metric.record(v, w)  # type: ignore[attr-defined]
                self._emit(slot, entry, v, w)
            slot.pending.clear()
        bad = None
        for (it, _), v in zip(self._loss, host[k:]):
            if not math.isfinite(v):
                bad = (it, v)
                break
        self._loss.clear()
        for lg in self.loggers:
            lg.flush()
        for t in self.trackers:
            t.flush()
        if progress is not None:
            self._render(progress)
        return bad

    def _reduced(self, host: list[float]) -> list[float]:
        """The queued host values of all ranks: each device metric's ``(value, weight)`` pairs combined as its
        ``distributed_reduce`` says (``"sum"``: both summed, e.g. correct counts and item counts; ``"mean"``: the
        ``weight``-weighted mean of the values, e.g. mean losses weighted by batch sizes), the losses summed (a
        non-finite loss on any rank is seen by all)."""
        assert self.reduce is not None
        out = list(host)
        k = 0
        for slot in self.slots:
            mean = getattr(slot.metric, "distributed_reduce", "mean") == "mean"
            for _ in slot.pending:
                if mean:
                    out[k] = host[k] * host[k + 1]
                k += 2
        total = self.reduce(out)
        k = 0
        for slot in self.slots:
            mean = getattr(slot.metric, "distributed_reduce", "mean") == "mean"
            for _ in slot.pending:
                if mean:
                    w = total[k + 1]
                    total[k] = total[k] / w if w else math.nan
                k += 2
        return total

    def end_epoch(self) -> dict[str, float]:
        """Close the epoch; the epoch means of the numeric metrics."""
        values = {}
        for slot in self.slots:
            v = self.store.aggregate(slot.name, self.epoch, self.split)
            if v is not None:
                values[slot.name] = v
        for lg in self.loggers:
            lg.end_epoch(self.epoch)
        logged = max(self._counts.values(), default=0)
        self._lengths[self.epoch] = logged
        # an epoch resumed with nothing left to run: its mean was logged by the interrupted run (ResumePoint.keeps)
        if self.trackers and not (self._keep and logged <= self._keep):
            for name, v in values.items():
                for t in self.trackers:
                    t.log_epoch(self.split.value, name, v, self.epoch)
            for t in self.trackers:
                t.flush()
        self.renderer.on_epoch_end(self.split.value, self.epoch, values)
        return values
