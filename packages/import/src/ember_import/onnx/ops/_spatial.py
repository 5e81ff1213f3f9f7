"""Shared geometry of the convolution, pooling and resampling converters (family F4).

ONNX spatial ops take ``kernel_shape``, ``strides``, ``dilations`` and either explicit ``pads``
(``[x1_begin, x2_begin, ..., x1_end, x2_end, ...]``) or ``auto_pad`` (``NOTSET``, ``VALID``, ``SAME_UPPER``,
``SAME_LOWER``). The formulas are the ONNX operator specification's (Conv, AveragePool) and its reference
implementation (``onnx/reference/ops/op_pool_common.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ember import Tensor

from .._errors import OnnxImportError
from .._ir import Node
from .._validate import validating

__all__ = ["Geometry", "geometry", "pad_or_crop", "spatial_rank"]


class Geometry:
    """Per spatial dim: ``kernel``, ``strides``, ``dilations``, and pads ``begin``/``end``."""

    __slots__ = ("kernel", "strides", "dilations", "begin", "end")

    def __init__(self, kernel: list[int], strides: list[int], dilations: list[int], begin: list[int],
                 end: list[int]) -> None:
        self.kernel, self.strides, self.dilations = kernel, strides, dilations
        self.begin, self.end = begin, end

    def effective(self) -> list[int]:
        """The dilated kernel extent ``d (k - 1) + 1`` per dim."""
        return [d * (k - 1) + 1 for k, d in zip(self.kernel, self.dilations)]

    def symmetric(self) -> bool:
        """Whether the pads are the same at both ends of every dim."""
        return self.begin == self.end


def spatial_rank(node: Node, x: Tensor, minimum: int = 1) -> int:
    """The number of spatial dims of ``x`` (``[N, C, *spatial]``).

    Raises:
        OnnxImportError: ``x`` has fewer than ``2 + minimum`` dims.
    """
    nd = x.rank - 2
    if nd < minimum:
        raise OnnxImportError(f"{node.where()}: expected an input of shape [N, C, *spatial] with at least "
                              f"{minimum} spatial dim(s), got shape {list(x.shape)}.")
    return nd


def _ints_attr(node: Node, name: str, nd: int, default: int) -> list[int]:
    v = node.attr(name, None)
    if v is None:
        return [default] * nd
    v = [int(i) for i in v]
    if len(v) != nd:
        raise OnnxImportError(f"{node.where()}: attribute {name!r} must have {nd} values (one per spatial dim), "
                              f"got {v}; the model is malformed.")
    return v


def geometry(node: Node, sizes: Sequence[int], kernel: Sequence[int] | None = None) -> Geometry:
    """The kernel, strides, dilations and resolved pads of ``node`` for input spatial ``sizes``.

    ``kernel`` defaults to the ``kernel_shape`` attribute. ``SAME_UPPER``/``SAME_LOWER`` give the output size
    ``ceil(n / s)`` with total padding ``max(0, (out - 1) s + d (k - 1) + 1 - n)``, the odd one at the end
    (UPPER) or the beginning (LOWER); ``VALID`` pads nothing; ``NOTSET`` reads ``pads`` (default zeros).

    Raises:
        OnnxImportError: an attribute of the wrong length or an unknown ``auto_pad``.
    """
    nd = len(sizes)
    k = list(kernel) if kernel is not None else _ints_attr(node, "kernel_shape", nd, 0)
    with validating():  # only rejects a bad model (a kernel read from the data is kept as code)
        bad = len(k) != nd or any(i < 1 for i in k)
    if bad:
        raise OnnxImportError(f"{node.where()}: kernel_shape must have {nd} positive values, got {k}.")
    s = _ints_attr(node, "strides", nd, 1)
    d = _ints_attr(node, "dilations", nd, 1)
    auto = node.attr("auto_pad", "NOTSET")
    auto = auto.decode() if isinstance(auto, bytes) else str(auto)
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        total = [max(0, (-(-n // si) - 1) * si + di * (ki - 1) + 1 - n) for n, si, di, ki in zip(sizes, s, d, k)]
        small = [t // 2 for t in total]
        big = [t - t // 2 for t in total]
        begin, end = (small, big) if auto == "SAME_UPPER" else (big, small)
    elif auto == "VALID":
        begin, end = [0] * nd, [0] * nd
    elif auto == "NOTSET":
        pads = _ints_attr(node, "pads", 2 * nd, 0)
        begin, end = pads[:nd], pads[nd:]
    else:
        raise OnnxImportError(f"{node.where()}: auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got "
                              f"{auto!r}.")
    return Geometry(k, s, d, begin, end)


def pad_or_crop(x: Tensor, begin: Sequence[int], end: Sequence[int], value: float | int = 0) -> Tensor:
    """``x`` padded with ``value`` (positive amounts) or cropped (negative amounts) on its last
    ``len(begin)`` dims, ``begin[i]``/``end[i]`` elements before/after dim ``i``."""
    nd = len(begin)
    lead = x.rank - nd
    if any(b < 0 for b in begin) or any(e < 0 for e in end):
        ranges: list[Any] = [None] * lead
        for n, b, e in zip(x.shape[lead:], begin, end):
            ranges.append((max(0, -b), n - max(0, -e)))
        x = x.slice(ranges)
    pairs = [(max(0, b), max(0, e)) for b, e in zip(begin, end)]
    if any(a or b for a, b in pairs):
        x = x.pad(pairs, value=value)
    return x
