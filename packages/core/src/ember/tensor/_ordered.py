"""Sorting ops of Burn's ``Orderable``: sort / argsort in both directions, topk, argtopk and
median. A mixin of :class:`~ember.tensor._numeric.NumericTensorOps`, whose helpers
(``_need``, ``_dim``, ``_call``, ``_with_indices``, ``_nonempty``) it uses.

Conventions: sorting is stable in both directions (equal values keep their index order); NaN
sorts last ascending and first descending; ``topk`` counts NaN as the largest; ``median`` takes
the lower of the two middle values for an even count (torch.median, Burn) and is NaN for a slice
holding a NaN; ``*_dim``-style results keep the reduced dim with size 1 (Burn).
"""

from __future__ import annotations

from typing import Any

from .._errors import ShapeError
from .._kind import Int
from ._base import TensorBase
from ._core import NUM


class OrderedTensorOps(TensorBase):
    __slots__ = ()

    def sort(self, dim: int = -1) -> Any:
        """Values sorted ascending along ``dim`` (stable; NaN last). Burn's ``sort``."""
        self._need("sort", NUM)
        d = self._dim("sort", dim)
        return self._call("sort", lambda ops, p: ops.sort(p, d, False))

    def sort_descending(self, dim: int = -1) -> Any:
        """Values sorted descending along ``dim`` (stable; NaN first)."""
        self._need("sort_descending", NUM)
        d = self._dim("sort_descending", dim)
        return self._call("sort_descending", lambda ops, p: ops.sort(p, d, True))

    def sort_with_indices(self, dim: int = -1) -> tuple[Any, Any]:
        """``(values, indices)`` sorted ascending along ``dim``; indices are Int positions along
        ``dim`` in the input (stable: ties keep index order)."""
        return self._with_indices("sort_with_indices", dim, "sort_with_indices", False)

    def sort_descending_with_indices(self, dim: int = -1) -> tuple[Any, Any]:
        """``(values, indices)`` sorted descending along ``dim`` (stable; NaN first)."""
        return self._with_indices("sort_descending_with_indices", dim, "sort_with_indices", True)

    def argsort(self, dim: int = -1, descending: bool = False) -> Any:
        """Int indices that sort along ``dim`` (stable). Burn's ``argsort``, PyTorch's signature."""
        op = "argsort_descending" if descending else "argsort"
        self._need(op, NUM)
        d = self._dim(op, dim)
        return self._call(op, lambda ops, p: ops.argsort(p, d, bool(descending)), Int)

    def argsort_descending(self, dim: int = -1) -> Any:
        """Int indices that sort descending along ``dim`` (stable; NaN first)."""
        return self.argsort(dim, True)

    def topk(self, k: int, dim: int = -1) -> Any:
        """The ``k`` largest values along ``dim``, in descending order (``dim`` gets size ``k``).

        Ties keep index order; NaN counts as the largest. Burn's ``topk(k, dim)``.

        Raises:
            ShapeError: ``k`` negative or larger than the size of ``dim``.
        """
        return self.topk_with_indices(k, dim, _op="topk")[0]

    def topk_with_indices(self, k: int, dim: int = -1, *, _op: str = "topk_with_indices") -> tuple[Any, Any]:
        """``(values, Int indices)`` of the ``k`` largest values along ``dim``, descending."""
        self._need(_op, NUM)
        d = self._dim(_op, dim)
        n = self.shape[d]
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= n:
            raise ShapeError(
                f"{_op}: k={k!r} is out of range for dim {dim} of size {n} (shape {list(self.shape)}); "
                f"expected 0 <= k <= {n}."
            )
        return self._with_indices(_op, d, "topk", k)

    def argtopk(self, k: int, dim: int = -1) -> Any:
        """Int indices of the ``k`` largest values along ``dim``, descending (Burn's ``argtopk``)."""
        return self.topk_with_indices(k, dim, _op="argtopk")[1]

    def median(self, dim: int | None = None) -> Any:
        """Lower median: for an even count the smaller of the two middle values (torch.median,
        Burn's ``median``). ``dim=None``: over all elements, shape ``[1]``; else along ``dim``,
        **kept with size 1**. A slice containing NaN has median NaN.

        Raises:
            ShapeError: nothing to take the median of (empty tensor or empty ``dim``).
        """
        if dim is None:
            self._need("median", NUM)
            self._nonempty("median")
            flat = self._call("median", lambda ops, p: ops.reshape(p, (self.num_elements(),)))
            return flat._with_indices("median", 0, "median")[0]
        return self._with_indices("median", dim, "median")[0]

    def median_with_indices(self, dim: int) -> tuple[Any, Any]:
        """``(median(dim), Int index of an element holding it)``, both **kept with size 1**
        (torch.median(dim) keeping the dim; Burn's ``median_with_indices``)."""
        return self._with_indices("median_with_indices", dim, "median")
