"""Numeric primitives of the torch backend: arithmetic, comparisons, reductions, scans, sorting,
matmul (contract: :mod:`ember.backend._ops_numeric`).

Each op is one torch call where torch's semantics are the contract's. Where torch differs from
the contract the op adapts it here, without a device synchronisation:

- Int division, remainder and fmod by zero give 0 (torch raises ``ZeroDivisionError`` on the CPU);
- ``sign(NaN)`` is NaN (torch gives 0);
- an Int base with a negative exponent follows the tensor-exponent rule (torch refuses scalars);
- sorting is stable (``stable=True``), ``topk`` breaks ties by index;
- Int reductions and scans keep the input dtype (torch widens int32 and bool to int64);
- Int means are floor divisions of an int64 sum (``torch.mean`` has no Int kernel).
"""

from __future__ import annotations

from typing import Any

import torch

_Tensor = torch.Tensor


def _int_safe(op: Any, a: Any, b: Any) -> Any:
    """``op(a, b)`` for Int tensors with 0 wherever ``b`` is 0 (the contract's rule; torch raises
    on the CPU and leaves garbage on CUDA). Masks instead of testing, so no device sync."""
    if type(b) is not _Tensor:
        return op(a, b) if b != 0 else torch.zeros_like(a)
    zero = torch.eq(b, 0)
    return op(a, torch.masked_fill(b, zero, 1)).masked_fill_(zero, 0)  # the result is fresh


def _int_mean(s: Any, n: int, dtype: torch.dtype) -> Any:
    # floor of the exact mean from an int64 sum (an int32 mean never overflows); 0 when empty
    q = torch.floor_divide(s, n) if n else s
    return q if q.dtype is dtype else q.to(dtype)


