"""Reductions and scans of numeric tensors (Burn's ``Numeric``): sum / mean / prod / max / min (whole tensor,
``*_dim``, ``*_dims``), argmax / argmin, ``max_abs``, any / all, cumsum / cumprod / cummax / cummin, and the
helpers the numeric mixins share (``_call``, ``_need``, ``_dim`` ...). The shape and value conventions are
:mod:`._numeric`'s: ``*_dim`` keeps the reduced dim with size 1, whole-tensor reductions return shape ``[1]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._errors import KindError, ShapeError
from .._kind import Bool, Float, Int
from ._base import TensorBase
from ._core import NUM, dim_of, new, op_error, wrap
from ._util import norm_dim, norm_dims

__all__ = ["ReduceOps"]


class ReduceOps(TensorBase):
    __slots__ = ()

    # ------------------------------------------------------------------ helpers
    def _call(self, op: str, fn: Any, kind: Any = None) -> Any:
        ops = self.ops
        try:
            p = fn(ops, self.primitive)
        except Exception as exc:
            raise op_error(op, exc, self) from exc
        return wrap(p, self, self.kind if kind is None else kind)

    def _need(self, op: str, kinds: tuple[Any, ...]) -> None:
        if self.kind not in kinds:
            names = " or ".join(k.name for k in kinds)
            raise KindError(
                f"{op} is not defined for {self.kind} tensors (it takes {names}); "
                "convert with .float() or .int() first."
            )

    def _dim(self, op: str, dim: int, nonempty: bool = False) -> int:
        d = norm_dim(op, dim, self.rank)
        if nonempty and self.shape[d] == 0:
            raise ShapeError(
                f"{op}: dim {dim} of shape {list(self.shape)} is empty; there is no value to return."
            )
        return d

    def _nonempty(self, op: str) -> None:
        if self.num_elements() == 0:
            raise ShapeError(f"{op}: the tensor is empty (shape {list(self.shape)}); there is no value to return.")

    def _fold(self, op: str, method: str, dims: Sequence[int]) -> Any:
        out = self
        for d in norm_dims(op, list(dims), self.rank):
            out = getattr(out, method)(d)
        return out

    # ------------------------------------------------------------------ reductions
    def sum(self) -> Any:
        """Sum of all elements, shape ``[1]``, same dtype (0 when empty)."""
        return self._reduce("sum", None)

    def sum_dim(self, dim: int) -> Any:
        """Sum over ``dim``, **kept with size 1**: ``[2, 3].sum_dim(-1) -> [2, 1]``."""
        return self._reduce("sum_dim", dim)

    def _reduce(self, op: str, dim: Any) -> Any:
        """``sum`` / ``sum_dim`` / ``mean`` / ``mean_dim`` (the hot reductions; no closures)."""
        k = self.kind
        if k is not Float and k is not Int:
            self._need(op, NUM)
        ops = self.ops
        p = self.primitive
        d = None if dim is None else dim_of(op, self, dim)
        try:
            if d is None:
                r = ops.sum(p) if op == "sum" else ops.mean(p)
            else:
                r = ops.sum_dim(p, d) if op == "sum_dim" else ops.mean_dim(p, d)
        except Exception as exc:
            raise op_error(op, exc, self) from exc
        return new(r, self.device, k, ops)

    def sum_dims(self, dims: Sequence[int]) -> Any:
        """Sum over each of ``dims``, each **kept with size 1**."""
        return self._fold("sum_dims", "sum_dim", dims)

    def sum_dims_squeeze(self, dims: Sequence[int]) -> Any:
        """Sum over each of ``dims`` with those dims removed: ``[2, 3, 4].sum_dims_squeeze([0, 1])
        -> [4]`` (Burn's ``sum_dims_squeeze``, i.e. ``sum_dims(dims).squeeze_dims(dims)``)."""
        ds = norm_dims("sum_dims_squeeze", list(dims), self.rank)
        if not ds:
            return self
        return self._fold("sum_dims_squeeze", "sum_dim", ds).squeeze_dims(ds)

    def mean(self) -> Any:
        """Mean of all elements, shape ``[1]``. Float: NaN when empty. Int: floor of the mean."""
        return self._reduce("mean", None)

    def mean_dim(self, dim: int) -> Any:
        """Mean over ``dim``, **kept with size 1** (Int: floor of the mean)."""
        return self._reduce("mean_dim", dim)

    def mean_dims(self, dims: Sequence[int]) -> Any:
        """Mean over each of ``dims``, each **kept with size 1**."""
        return self._fold("mean_dims", "mean_dim", dims)

    def prod(self) -> Any:
        """Product of all elements, shape ``[1]`` (1 when empty; Int wraps on overflow)."""
        self._need("prod", NUM)
        return self._call("prod", lambda ops, p: ops.prod(p))

    def prod_dim(self, dim: int) -> Any:
        """Product over ``dim``, **kept with size 1**."""
        self._need("prod_dim", NUM)
        d = self._dim("prod_dim", dim)
        return self._call("prod_dim", lambda ops, p: ops.prod_dim(p, d))

    def prod_dims(self, dims: Sequence[int]) -> Any:
        """Product over each of ``dims``, each **kept with size 1**."""
        return self._fold("prod_dims", "prod_dim", dims)

    def max(self) -> Any:
        """Largest element, shape ``[1]``; NaN if any element is NaN.

        Raises:
            ShapeError: empty tensor.
        """
        self._need("max", NUM)
        self._nonempty("max")
        return self._call("max", lambda ops, p: ops.max(p))

    def min(self) -> Any:
        """Smallest element, shape ``[1]``; NaN if any element is NaN. ShapeError when empty."""
        self._need("min", NUM)
        self._nonempty("min")
        return self._call("min", lambda ops, p: ops.min(p))

    def max_dim(self, dim: int) -> Any:
        """Largest value along ``dim``, **kept with size 1**; NaN propagates.

        Raises:
            ShapeError: ``dim`` has size 0.
        """
        self._need("max_dim", NUM)
        d = self._dim("max_dim", dim, nonempty=True)
        return self._call("max_dim", lambda ops, p: ops.max_dim(p, d))

    def min_dim(self, dim: int) -> Any:
        """Smallest value along ``dim``, **kept with size 1**; NaN propagates."""
        self._need("min_dim", NUM)
        d = self._dim("min_dim", dim, nonempty=True)
        return self._call("min_dim", lambda ops, p: ops.min_dim(p, d))

    def max_dims(self, dims: Sequence[int]) -> Any:
        """Largest value over each of ``dims``, each **kept with size 1**."""
        return self._fold("max_dims", "max_dim", dims)

    def min_dims(self, dims: Sequence[int]) -> Any:
        """Smallest value over each of ``dims``, each **kept with size 1**."""
        return self._fold("min_dims", "min_dim", dims)

    def argmax(self, dim: int) -> Any:
        """Int index (backend int dtype) of the first largest value along ``dim``, **kept with
        size 1**: ``[2, 3].argmax(1) -> [2, 1]``. A NaN counts as the largest."""
        self._need("argmax", NUM)
        d = self._dim("argmax", dim, nonempty=True)
        return self._call("argmax", lambda ops, p: ops.argmax(p, d), Int)

    def argmin(self, dim: int) -> Any:
        """Int index of the first smallest value along ``dim``, **kept with size 1**; a NaN
        counts as the smallest."""
        self._need("argmin", NUM)
        d = self._dim("argmin", dim, nonempty=True)
        return self._call("argmin", lambda ops, p: ops.argmin(p, d), Int)

    def max_dim_with_indices(self, dim: int) -> tuple[Any, Any]:
        """``(max_dim(dim), argmax(dim))`` in one pass, both **kept with size 1**."""
        return self._with_indices("max_dim_with_indices", dim, "max_dim_with_indices")

    def min_dim_with_indices(self, dim: int) -> tuple[Any, Any]:
        """``(min_dim(dim), argmin(dim))`` in one pass, both **kept with size 1**."""
        return self._with_indices("min_dim_with_indices", dim, "min_dim_with_indices")

    def _with_indices(self, op: str, dim: int, prim: str, *extra: Any) -> tuple[Any, Any]:
        self._need(op, NUM)
        d = self._dim(op, dim, nonempty=prim in ("max_dim_with_indices", "min_dim_with_indices", "median"))
        try:
            v, i = getattr(self.ops, prim)(self.primitive, d, *extra)
        except Exception as exc:
            raise op_error(op, exc, self) from exc
        return wrap(v, self, self.kind), wrap(i, self, Int)

    def max_abs(self) -> Any:
        """Largest absolute value, shape ``[1]`` (Burn's ``max_abs``). ShapeError when empty."""
        self._need("max_abs", NUM)
        self._nonempty("max_abs")
        return self._call("max_abs", lambda ops, p: ops.max_abs(p))

    def max_abs_dim(self, dim: int) -> Any:
        """Largest absolute value along ``dim``, **kept with size 1** (Burn's ``max_abs_dim``)."""
        self._need("max_abs_dim", NUM)
        d = self._dim("max_abs_dim", dim, nonempty=True)
        return self._call("max_abs_dim", lambda ops, p: ops.max_abs_dim(p, d))

    def max_abs_dims(self, dims: Sequence[int]) -> Any:
        """Largest absolute value over each of ``dims``, each **kept with size 1**."""
        return self._fold("max_abs_dims", "max_abs_dim", dims)

    def any(self) -> Any:
        """Bool ``[1]``: whether any element is non-zero / true (false when empty). Any kind."""
        return self._call("any", lambda ops, p: ops.any(p), Bool)

    def all(self) -> Any:
        """Bool ``[1]``: whether every element is non-zero / true (true when empty). Any kind."""
        return self._call("all", lambda ops, p: ops.all(p), Bool)

    def any_dim(self, dim: int) -> Any:
        """Bool: whether any element along ``dim`` is non-zero / true, **kept with size 1**."""
        d = self._dim("any_dim", dim)
        return self._call("any_dim", lambda ops, p: ops.any_dim(p, d), Bool)

    def all_dim(self, dim: int) -> Any:
        """Bool: whether every element along ``dim`` is non-zero / true, **kept with size 1**."""
        d = self._dim("all_dim", dim)
        return self._call("all_dim", lambda ops, p: ops.all_dim(p, d), Bool)

    # ------------------------------------------------------------------ scans (same shape)
    def cumsum(self, dim: int) -> Any:
        """Cumulative sum along ``dim``; same shape and dtype."""
        return self._scan("cumsum", dim)

    def cumprod(self, dim: int) -> Any:
        """Cumulative product along ``dim``; same shape and dtype."""
        return self._scan("cumprod", dim)

    def cummax(self, dim: int) -> Any:
        """Running maximum along ``dim``; after a NaN the run stays NaN (torch.cummax values)."""
        return self._scan("cummax", dim)

    def cummin(self, dim: int) -> Any:
        """Running minimum along ``dim``; after a NaN the run stays NaN."""
        return self._scan("cummin", dim)

    def _scan(self, op: str, dim: int) -> Any:
        self._need(op, NUM)
        d = self._dim(op, dim)
        return self._call(op, lambda ops, p: getattr(ops, op)(p, d))
