"""``ember.Tensor``: the user-facing tensor, a thin wrapper around a backend primitive.

A tensor is ``(primitive, device, kind, ops)``: the array library's array, the
:class:`~ember.backend.Device` it lives on, its :class:`~ember.Kind` and the op provider that
serves that kind on that device (``device.ops[kind.index]``). An op is one method call on
``ops``; there is no registry look-up on the hot path.

The op methods live in mixins, one file per Burn op group: :mod:`._creation`, :mod:`._basic`
(shape and indexing), :mod:`._numeric` (arithmetic, reductions, ordering),
:mod:`._float` (float math), :mod:`._intbool`. This file holds the class, the properties, data
in/out, Python protocols and the fast constructor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dtype import DType
from .._errors import EmberError, ShapeError
from .._kind import Bool, Float, Int, Kind, kind_of
from .._tensor_data import TensorData
from ..autodiff._backend import Autodiff as _Autodiff
from ..autodiff._graph import AutodiffPrimitive as _AP
from ..backend._device import Device
from ._autodiff import AutodiffTensorOps
from ._basic import BasicOps
from ._creation import CreationOps
from ._float import FloatTensorOps
from ._intbool import IntBoolTensorOps
from ._numeric import NumericTensorOps
from ._quantize import QuantizeTensorOps

__all__ = ["Tensor"]

_KIND_NAMES = {"float": Float, "int": Int, "bool": Bool}


class Tensor(CreationOps, BasicOps, NumericTensorOps, FloatTensorOps, IntBoolTensorOps, AutodiffTensorOps,
             QuantizeTensorOps):
    """A tensor of kind Float, Int or Bool on a device, with a run-time rank.

    Construct with the class methods (``Tensor.from_data``, ``Tensor.zeros``, ``Tensor.random``
    ...), never with the primitive directly unless you write a backend
    (:meth:`from_primitive`). Tensors are immutable values: every op returns a new tensor.
    """

    __slots__ = ()

    def __init__(self, primitive: Any, device: Device, kind: Kind = Float) -> None:
        self.primitive = primitive
        self.device = device
        self.kind = kind
        self.ops = device.ops[kind.index]

    @classmethod
    def from_primitive(cls, primitive: Any, device: Device, kind: Kind = Float) -> Tensor:
        """Wrap a backend primitive living on ``device`` (for backend authors)."""
        return cls(primitive, device, kind)

    # ------------------------------------------------------------------ data out
    def to_data(self) -> TensorData:
        """The elements as host :class:`~ember.TensorData`: an independent copy (may synchronize
        a device)."""
        arr = self.ops.to_numpy(self.primitive)
        dt = self.dtype
        if dt is DType.BFLOAT16:
            return TensorData(arr, DType.BFLOAT16)
        return TensorData.from_bits(np.array(arr, dtype=dt.to_numpy(), copy=True), dt)

    def into_data(self) -> TensorData:
        """The elements as :class:`~ember.TensorData` **without a copy** where the backend allows
        (Burn's ``into_data`` consumes the tensor): the data share the tensor's memory through a
        read-only array, so neither can be written. Records use it to save without doubling memory;
        use :meth:`to_data` for an independent copy."""
        dt = self.dtype
        if dt is DType.BFLOAT16:
            return TensorData(self.ops.to_numpy(self.primitive), DType.BFLOAT16)
        arr = self.to_numpy()
        if arr.dtype != dt.to_numpy() or not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr, dtype=dt.to_numpy())
        return TensorData.from_bits(arr, dt)

    def to_numpy(self) -> np.ndarray:
        """The elements as a **read-only** numpy array (bfloat16 widened to float32).

        On CPU backends the array may share memory with the tensor, which is immutable: call
        ``.copy()`` on the result to get an array you can write.
        """
        arr = np.asarray(self.ops.to_numpy(self.primitive))
        if arr.flags.writeable:
            arr = arr.view()
            arr.flags.writeable = False
        return arr

    def tolist(self) -> Any:
        return self.to_numpy().tolist()

    def into_scalar(self) -> float | int | bool:
        """The value of a one-element tensor as a Python number.

        Raises:
            ShapeError: the tensor has more or fewer than one element.
        """
        if self.num_elements() != 1:
            raise ShapeError(
                f"into_scalar: expected a tensor with exactly one element, got shape "
                f"{list(self.shape)}; reduce it first (e.g. .sum() or .mean())."
            )
        return self.to_numpy().reshape(()).item()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self.to_numpy()
        if dtype is not None:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __float__(self) -> float:
        return float(self.into_scalar())

    def __int__(self) -> int:
        return int(self.into_scalar())

    def __index__(self) -> int:
        if self.kind is Float:
            raise TypeError("only Int and Bool one-element tensors can be used as an index")
        return int(self.into_scalar())

    def __bool__(self) -> bool:
        if self.num_elements() != 1:
            raise ShapeError(
                f"the truth value of a tensor with shape {list(self.shape)} is ambiguous; use "
                ".any() or .all()."
            )
        return bool(self.into_scalar())

    def __len__(self) -> int:
        shape = self.shape
        if not shape:
            raise TypeError("len() of a rank-0 tensor")
        return shape[0]

    def __iter__(self) -> Any:
        """Iterate over dim 0, yielding tensors of rank ``rank - 1`` (Burn's ``iter_dim(0)`` squeezed)."""
        if self.rank == 0:
            raise TypeError("iteration over a rank-0 tensor")
        for i in range(self.shape[0]):
            yield self[i]

    # ------------------------------------------------------------------ conversions
    def float(self) -> Tensor:
        """A Float tensor with the same values (Int → float, Bool → 0.0/1.0)."""
        k = self.kind
        if k is Float:
            return self
        fops = self.device.ops[0]
        p = fops.int_into_float(self.primitive) if k is Int else fops.bool_into_float(self.primitive)
        return Tensor(p, self.device, Float)

    def int(self) -> Tensor:
        """An Int tensor: Float truncated toward zero, Bool as 0/1."""
        k = self.kind
        if k is Int:
            return self
        if k is Float:
            return Tensor(self.ops.float_into_int(self.primitive), self.device, Int)
        return Tensor(self.ops.bool_into_int(self.primitive), self.device, Int)

    def bool(self) -> Tensor:
        """A Bool tensor: true where the value is non-zero."""
        if self.kind is Bool:
            return self
        return Tensor(self.ops.not_equal(self.primitive, 0), self.device, Bool)

    def cast(self, dtype: DType | str) -> Tensor:
        """The tensor with another element type of the same kind (e.g. float32 → float16).

        Raises:
            DTypeError: the dtype is of another kind or unsupported by the backend.
        """
        from .._errors import DTypeError

        d = DType.parse(dtype)
        want = kind_of(d)
        if want is not self.kind:
            raise DTypeError(
                f"cast: {d} is not a {self.kind} element type; use .float(), .int() or .bool() to "
                "change the kind."
            )
        self.device.backend.check_dtype(d)
        return Tensor(self.ops.cast(self.primitive, d), self.device, self.kind)

    def bitcast(self, dtype: DType | str) -> Tensor:
        """The same bits read as another element type of the same size, of any kind (float32 → int32,
        int8 → uint8, bfloat16 → int16 ...); the shape is unchanged and the bytes are little-endian.

        Bool is one byte holding 0 or 1: it reinterprets as uint8/int8 0 or 1, and a byte reinterprets as
        Bool true where it is non-zero. ONNX's ``BitCast``; XLA's ``bitcast_convert_type``, numpy's
        ``ndarray.view(dtype)``, torch's ``Tensor.view(dtype)``. Not differentiable: under ``Autodiff``
        the result carries no graph.

        Raises:
            DTypeError: ``dtype``'s item size differs from the tensor's (use ``cast`` to convert values),
                or the backend cannot hold ``dtype``.
        """
        from .._errors import DTypeError

        d = DType.parse(dtype)
        src = self.dtype
        if d is src:
            return self
        if d.itemsize != src.itemsize:
            raise DTypeError(
                f"bitcast: {src} has {src.itemsize} bytes per element and {d} has {d.itemsize}; a bitcast "
                "keeps every bit, so both must have the same size. Use .cast() (or .float()/.int()) to "
                "convert values instead."
            )
        self.device.backend.check_dtype(d)
        if d is DType.BOOL:
            return self.bitcast(DType.UINT8).bool() if src is not DType.UINT8 else self.bool()
        if src is DType.BOOL:
            return self.int().cast(DType.UINT8).bitcast(d)
        p = self.device.ops[0].bitcast(self.primitive, d)
        return Tensor(p, self.device, kind_of(d))

    def to_device(self, device: Device) -> Tensor:
        """The tensor on ``device``, which may belong to another backend.

        Within a backend the backend moves the data; across backends DLPack is used when both
        support it (no copy on the same memory), else the data is copied through the host.
        The element type follows the destination backend's setting for the kind.
        """
        if device is self.device:
            return self
        src_b, dst_b = self.device.backend, device.backend
        if src_b is dst_b:
            return Tensor(self.ops.to_device(self.primitive, device.handle), device, self.kind)
        if device.inner is self.device.inner:
            # autodiff <-> inner of the same device
            return Tensor.from_inner(self.inner(), device) if device.backend.is_autodiff else self.inner()
        dst_ops = device.ops[self.kind.index]
        want = device.backend.dtype_for(self.kind.index)
        if src_b.supports_dlpack and dst_b.supports_dlpack and self.dtype is want:
            try:
                p = dst_ops.from_dlpack(self.device.inner.ops[self.kind.index].detach(self.inner().primitive))
                return Tensor(dst_ops.to_device(p, device.handle), device, self.kind)
            except Exception:
                pass
        arr = self.to_numpy()
        return Tensor(dst_ops.from_numpy(arr, want, device.handle), device, self.kind)

    # ------------------------------------------------------------------ autodiff (Burn's API)
    def inner(self) -> Tensor:
        """The same tensor on the inner backend of an autodiff backend (no graph); itself otherwise."""
        dev = self.device
        inner = dev.inner
        if inner is dev:
            return self
        k = self.kind
        p = self.primitive
        t = _new_obj(Tensor)
        # an autodiff primitive unwrapped here (``Autodiff.inner`` without its frame: this runs for every parameter
        # every step); anything else asks the ops
        t.primitive = p.p if p.__class__ is _AP else self.ops.inner(p) if k is Float else p
        t.device = inner
        t.kind = k
        t.ops = inner.ops[k.index]
        return t

    @staticmethod
    def from_inner(tensor: Tensor, device: Device) -> Tensor:
        """Lift a tensor of an inner backend onto the autodiff ``device`` wrapping it (untracked).

        Raises:
            DeviceError: ``device`` does not wrap the tensor's device.
        """
        if device.inner is not tensor.device:
            from .._errors import DeviceError

            raise DeviceError(
                f"from_inner: {device} does not wrap {tensor.device}; pass the autodiff device whose "
                "inner device holds the tensor."
            )
        if device is tensor.device:
            return tensor
        k = tensor.kind
        ops = device.ops[k.index]
        t = _new_obj(Tensor)
        if k is not Float:
            t.primitive = tensor.primitive
        elif ops.__class__ is _Autodiff:  # Autodiff.from_inner without its frame (per parameter per step)
            r = t.primitive = _new_obj(_AP)
            r.p = tensor.primitive
            r.node = None
        else:
            t.primitive = ops.from_inner(tensor.primitive)
        t.device = device
        t.kind = k
        t.ops = ops
        return t

    def detach(self) -> Tensor:
        """The tensor cut from the autodiff graph (a no-op on plain backends)."""
        if self.kind is not Float:
            return self
        return Tensor(self.ops.detach(self.primitive), self.device, Float)

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        try:
            values = np.array2string(self.to_numpy(), separator=", ", threshold=1000, edgeitems=3)
        except EmberError as exc:  # pragma: no cover - defensive
            values = f"<unavailable: {exc}>"
        b = self.device.backend
        return (
            "Tensor {\n"
            f"  data:\n{values},\n"
            f"  shape:  {list(self.shape)},\n"
            f"  device:  {self.device.name},\n"
            f"  backend:  {b.name!r},\n"
            f"  kind:  {self.kind.name!r},\n"
            f"  dtype:  {self.dtype.value!r},\n"
            "}"
        )

    __str__ = __repr__

    __hash__ = object.__hash__

    def __reduce__(self) -> Any:
        # pickling copies the data; the device is re-resolved by name in the receiving process
        return (_unpickle, (self.to_data(), self.device, self.kind))


def _unpickle(data: TensorData, device: Device, kind: Kind) -> Tensor:
    t = Tensor.from_data(data, device)
    if t.kind is not kind:
        t = {Float: t.float, Int: t.int, Bool: t.bool}[kind]()
    return t


def new(p: Any, device: Device, kind: Kind, ops: Any) -> Tensor:
    """Fast internal constructor (skips the ops look-up)."""
    t = _new_obj(Tensor)
    t.primitive = p
    t.device = device
    t.kind = kind
    t.ops = ops
    return t


_new_obj = object.__new__
