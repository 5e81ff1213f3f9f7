"""Tensor creation (Burn's ``from_data``, ``zeros``, ``random``, ``arange`` ...)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._distribution import Distribution
from .._dtype import DType
from .._errors import DTypeError, EmberError, KindError, ShapeError
from .._kind import Bool, Float, Int, Kind, kind_of
from .._tensor_data import TensorData
from ..backend._device import Device
from . import _core
from ._base import TensorBase
from ._index_check import check_index_values
from ._util import as_shape

_BY_NUMPY_KIND = {"b": Bool, "i": Int, "u": Int, "f": Float}


def _check_device(op: str, device: Any) -> Device:
    if not isinstance(device, Device):
        raise TypeError(
            f"{op}: expected an ember Device (e.g. ember.backend('numpy').device()), got "
            f"{type(device).__name__} {device!r}."
        )
    return device


def _kind_of_array(op: str, arr: np.ndarray) -> Kind:
    k = _BY_NUMPY_KIND.get(arr.dtype.kind)
    if k is None:
        raise DTypeError(
            f"{op}: elements of numpy dtype {arr.dtype} are not numbers or bools; expected floats, "
            "integers or bools."
        )
    return k


def _to_array(op: str, data: Any) -> np.ndarray:
    if isinstance(data, TensorData):
        return data.to_numpy()
    if isinstance(data, np.ndarray):
        return data
    if hasattr(data, "primitive"):
        return np.asarray(data.to_numpy())
    try:
        arr = np.asarray(data)
    except ValueError as exc:
        raise ShapeError(f"{op}: nested sequences have inconsistent lengths ({exc}).") from None
    if arr.dtype == object:
        raise ShapeError(
            f"{op}: expected a rectangular nesting of numbers or bools; the rows have different "
            "lengths or hold other objects."
        )
    if arr.size == 0 and arr.dtype.kind == "f" and not isinstance(data, np.ndarray):
        return arr  # empty lists are Float unless a kind is given
    return arr


class CreationOps(TensorBase):
    __slots__ = ()

    @classmethod
    def from_data(cls, data: Any, device: Device, kind: Kind | None = None, *, dtype: Any = None) -> Any:
        """A tensor holding ``data`` on ``device``.

        Args:
            data: nested lists/tuples, a Python scalar (rank 0), a numpy array or a ``TensorData``.
            device: where the tensor lives.
            kind: ``Float``, ``Int`` or ``Bool``; inferred from the elements (or from ``dtype``) when
                omitted (bools → Bool, integers → Int, floats → Float).
            dtype: the element type (a :class:`~ember.DType` or its name). By default the backend's
                setting for the kind; ``dtype=data.dtype`` keeps a ``TensorData``'s own type (importers
                use it for ``uint8`` images, ``float64`` constants ...).

        Values are converted to the element type (floats to Int truncate toward zero).

        Raises:
            ShapeError: ragged nested lists. DTypeError: non-numeric elements, a ``dtype`` of another
            kind than ``kind``, or one the backend does not support.
        """
        dev = _check_device("from_data", device)
        arr = _to_array("from_data", data)
        want = None if dtype is None else DType.parse(dtype)
        if want is not None and kind is None:
            kind = kind_of(want)
        k = _kind_of_array("from_data", arr) if kind is None else kind
        ops = dev.ops[k.index]
        if want is None:
            dtype = dev.backend.dtype_for(k.index)
        else:
            if kind_of(want) is not k:
                raise DTypeError(f"from_data: dtype {want} is not a {k} element type; pass a matching kind.")
            dev.backend.check_dtype(want)
            dtype = want
        if k is Bool and arr.dtype.kind != "b":
            arr = arr != 0
        try:
            p = ops.from_numpy(arr, dtype, dev.handle)
        except EmberError:
            raise
        except Exception as exc:
            raise EmberError(f"from_data: the backend could not take the data: {exc}") from exc
        return _core.new(p, dev, k, ops)

    @classmethod
    def from_floats(cls, data: Any, device: Device) -> Any:
        """A Float tensor from nested lists of numbers."""
        return cls.from_data(data, device, Float)

    @classmethod
    def from_ints(cls, data: Any, device: Device) -> Any:
        """An Int tensor from nested lists of ints."""
        arr = _to_array("from_ints", data)
        if arr.dtype.kind == "f" and not np.all(np.isfinite(arr) & (arr == np.trunc(arr))):
            raise DTypeError("from_ints: the data holds non-integral floats; round them or use from_floats.")
        return cls.from_data(arr, device, Int)

    @classmethod
    def from_bool(cls, data: Any, device: Device) -> Any:
        """A Bool tensor from nested lists of bools (or 0/1)."""
        return cls.from_data(data, device, Bool)

    @classmethod
    def full(
        cls, shape: Sequence[int] | int, fill_value: float | int | bool, device: Device, kind: Kind | None = None
    ) -> Any:
        """A tensor of ``shape`` filled with ``fill_value``; the kind follows the value unless given."""
        dev = _check_device("full", device)
        shp = as_shape("full", shape)
        if kind is None:
            kind = Bool if isinstance(fill_value, bool) else Int if isinstance(fill_value, int) else Float
        ops = dev.ops[kind.index]
        return _core.new(ops.full(shp, fill_value, dev.backend.dtype_for(kind.index), dev.handle), dev, kind, ops)

    @classmethod
    def zeros(cls, shape: Sequence[int] | int, device: Device, kind: Kind = Float) -> Any:
        """A tensor of zeros (``False`` for Bool)."""
        return _constant("zeros", shape, device, kind)

    @classmethod
    def ones(cls, shape: Sequence[int] | int, device: Device, kind: Kind = Float) -> Any:
        """A tensor of ones (``True`` for Bool)."""
        return _constant("ones", shape, device, kind)

    @classmethod
    def empty(cls, shape: Sequence[int] | int, device: Device, kind: Kind = Float) -> Any:
        """A tensor whose values must not be relied on (Ember fills zeros)."""
        return _constant("empty", shape, device, kind)

    def zeros_like(self) -> Any:
        return type(self).zeros(self.shape, self.device, self.kind)

    def ones_like(self) -> Any:
        return type(self).ones(self.shape, self.device, self.kind)

    def full_like(self, fill_value: float | int | bool) -> Any:
        """Same shape, device and kind, filled with ``fill_value``."""
        v = _core.scalar_for("full_like", self, fill_value)
        return type(self).full(self.shape, v, self.device, self.kind)

    @classmethod
    def eye(cls, size: int, device: Device, kind: Kind = Float) -> Any:
        """The ``[size, size]`` identity matrix."""
        r = cls.arange(0, size, device)
        return r.unsqueeze_dim(1).equal(r.unsqueeze_dim(0))._as_kind(kind)

    def _as_kind(self, kind: Kind) -> Any:
        return {Float: self.float, Int: self.int, Bool: self.bool}[kind]()

    @classmethod
    def arange(cls, start: int, end: int, device: Device) -> Any:
        """Int ``[start, end)`` with step 1 (Burn's ``arange``)."""
        return cls.arange_step(start, end, 1, device)

    @classmethod
    def arange_step(cls, start: int, end: int, step: int, device: Device) -> Any:
        """Int ``[start, start+step, ...)`` stopping before ``end``.

        Raises:
            ValueError: ``step`` is zero. TypeError: non-int arguments.
        """
        dev = _check_device("arange_step", device)
        for name, v in (("start", start), ("end", end), ("step", step)):
            if not isinstance(v, int) or isinstance(v, bool):
                raise TypeError(f"arange: {name} must be an int, got {v!r}; for floats use arange(...).float() * step")
        if step == 0:
            raise ValueError("arange_step: step must not be zero.")
        ops = dev.ops[1]
        return _core.new(ops.arange(start, end, step, dev.backend.int_dtype, dev.handle), dev, Int, ops)

    @classmethod
    def random(cls, shape: Sequence[int] | int, distribution: Distribution, device: Device, kind: Kind = Float) -> Any:
        """Samples of ``distribution`` (Default: uniform [0, 1)). Int tensors draw integers
        uniformly in ``[low, high)``; Bool tensors take Bernoulli(``prob``) or uniform < 0.5.
        Reproducible after ``backend.seed(n)``."""
        dev = _check_device("random", device)
        if not isinstance(distribution, Distribution):
            raise TypeError(f"random: expected a Distribution, got {distribution!r}")
        shp = as_shape("random", shape)
        if kind is Bool:
            dist = distribution if distribution.kind == "bernoulli" else Distribution.bernoulli(0.5)
            f = cls.random(shp, dist, dev, Float)
            return f.bool()
        ops = dev.ops[kind.index]
        return _core.new(ops.random(shp, distribution, dev.backend.dtype_for(kind.index), dev.handle), dev, kind, ops)

    def random_like(self, distribution: Distribution) -> Any:
        return type(self).random(self.shape, distribution, self.device, self.kind)

    def one_hot(self, num_classes: int) -> Any:
        """One-hot encoding: a new last dim of ``num_classes``, 1 at each value, same kind.

        Raises:
            ember.IndexError: a value outside ``[0, num_classes)`` (as :meth:`one_hot_fill`).
        """
        return self.one_hot_fill(num_classes, 1, 0, -1)

    def one_hot_fill(self, num_classes: int, on_value: float, off_value: float, axis: int = -1) -> Any:
        """One-hot with ``on_value``/``off_value`` placed on a new dim ``axis`` (Burn's ``one_hot_fill``);
        output kind Float for Float input, else Int.

        The range check is the core's index-value check (:mod:`ember.tensor._index_check`: one min/max
        reduction read on the host), so it runs on concrete data only: inside a compiled step
        (``ember_jax.jit``, the values are traced) it is skipped, and a value outside ``[0, num_classes)``
        then gives a row of ``off_value`` (no position matches).

        Raises:
            KindError: a Bool tensor. ember.IndexError: a value outside ``[0, num_classes)``, negative
            ones included (concrete data).
        """
        if self.kind is Bool:
            raise KindError("one_hot needs an Int (or Float with integral values) tensor, got Bool.")
        idx = self.int()
        check_index_values("one_hot", idx, num_classes, what="class", where=f"num_classes {num_classes}")
        classes = type(self).arange(0, num_classes, self.device)
        hot = idx.unsqueeze_dim(idx.rank).equal(classes.reshape([1] * idx.rank + [num_classes]))
        out_kind = Float if self.kind is Float else Int
        base = type(self).full(hot.shape, off_value, self.device, out_kind)
        out = base.mask_fill(hot, on_value)
        r = out.rank
        ax = axis + r if axis < 0 else axis
        if ax != r - 1:
            out = out.movedim(r - 1, ax)
        return out

    @classmethod
    def cartesian_grid(cls, shape: Sequence[int], device: Device) -> Any:
        """Int ``[*shape, len(shape)]`` of the coordinates of every position (Burn's ``cartesian_grid``)."""
        shp = as_shape("cartesian_grid", shape)
        n = len(shp)
        cols = []
        for i, s in enumerate(shp):
            r = cls.arange(0, s, device).reshape([s if j == i else 1 for j in range(n)])
            cols.append(r.expand(shp))
        return cls.stack(cols, n)


def _constant(op: str, shape: Sequence[int] | int, device: Device, kind: Kind) -> Any:
    """``zeros`` / ``ones`` / ``empty``: one backend call with the kind's dtype."""
    dev = _check_device(op, device)
    ops = dev.ops[kind.index]
    p = getattr(ops, op)(as_shape(op, shape), dev.backend.dtype_for(kind.index), dev.handle)
    return _core.new(p, dev, kind, ops)

