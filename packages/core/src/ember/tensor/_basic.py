"""Shape and indexing tensor ops (Burn's ``BasicOps``): reshape, permute, slicing, gather,
scatter, cat, stack, masks, ...

Indexing with ``t[...]`` accepts ints, slices (any step, negative indices), ``None`` (new dim)
and ``...``; an int removes its dim (numpy semantics).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import ShapeError
from .._kind import Bool
from . import _core
from ._core import op_error, wrap
from ._util import as_shape, norm_dim, numel


class BasicOps:
    __slots__ = ()

    def reshape(self, shape: Sequence[int]) -> Any:
        """The same elements (C order) with ``shape``. An entry ``-1`` is inferred (at most one);
        ``0`` keeps that dim's current size (Burn's convention).

        Raises:
            ShapeError: the element counts differ, or several ``-1``.
        """
        cur = self.shape  # type: ignore[attr-defined]
        if isinstance(shape, int):
            shape = (shape,)
        shp = [int(s) for s in shape]
        for i, s in enumerate(shp):
            if s == 0:
                if i >= len(cur):
                    raise ShapeError(f"reshape: 0 at position {i} but the tensor has rank {len(cur)}.")
                shp[i] = cur[i]
        neg = [i for i, s in enumerate(shp) if s == -1]
        total = numel(cur)
        if len(neg) > 1:
            raise ShapeError(f"reshape: {shape!r} has more than one -1; only one dim can be inferred.")
        if any(s < -1 for s in shp):
            raise ShapeError(f"reshape: {shape!r} has a negative size other than -1.")
        if neg:
            rest = numel([s for s in shp if s != -1])
            if rest == 0 or total % rest:
                raise ShapeError(
                    f"reshape: cannot infer -1 in {list(shape)} for {total} elements (shape {list(cur)})."
                )
            shp[neg[0]] = total // rest
        new_shape = tuple(shp)
        if numel(new_shape) != total:
            raise ShapeError(
                f"reshape: shape {list(cur)} ({total} elements) cannot become {list(new_shape)} "
                f"({numel(new_shape)} elements)."
            )
        if new_shape == cur:
            return self
        return wrap(self.ops.reshape(self.primitive, new_shape), self, self.kind)  # type: ignore[attr-defined]

    def unsqueeze_dim(self, dim: int) -> Any:
        """A new dim of size 1 inserted at ``dim`` (``-1`` appends)."""
        r = self.rank  # type: ignore[attr-defined]
        d = norm_dim("unsqueeze_dim", dim, r + 1)
        s = self.shape  # type: ignore[attr-defined]
        return self.reshape(s[:d] + (1,) + s[d:])

    def expand(self, shape: Sequence[int]) -> Any:
        """Broadcast to ``shape`` (numpy rules; ``-1`` keeps a dim). No data is copied where the
        library allows views.

        Raises:
            ShapeError: a dim of size other than 1 would change, or the rank would shrink.
        """
        cur = self.shape  # type: ignore[attr-defined]
        shp = list(as_shape("expand", [1 if s == -1 else s for s in shape])) if not any(s == -1 for s in shape) else list(shape)
        if len(shp) < len(cur):
            raise ShapeError(f"expand: cannot expand shape {list(cur)} to the lower rank {list(shape)}.")
        off = len(shp) - len(cur)
        for i, s in enumerate(shp):
            if s == -1:
                if i < off:
                    raise ShapeError(f"expand: -1 at new leading dim {i} of {list(shape)}.")
                shp[i] = cur[i - off]
        for i, c in enumerate(cur):
            if c != 1 and c != shp[i + off]:
                raise ShapeError(
                    f"expand: dim {i} of shape {list(cur)} has size {c} and cannot become {shp[i + off]}; "
                    "only size-1 dims expand."
                )
        tgt = tuple(shp)
        if tgt == cur:
            return self
        return wrap(self.ops.expand(self.primitive, tgt), self, self.kind)  # type: ignore[attr-defined]

    @staticmethod
    def stack(tensors: Sequence[Any], dim: int) -> Any:
        """Join tensors of equal shape along a new ``dim``.

        Raises:
            ShapeError: empty list or shapes differ. DeviceError/KindError: mixed devices/kinds.
        """
        ts = list(tensors)
        if not ts:
            raise ShapeError("stack: got no tensors; pass at least one.")
        first = ts[0]
        d = norm_dim("stack", dim, first.rank + 1)
        for t in ts[1:]:
            if t.device is not first.device or t.kind is not first.kind:
                from ._util import check_same

                check_same("stack", first, t)
            if t.shape != first.shape:
                raise ShapeError(f"stack: shapes differ: {list(first.shape)} and {list(t.shape)}; all must be equal.")
        try:
            p = first.ops.stack([t.primitive for t in ts], d)
        except Exception as exc:
            raise op_error("stack", exc, *ts) from exc
        return wrap(p, first, first.kind)

    def mask_fill(self, mask: Any, value: Any) -> Any:
        """``value`` where the Bool ``mask`` (broadcast to this shape) is true, else self."""
        if mask.kind is not Bool:
            from .._errors import KindError

            raise KindError(f"mask_fill: the mask must be a Bool tensor, got {mask.kind}; use .bool().")
        v = _core.scalar_for("mask_fill", self, value)  # type: ignore[arg-type]
        try:
            p = self.ops.mask_fill(self.primitive, mask.primitive, v)  # type: ignore[attr-defined]
        except Exception as exc:
            raise op_error("mask_fill", exc, self, mask) from exc
        return wrap(p, self, self.kind)  # type: ignore[arg-type]