class TorchNumericOps:
    _itd: torch.dtype
    _acc: dict[torch.dtype, torch.dtype]

    # ---- element-wise: torch takes a tensor or a Python scalar as second operand, and a scalar
    # never changes the tensor's dtype (same rule as numpy's NEP 50)
    add = staticmethod(torch.add)
    sub = staticmethod(torch.sub)
    mul = staticmethod(torch.mul)
    div = staticmethod(torch.true_divide)
    powf = staticmethod(torch.pow)
    neg = staticmethod(torch.neg)
    abs = staticmethod(torch.abs)
    equal = staticmethod(torch.eq)
    not_equal = staticmethod(torch.ne)
    greater = staticmethod(torch.gt)
    greater_equal = staticmethod(torch.ge)
    lower = staticmethod(torch.lt)
    lower_equal = staticmethod(torch.le)

    @staticmethod
    def int_div(a: Any, b: Any) -> Any:
        return _int_safe(torch.floor_divide, a, b)  # floor_divide rounds toward -inf (torch >= 1.13)

    @staticmethod
    def remainder(a: Any, b: Any) -> Any:
        # sign of the divisor, as Python's %; float x % 0 is NaN in torch already
        return torch.remainder(a, b) if a.is_floating_point() else _int_safe(torch.remainder, a, b)

    @staticmethod
    def fmod(a: Any, b: Any) -> Any:
        return torch.fmod(a, b) if a.is_floating_point() else _int_safe(torch.fmod, a, b)

    @staticmethod
    def matmul(a: Any, b: Any) -> Any:
        # torch refuses mixed dtypes; the contract keeps the first operand's
        b = b if b.dtype is a.dtype else b.to(a.dtype)
        if a.is_cuda and not (a.is_floating_point() or a.is_complex()):
            # torch's CUDA matmul kernels take no integer types (cuBLAS has none): exact on the CPU
            return torch.matmul(a.cpu(), b.cpu()).to(a.device)
        if b.dim() == 2 and a.dim() > 2 and not a.is_contiguous():
            # torch.matmul folds [..., m, k] @ [k, n] into one mm only when the batch dims of ``a`` flatten as a view;
            # else it expands ``b`` over them and runs a bmm (an imported Transformer's [seq, batch, d] @ W: seq
            # products of [batch, d] rows; one copy of ``a`` and one mm: 1.4x faster at [128, 8, 128] @ [128, 384]
            # eager, and BERT-tiny's frozen inductor inference 1.51x -> 1.40x onnxruntime at batch 1, issue 32)
            a = a.contiguous()
        return torch.matmul(a, b)

    @staticmethod
    def powi(a: Any, b: Any) -> Any:
        # torch refuses an int base with a negative *scalar* exponent but defines the tensor case
        # (1 ** -n = 1, (-1) ** -n = +-1, else 0: truncation of the real power); use that rule
        if type(b) is int and b < 0 and not a.is_floating_point():
            b = torch.tensor(b, dtype=a.dtype, device=a.device)
        return torch.pow(a, b)

    @staticmethod
    def maximum(a: Any, b: Any) -> Any:
        # torch.maximum wants two tensors; clamp_min propagates NaN from either side the same way
        return torch.maximum(a, b) if type(b) is _Tensor else torch.clamp_min(a, b)

    @staticmethod
    def minimum(a: Any, b: Any) -> Any:
        return torch.minimum(a, b) if type(b) is _Tensor else torch.clamp_max(a, b)

    @staticmethod
    def sign(a: Any) -> Any:
        s = torch.sign(a)
        if a.is_floating_point():
            # torch.sign(nan) is 0; the contract (numpy, Burn) keeps NaN
            s = torch.where(torch.isnan(a), a, s)
        return s

    @staticmethod
    def clamp(a: Any, lo: Any, hi: Any) -> Any:
        return torch.clamp(a, lo, hi)

    # ---- reductions: whole-tensor ones give shape (1,); *_dim keep the dim
    def sum(self, a: Any) -> Any:
        acc = self._acc.get(a.dtype)
        return (torch.sum(a) if acc is None else torch.sum(a, dtype=acc)).view(1)

    def sum_dim(self, a: Any, dim: int) -> Any:
        acc = self._acc.get(a.dtype)
        if acc is None:
            return torch.sum(a, dim, keepdim=True)
        return torch.sum(a, dim, keepdim=True, dtype=acc)

    @staticmethod
    def mean(a: Any) -> Any:
        if a.is_floating_point():
            return torch.mean(a).view(1)  # NaN for an empty tensor
        return _int_mean(torch.sum(a, dtype=torch.int64), a.numel(), a.dtype).view(1)

    @staticmethod
    def mean_dim(a: Any, dim: int) -> Any:
        if a.is_floating_point():
            return torch.mean(a, dim, keepdim=True)
        return _int_mean(torch.sum(a, dim, keepdim=True, dtype=torch.int64), a.shape[dim], a.dtype)

    def prod(self, a: Any) -> Any:
        acc = self._acc.get(a.dtype)
        return (torch.prod(a) if acc is None else torch.prod(a, dtype=acc)).view(1)

    def prod_dim(self, a: Any, dim: int) -> Any:
        acc = self._acc.get(a.dtype)
        if acc is None:
            return torch.prod(a, dim, keepdim=True)
        return torch.prod(a, dim, keepdim=True, dtype=acc)

    @staticmethod
    def max(a: Any) -> Any:
        return torch.max(a).view(1)  # NaN propagates

    @staticmethod
    def min(a: Any) -> Any:
        return torch.min(a).view(1)

    @staticmethod
    def index_bounds(a: Any) -> tuple[int, int]:
        lo, hi = torch.aminmax(a)  # one fused reduction
        return int(lo), int(hi)

    @staticmethod
    def max_dim(a: Any, dim: int) -> Any:
        return torch.amax(a, dim, keepdim=True)

    @staticmethod
    def min_dim(a: Any, dim: int) -> Any:
        return torch.amin(a, dim, keepdim=True)

    def argmax(self, a: Any, dim: int) -> Any:
        if a.dtype is torch.bool:  # torch.argmax has no bool kernel
            a = a.to(torch.uint8)
        r = torch.argmax(a, dim, keepdim=True)  # first index; NaN counts as the largest (numpy)
        return r if r.dtype is self._itd else r.to(self._itd)

    def argmin(self, a: Any, dim: int) -> Any:
        if a.dtype is torch.bool:
            a = a.to(torch.uint8)
        r = torch.argmin(a, dim, keepdim=True)
        return r if r.dtype is self._itd else r.to(self._itd)

    def max_dim_with_indices(self, a: Any, dim: int) -> tuple[Any, Any]:
        v, i = torch.max(a, dim, keepdim=True)  # first index of the max; a NaN counts as largest
        return v, (i if i.dtype is self._itd else i.to(self._itd))

    def min_dim_with_indices(self, a: Any, dim: int) -> tuple[Any, Any]:
        v, i = torch.min(a, dim, keepdim=True)
        return v, (i if i.dtype is self._itd else i.to(self._itd))

    @staticmethod
    def any(a: Any) -> Any:
        return torch.any(a).view(1)

    @staticmethod
    def all(a: Any) -> Any:
        return torch.all(a).view(1)

    @staticmethod
    def any_dim(a: Any, dim: int) -> Any:
        return torch.any(a, dim, keepdim=True)

    @staticmethod
    def all_dim(a: Any, dim: int) -> Any:
        return torch.all(a, dim, keepdim=True)

    # ---- scans
    def cumsum(self, a: Any, dim: int) -> Any:
        acc = self._acc.get(a.dtype)
        return torch.cumsum(a, dim) if acc is None else torch.cumsum(a, dim, dtype=acc)

    def cumprod(self, a: Any, dim: int) -> Any:
        acc = self._acc.get(a.dtype)
        return torch.cumprod(a, dim) if acc is None else torch.cumprod(a, dim, dtype=acc)

    @staticmethod
    def cummax(a: Any, dim: int) -> Any:
        return torch.cummax(a, dim).values  # NaN propagates to the end, as numpy's accumulate

    @staticmethod
    def cummin(a: Any, dim: int) -> Any:
        return torch.cummin(a, dim).values

    # ---- sorting: torch.sort is not stable unless asked; NaN sorts as the largest value
    @staticmethod
    def sort(a: Any, dim: int, descending: bool) -> Any:
        return torch.sort(a, dim=dim, descending=descending, stable=True).values

    def argsort(self, a: Any, dim: int, descending: bool) -> Any:
        r = torch.argsort(a, dim=dim, descending=descending, stable=True)
        return r if r.dtype is self._itd else r.to(self._itd)

    def sort_with_indices(self, a: Any, dim: int, descending: bool) -> tuple[Any, Any]:
        v, i = torch.sort(a, dim=dim, descending=descending, stable=True)
        return v, (i if i.dtype is self._itd else i.to(self._itd))

    def topk(self, a: Any, dim: int, k: int) -> tuple[Any, Any]:
        # torch.topk breaks ties in no specified order; a stable descending sort keeps the first
        # index first, as the contract (and Burn's sort-based topk) does
        values, idx = torch.sort(a, dim=dim, descending=True, stable=True)
        idx = idx.narrow(dim, 0, k)
        return values.narrow(dim, 0, k), (idx if idx.dtype is self._itd else idx.to(self._itd))

    def median(self, a: Any, dim: int) -> tuple[Any, Any]:
        # torch.median: the lower median for an even count, NaN (and a NaN's index) when the
        # slice holds a NaN, as the contract says
        v, i = torch.median(a, dim, keepdim=True)
        return v, (i if i.dtype is self._itd else i.to(self._itd))
