"""The quantization scheme: value type, level and scale type (Burn's ``QuantScheme``), and ``QParams``.

Burn's ``burn_tensor::quantization`` names: ``QuantValue`` (the integer type and its mode), ``QuantLevel``
(``Tensor`` or ``Block``; Ember adds PyTorch's per-channel ``axis``), ``QuantParam`` (the scale's float type) and
``QuantScheme`` holding the three. Ember's value types:

=========  ===========  ================  ======================  ==========================
value      storage      integer range      zero point              source
=========  ===========  ================  ======================  ==========================
``Q8S``    int8         ``[-127, 127]``    none (symmetric)        Burn ``Q8S``; torch ``qint8`` symmetric with
                                                                   ``quant_min=-127`` (restricted range)
``Q8F``    int8         ``[-128, 127]``    int8 (affine)           ONNX ``QuantizeLinear`` int8, torch ``qint8``
                                                                   per_tensor_affine
``Q4S``    uint8, two   ``[-7, 7]``        none (symmetric)        Burn ``Q4S``
           per byte
``Q4F``    uint8, two   ``[-8, 7]``        int8 in ``[-8, 7]``     ONNX ``QuantizeLinear`` int4 (opset 21)
           per byte     (affine)
=========  ===========  ================  ======================  ==========================

Burn's other value types (``Q2S``, ``Q2F``, ``E4M3``, ``E5M2``, ``E2M1``) are not provided.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Any, Generic

from .._dtype import DType
from ..tensor._base import TensorT
from ._errors import QuantizationError

__all__ = ["QuantValue", "QuantLevel", "QuantParam", "QuantScheme", "QParams"]


class QuantValue(enum.Enum):
    """The integer type of the quantized values and its mode (Burn's ``QuantValue``).

    ``S`` values are symmetric: zero maps to the integer 0, no zero point, the range is symmetric (``-qmax`` to
    ``qmax``). ``F`` values use the full range of the integer type with a zero point (affine, ONNX's and
    PyTorch's ``per_tensor_affine``).
    """

    Q8S = "q8s"
    Q8F = "q8f"
    Q4S = "q4s"
    Q4F = "q4f"

    @property
    def bits(self) -> int:
        """8 or 4."""
        return 8 if self in (QuantValue.Q8S, QuantValue.Q8F) else 4

    @property
    def symmetric(self) -> bool:
        """Whether the value type has no zero point (``Q8S``, ``Q4S``)."""
        return self in (QuantValue.Q8S, QuantValue.Q4S)

    @property
    def packed(self) -> bool:
        """Whether two values share one byte of storage (the int4 types)."""
        return self.bits == 4

    @property
    def range(self) -> tuple[int, int]:
        """``(qmin, qmax)``, the integers the values take (both included)."""
        return _RANGES[self._value_]  # keyed by the str value: an Enum member hashes in Python, a str in C

    @property
    def storage_dtype(self) -> DType:
        """The element type of :attr:`QuantizedTensor.values`: int8, or uint8 for two packed int4 values."""
        return DType.UINT8 if self.packed else DType.INT8


_RANGES = {"q8s": (-127, 127), "q8f": (-128, 127), "q4s": (-7, 7), "q4f": (-8, 7)}


@dataclass(frozen=True)
class QuantLevel:
    """Which elements share one scale (Burn's ``QuantLevel``; PyTorch's ``qscheme``).

    Build with :meth:`tensor`, :meth:`axis` or :meth:`block`. Attributes: ``kind`` is ``"tensor"``, ``"axis"`` or
    ``"block"``; ``dim`` the dim the scales run along (``axis`` and ``block`` levels; negative counts from the end)
    and ``size`` the block length (``block`` only).
    """

    kind: str = "tensor"
    dim: int | None = None
    size: int | None = None

    @staticmethod
    def tensor() -> QuantLevel:
        """One scale (and zero point) for the whole tensor: ``qparams.scale`` has shape ``[1]``."""
        return QuantLevel("tensor")

    @staticmethod
    def axis(axis: int) -> QuantLevel:
        """One scale per index of dim ``axis`` (PyTorch's ``per_channel_affine``, ONNX's ``axis`` attribute):
        ``qparams.scale`` has shape ``[shape[axis]]``. For an Ember ``Linear`` weight ``[d_input, d_output]``,
        per output channel is ``axis(1)`` (``axis(-1)``).

        Raises:
            QuantizationError: ``axis`` is not an int.
        """
        _check_int("QuantLevel.axis", "axis", axis)
        return QuantLevel("axis", dim=axis)

    @staticmethod
    def block(size: int, axis: int = -1) -> QuantLevel:
        """One scale per run of ``size`` consecutive elements along dim ``axis`` (Burn's ``QuantLevel::Block``,
        ONNX's ``block_size`` with ``axis``; GPTQ/AWQ "group size"). ``shape[axis]`` must be a multiple of
        ``size``; ``qparams.scale`` has the tensor's shape with dim ``axis`` divided by ``size``. For an Ember
        ``Linear`` weight ``[d_input, d_output]``, blocks along the input features are ``block(size, axis=0)``.

        Raises:
            QuantizationError: ``size`` is not a positive int, or ``axis`` not an int.
        """
        _check_int("QuantLevel.block", "axis", axis)
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise QuantizationError(f"QuantLevel.block: size must be a positive int, got {size!r}; e.g. block(32).")
        return QuantLevel("block", dim=axis, size=size)

    def __repr__(self) -> str:
        if self.kind == "tensor":
            return "QuantLevel.tensor()"
        if self.kind == "axis":
            return f"QuantLevel.axis({self.dim})"
        return f"QuantLevel.block({self.size}, axis={self.dim})"


def _check_int(op: str, name: str, v: Any) -> None:
    if not isinstance(v, int) or isinstance(v, bool):
        raise QuantizationError(f"{op}: {name} must be an int, got {v!r}.")


class QuantParam(enum.Enum):
    """The float type the scales are stored in (Burn's ``QuantParam``): ``F32`` (default), ``F16`` or ``BF16``.

    Scales are rounded to this type once, when the qparams are made, and the same rounded scale quantizes and
    dequantizes. ``BF16`` needs a backend that holds bfloat16 (torch, jax).
    """

    F32 = "float32"
    F16 = "float16"
    BF16 = "bfloat16"

    @property
    def dtype(self) -> DType:
        return DType(self.value)


@dataclass(frozen=True)
class QuantScheme:
    """How a tensor is quantized: value type, level and scale type (Burn's ``QuantScheme``).

    Frozen; change one part with :meth:`with_value`, :meth:`with_level`, :meth:`with_param`. The default is
    int8 symmetric, one scale per tensor, float32 scales (Burn's default ``QuantScheme``).

    Args:
        value: a :class:`QuantValue` (or its name, ``"q8s"``).
        level: a :class:`QuantLevel`.
        param: a :class:`QuantParam` (or ``"float32"``, ``"float16"``, ``"bfloat16"``).

    Raises:
        QuantizationError: a value, level or param of the wrong type; an int4 block level of odd size.
    """

    value: QuantValue = QuantValue.Q8S
    level: QuantLevel = QuantLevel("tensor")
    param: QuantParam = QuantParam.F32

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "value", QuantValue(self.value))
            object.__setattr__(self, "param", QuantParam(self.param))
        except ValueError as exc:
            raise QuantizationError(
                f"QuantScheme: {str(exc)[:100]}; value is one of {[v.value for v in QuantValue]}, param one of "
                f"{[p.value for p in QuantParam]}."
            ) from None
        if not isinstance(self.level, QuantLevel):
            raise QuantizationError(
                f"QuantScheme: level must be a QuantLevel (QuantLevel.tensor(), .axis(a), .block(n)), got "
                f"{self.level!r}."
            )

    def with_value(self, value: QuantValue) -> QuantScheme:
        return replace(self, value=value)

    def with_level(self, level: QuantLevel) -> QuantScheme:
        return replace(self, level=level)

    def with_param(self, param: QuantParam) -> QuantScheme:
        return replace(self, param=param)

    def to_dict(self) -> dict[str, Any]:
        """The scheme as plain data (records store it): ``{"value", "level", "axis", "size", "param"}``."""
        lv = self.level
        return {"value": self.value.value, "level": lv.kind, "axis": lv.dim, "size": lv.size, "param": self.param.value}

    @staticmethod
    def from_dict(d: Any) -> QuantScheme:
        """The scheme of :meth:`to_dict`'s data.

        Raises:
            QuantizationError: the data is not such a dict (names what was found).
        """
        try:
            kind = d["level"]
            if kind == "tensor":
                level = QuantLevel.tensor()
            elif kind == "axis":
                level = QuantLevel.axis(d["axis"])
            elif kind == "block":
                level = QuantLevel.block(d["size"], d["axis"])
            else:
                raise QuantizationError(f"unknown level {str(kind)[:40]!r}")
            return QuantScheme(d["value"], level, d["param"])
        except (KeyError, TypeError) as exc:
            raise QuantizationError(
                f"QuantScheme.from_dict: expected a map with keys value, level, axis, size, param; missing or "
                f"wrong: {str(exc)[:80]}."
            ) from None


@dataclass(frozen=True)
class QParams(Generic[TensorT]):
    """The quantization parameters of one tensor (Burn's ``QParams``): the scales and, for affine value types, the
    zero points.

    Attributes:
        scale: Float tensor of the scheme's scale type, shape ``[1]`` (tensor level), ``[shape[axis]]`` (axis
            level) or the tensor's shape with dim ``axis`` divided by the block size (block level). Positive.
        zero_point: ``None`` for symmetric value types; else an Int tensor (int8) of the scale's shape holding
            integers in the value type's range.
    """

    scale: TensorT
    zero_point: TensorT | None = None
