"""Where the scales go: the shapes a :class:`QuantLevel` gives a tensor, and the checks that a scheme fits it."""

from __future__ import annotations

import math

from ..tensor._base import TensorBase
from ._errors import QuantizationError
from ._scheme import QuantScheme

__all__ = ["Layout", "layout"]


class Layout:
    """The shapes of one (tensor shape, level) pair.

    Attributes:
        shape: the tensor's shape.
        view: the shape the values are reshaped to so that scales broadcast (the tensor's shape, or with dim
            ``axis`` split into ``(blocks, size)`` for a block level).
        scale_shape: the shape of ``qparams.scale`` (``[1]``, ``[shape[axis]]``, or ``shape`` with dim ``axis``
            divided by the block size).
        bcast: ``scale_shape`` as a shape of ``view``'s rank that broadcasts against ``view``.
        reduce_dims: the dims of ``view`` reduced to get one min/max per scale.
    """

    __slots__ = ("shape", "view", "scale_shape", "bcast", "reduce_dims")

    def __init__(
        self,
        shape: tuple[int, ...],
        view: tuple[int, ...],
        scale_shape: tuple[int, ...],
        bcast: tuple[int, ...],
        reduce_dims: list[int],
    ) -> None:
        self.shape = shape
        self.view = view
        self.scale_shape = scale_shape
        self.bcast = bcast
        self.reduce_dims = reduce_dims


def layout(op: str, scheme: QuantScheme, shape: tuple[int, ...]) -> Layout:
    """The :class:`Layout` of ``scheme``'s level on a tensor of ``shape``.

    Raises:
        QuantizationError: the axis is out of range, or the block size does not divide ``shape[axis]``.
    """
    if not isinstance(scheme, QuantScheme):
        raise QuantizationError(f"{op}: expected a QuantScheme, got {type(scheme).__name__}.")
    lv = scheme.level
    rank = len(shape)
    if lv.kind == "tensor":
        return Layout(shape, shape, (1,), (1,) * rank, list(range(rank)))
    a = lv.dim
    assert a is not None
    if not -rank <= a < rank:
        raise QuantizationError(
            f"{op}: the level {lv!r} needs a dim {a}, but the tensor has shape {list(shape)} (rank {rank}); "
            f"pass an axis in [-{rank}, {rank})."
        )
    a %= rank
    n = shape[a]
    if lv.kind == "axis":
        bcast = tuple(n if i == a else 1 for i in range(rank))
        return Layout(shape, shape, (n,), bcast, [i for i in range(rank) if i != a])
    size = lv.size
    assert size is not None
    if n % size:
        raise QuantizationError(
            f"{op}: the level {lv!r} splits dim {a} of size {n} into blocks of {size}, which does not divide it; "
            f"pick a block size dividing {n} or pad the tensor."
        )
    view = shape[:a] + (n // size, size) + shape[a + 1 :]
    bcast = shape[:a] + (n // size, 1) + shape[a + 1 :]
    scale_shape = shape[:a] + (n // size,) + shape[a + 1 :]
    return Layout(shape, view, scale_shape, bcast, [a + 1])


def check_finite(op: str, t: TensorBase, what: str) -> None:
    """Raise if the Float tensor ``t`` holds NaN or an infinity (skipped inside a compiled step, where values
    cannot be read).

    Raises:
        QuantizationError: names the op, ``what`` and the count of bad values.
    """
    if not t.device.backend.is_concrete(t.inner().primitive) or t.num_elements() == 0:
        return
    # the sum is NaN or +-inf when an element is: one reduction and one host read (finite values whose sum
    # overflows, or an f16 sum, take the exact check below)
    if math.isfinite(float(t.sum().into_scalar())):  # type: ignore[attr-defined]
        return
    # min and max propagate NaN and are +-inf when an element is
    ends = t.cat([t.min(), t.max()], 0) if t.num_elements() > 2 else t.reshape((-1,))
    if not bool(ends.is_finite().all().into_scalar()):
        bad = int((~t.is_finite()).int().sum().into_scalar())
        raise QuantizationError(
            f"{op}: {what} holds {bad} NaN or infinite value(s) of {t.num_elements()}; quantization maps finite "
            "values to integers only. Clean the input first (e.g. nan_to_num or clamp) or find where it came from."
        )
