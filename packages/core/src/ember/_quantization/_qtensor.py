"""``QuantizedTensor``: integer values plus scales (Burn's quantized float tensor, ``TensorPrimitive::QFloat``)."""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, NoReturn

from .._kind import Float, Int, Kind
from ..backend._device import Device
from ..tensor import _core
from ..tensor._base import TensorT
from ._errors import QuantizationError
from ._layout import layout
from ._pack import unpack_int4
from ._scheme import QParams, QuantScheme
from ._validate import check_parts

__all__ = ["QuantizedTensor"]


@dataclasses.dataclass(init=False, repr=False, eq=False)
class QuantizedTensor(Generic[TensorT]):
    """A float tensor stored as integers and scales: what :meth:`Tensor.quantize` returns.

    It knows its :attr:`shape`, :attr:`device`, :attr:`scheme` and :attr:`qparams`, moves between devices and
    backends (:meth:`to_device`), prints, saves in records (as it is: integers and scales), and takes part in
    :func:`~ember.quantization.quantized_matmul` / :func:`~ember.quantization.quantized_linear`. Every other
    tensor op raises :class:`QuantizationError`: call :meth:`dequantize` first (never silently wrong numbers).

    Attributes:
        values: the integer storage, an Int tensor on :attr:`device`: int8 of :attr:`shape` for 8-bit value types;
            for the int4 types a 1-D uint8 tensor of ``ceil(numel / 2)`` bytes, two values per byte, the first in the
            low nibble (ONNX's int4 layout), row-major.
        scheme: the :class:`QuantScheme`.
        qparams: the :class:`QParams` (scales in the scheme's scale type; int8 zero points for affine types).
    """

    # a dataclass (fields values, scheme, qparams, _shape) so that tree walks that handle dataclasses (ember_jax.jit's
    # arguments and results) carry it; built with __init__ or trusted(), immutable
    # _derived: tensors computed from the immutable parts once and reused (the int8 kernels' column sums of a
    # weight, its scales shaped for the rescale; see ember._quantization._matmul); not a field, never saved
    __slots__ = ("values", "scheme", "qparams", "_shape", "_derived", "__weakref__")

    values: TensorT
    scheme: QuantScheme
    qparams: QParams[TensorT]
    _shape: tuple[int, ...]

    def __init__(self, values: TensorT, shape: tuple[int, ...], scheme: QuantScheme, qparams: QParams[TensorT]) -> None:
        """Assemble a quantized tensor from its parts (checked; :meth:`Tensor.quantize` is the usual way).

        Raises:
            QuantizationError: parts of the wrong type, dtype, shape or device.
        """
        check_parts(values, tuple(shape), scheme, qparams)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "scheme", scheme)
        object.__setattr__(self, "qparams", qparams)
        object.__setattr__(self, "_shape", tuple(int(s) for s in shape))

    @classmethod
    def trusted(
        cls, values: TensorT, shape: tuple[int, ...], scheme: QuantScheme, qparams: QParams[TensorT]
    ) -> QuantizedTensor[TensorT]:
        """Assemble without the checks (no host reads), from parts that quantization code made itself."""
        out = object.__new__(cls)
        object.__setattr__(out, "values", values)
        object.__setattr__(out, "scheme", scheme)
        object.__setattr__(out, "qparams", qparams)
        object.__setattr__(out, "_shape", tuple(shape))
        return out

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"QuantizedTensor is immutable (tried to set {name!r}).")

    def derived(self, key: str, make: Any) -> Any:
        """``make()``, computed once per quantized tensor and kept under ``key`` (the parts never change, so
        neither does anything computed from them). Results holding values that the host cannot read now (jax
        tracers, a torch capture) are returned without being kept, so that no traced value outlives its trace.
        """
        try:
            cache = self._derived
        except AttributeError:
            cache = {}
            object.__setattr__(self, "_derived", cache)
        hit = cache.get(key)
        if hit is not None:
            return hit
        out = make()
        if all(self.backend.is_concrete(t.inner().primitive) for t in _tensors(out)):
            cache[key] = out
        return out

    def kernel_cache(self) -> dict[Any, Any]:
        """A dict kept with this quantized tensor where backends keep prepacked forms of its values (torch's
        prepacked int8 convolution weights; see :meth:`~ember.backend.contract.QuantOps.quantized_conv2d`).
        Never saved; callers pass it only for concrete (not traced) values."""
        try:
            cache = self._derived
        except AttributeError:
            cache = {}
            object.__setattr__(self, "_derived", cache)
        return cache.setdefault("kernel-cache", {})  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the float tensor it stands for."""
        return self._shape

    def dims(self) -> list[int]:
        return list(self._shape)

    @property
    def rank(self) -> int:
        return len(self._shape)

    ndim = rank

    @property
    def device(self) -> Device:
        return self.values.device

    @property
    def backend(self) -> Any:
        return self.values.device.backend

    @property
    def kind(self) -> Kind:
        """``Float``: a quantized tensor stands for float values."""
        return Float

    @property
    def dtype(self) -> Any:
        """The storage element type (``DType.INT8``, or ``DType.UINT8`` for packed int4)."""
        return self.values.dtype

    def num_elements(self) -> int:
        n = 1
        for s in self._shape:
            n *= s
        return n

    def storage_bytes(self) -> int:
        """Bytes of values, scales and zero points (what a record stores, envelopes aside)."""
        total = self.values.num_elements() * self.values.dtype.itemsize
        for t in (self.qparams.scale, self.qparams.zero_point):
            if t is not None:
                total += t.num_elements() * t.dtype.itemsize
        return total

    # ------------------------------------------------------------------ values
    def dequantize(self) -> TensorT:
        """The float tensor: ``(q - zero_point) * scale`` (ONNX ``DequantizeLinear``), of the backend's float type
        on :attr:`device` (untracked under ``Autodiff``)."""
        dev = self.device
        inner = dev.inner
        q = self.inner()
        lay = layout("dequantize", self.scheme, self._shape)
        v = q.int_values().reshape(lay.view)
        s = q.qparams.scale.reshape(lay.bcast)
        zp = q.qparams.zero_point
        zp = None if zp is None else zp.reshape(lay.bcast)
        ops = inner.ops[0]
        p = ops.dequantize(v.primitive, s.primitive, None if zp is None else zp.primitive, inner.backend.float_dtype)
        out = _core.new(p, inner, Float, inner.ops[Float.index]).reshape(self._shape)
        return out if inner is dev else out.from_inner(out, dev)

    def int_values(self) -> TensorT:
        """The integers as an int8 Int tensor of :attr:`shape` (int4 values unpacked)."""
        if self.scheme.value.packed:
            return unpack_int4(self.values, self._shape)
        return self.values

    # ------------------------------------------------------------------ movement
    def _map(self, fn: Any) -> QuantizedTensor[TensorT]:
        qp = self.qparams
        zp = None if qp.zero_point is None else fn(qp.zero_point)
        return QuantizedTensor.trusted(fn(self.values), self._shape, self.scheme, QParams(fn(qp.scale), zp))

    def to_device(self, device: Device) -> QuantizedTensor[TensorT]:
        """The same integers and scales on ``device`` (any backend; ``Tensor.to_device`` moves each part).

        Raises:
            QuantizationError: the destination backend cannot hold the scale type (bfloat16 on numpy).
        """
        if device is self.device:
            return self
        dt = self.qparams.scale.dtype
        if dt not in device.backend.supported_dtypes:
            raise QuantizationError(
                f"to_device: the scales are {dt}, which the {device.backend.name} backend cannot hold; requantize "
                "with QuantParam.F32 or F16 first."
            )

        def move(t: TensorT) -> TensorT:
            out = t.to_device(device)
            return out if out.dtype is t.dtype else out.cast(t.dtype)

        return self._map(move)

    to = to_device

    def detach(self) -> QuantizedTensor[TensorT]:
        """Itself: a quantized tensor has no graph."""
        return self

    def inner(self) -> QuantizedTensor[TensorT]:
        """The same tensor on the inner device of an autodiff device (itself elsewhere)."""
        dev = self.device
        if dev.inner is dev:
            return self
        return self._map(lambda t: t.inner())

    def from_inner_on(self, device: Device) -> QuantizedTensor[TensorT]:
        """The same tensor on the autodiff ``device`` that wraps its device."""
        if device is self.device:
            return self
        return self._map(lambda t: t.from_inner(t, device))

    # ------------------------------------------------------------------ display
    def __repr__(self) -> str:
        qp = self.qparams
        scale = qp.scale
        zp = "none" if qp.zero_point is None else f"{list(qp.zero_point.shape)} {qp.zero_point.dtype}"
        try:
            import numpy as np

            vals = np.array2string(self.int_values().to_numpy(), separator=", ", threshold=100, edgeitems=2)
        except Exception as exc:  # pragma: no cover - defensive
            vals = f"<unavailable: {exc}>"
        return (
            "QuantizedTensor {\n"
            f"  values:\n{vals},\n"
            f"  shape:  {list(self._shape)},\n"
            f"  device:  {self.device.name},\n"
            f"  backend:  {self.backend.name!r},\n"
            f"  scheme:  {self.scheme.value.name} {self.scheme.level!r} scale {self.scheme.param.value},\n"
            f"  storage:  {self.values.dtype} {list(self.values.shape)},\n"
            f"  scale:  {list(scale.shape)} {scale.dtype},\n"
            f"  zero_point:  {zp},\n"
            "}"
        )

    __str__ = __repr__

    # ------------------------------------------------------------------ everything else: explicit errors
    def _unsupported(self, op: str) -> NoReturn:
        if op in ("primitive", "ops"):  # a Tensor op met a QuantizedTensor operand
            op = "this tensor op"
        raise QuantizationError(
            f"{op}: a QuantizedTensor ({self.scheme.value.name}, shape {list(self._shape)}) does not run this op "
            "natively. Call .dequantize() first to get the float tensor, or use ember.quantization.quantized_matmul "
            "/ quantized_linear for the int8 kernels."
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in QuantizedTensor.__slots__:
            raise AttributeError(name)
        if hasattr(_core.Tensor, name):
            self._unsupported(name)
        raise AttributeError(f"'QuantizedTensor' object has no attribute {name!r}")

    def _binary(name: str) -> Any:  # type: ignore[misc]  # noqa: N805
        def method(self: QuantizedTensor, *args: Any) -> NoReturn:
            self._unsupported(name)

        method.__name__ = name
        return method

    for _n in (
        "__add__",
        "__radd__",
        "__sub__",
        "__rsub__",
        "__mul__",
        "__rmul__",
        "__truediv__",
        "__rtruediv__",
        "__floordiv__",
        "__mod__",
        "__pow__",
        "__matmul__",
        "__rmatmul__",
        "__neg__",
        "__abs__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__getitem__",
        "__float__",
        "__int__",
        "__bool__",
        "__iter__",
        "__len__",
        "__array__",
        "__index__",
    ):
        locals()[_n] = _binary(_n)
    del _n, _binary

    __hash__ = object.__hash__

    def __eq__(self, other: object) -> bool:
        return self is other

    def __reduce__(self) -> Any:
        # pickling copies the data with its element types (Tensor's own pickling would widen int8 to the
        # backend's int type); the device is re-resolved by name in the receiving process
        qp = self.qparams
        zp = None if qp.zero_point is None else qp.zero_point.to_data()
        return (_unpickle, (self.values.to_data(), self._shape, self.scheme, qp.scale.to_data(), zp, self.device))


def _tensors(out: Any) -> tuple[Any, ...]:
    """The tensors of a :meth:`QuantizedTensor.derived` result: a tensor, a tuple of them, or a quantized tensor (a
    view of the weight, e.g. reshaped: its values and qparams)."""
    parts: list[Any] = []
    for t in out if isinstance(out, tuple) else (out,):
        if isinstance(t, QuantizedTensor):
            zp = t.qparams.zero_point
            parts += [t.values, t.qparams.scale] + ([] if zp is None else [zp])
        else:
            parts.append(t)
    return tuple(parts)


def _unpickle(
    values: Any, shape: tuple[int, ...], scheme: QuantScheme, scale: Any, zp: Any, device: Device
) -> QuantizedTensor[Any]:
    def load(d: Any, kind: Kind) -> Any:
        return _core.Tensor.from_data(d, device, kind, dtype=d.dtype)

    z = None if zp is None else load(zp, Int)
    return QuantizedTensor(load(values, Int), shape, scheme, QParams(load(scale, Float), z))
