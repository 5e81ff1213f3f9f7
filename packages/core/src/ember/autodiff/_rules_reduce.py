"""Backward rules of reductions, scans, statistics and sorting.

- ``sum``/``mean`` broadcast the gradient back; ``prod`` uses exclusive prefix and suffix products
  (no division, so zeros are handled exactly: the gradient at a zero is the product of the others).
- ``max``/``min`` (and ``*_dim``) send the gradient to the position of the first extreme
  (the ``argmax``/``argmin`` index), as Burn's rule does.
- ``cumsum``: reversed cumulative sum; ``cumprod``: ``revcumsum(g y) / x`` before the first zero
  of each run, PyTorch's O(n) form at the first zero, 0 after it (masks only, no host read);
  ``cummax``/``cummin``: to the index that set the running extreme.
- Ops returning ``(values, indices)`` (``sort_with_indices``, ``topk``, ``median``,
  ``max_dim_with_indices`` ...) scatter the gradient back at the indices (pattern ``indexed``).
"""

from __future__ import annotations

from typing import Any

from ._rules_util import along, expand_to, numel
from ._table import indexed, unary

# ---------------------------------------------------------------------------- sums and means


@unary("sum", save="s")
def _sum(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    return expand_to(B, g, s)


@unary("sum_dim", save="s")
def _sum_dim(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    return B.expand(g, s)


@unary("mean", save="s", direct=True)
def _mean(B: Any, g: Any, saved: Any, ps: Any) -> Any:
    s = saved[0]
    return (expand_to(B, B.div(g, float(max(numel(s), 1))), s),)


@unary("mean_dim", save="s")
def _mean_dim(B: Any, g: Any, s: Any, y: Any, args: Any) -> Any:
    return B.expand(B.div(g, float(max(s[args[0]], 1))), s)


@unary("var", save="x")
def _var(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    # d/dx sum((x - m)^2) / (n - c) = 2 (x - m) / (n - c)
    dim, correction = args
    n = B.shape(x)[dim]
    f = 2.0 / (n - correction) if n > correction else float("nan")
    return B.mul(B.mul(B.sub(x, B.mean_dim(x, dim)), f), g)


# ---------------------------------------------------------------------------- products


def _exclusive_cumprod(B: Any, x: Any, dim: int, reverse: bool) -> Any:
    """``out[i] = prod_{j < i} x[j]`` along ``dim`` (``j > i`` when ``reverse``), without division."""
    s = B.shape(x)
    if reverse:
        x = B.flip(x, (dim,))
    pads = tuple((1, 0) if i == dim else (0, 0) for i in range(len(s)))
    shifted = B.slice(B.pad(x, pads, 1.0), along(s, dim, 0, s[dim]))
    out = B.cumprod(shifted, dim)
    return B.flip(out, (dim,)) if reverse else out


def _prod_grad(B: Any, x: Any, dim: int) -> Any:
    """``prod_{j != i} x[j]`` along ``dim`` (exact with zeros)."""
    return B.mul(_exclusive_cumprod(B, x, dim, False), _exclusive_cumprod(B, x, dim, True))


@unary("prod", save="x")
def _prod(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    s = B.shape(x)
    flat = B.reshape(x, (numel(s),))
    return B.reshape(B.mul(_prod_grad(B, flat, 0), B.reshape(g, (1,))), s)


@unary("prod_dim", save="x")
def _prod_dim(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return B.mul(_prod_grad(B, x, args[0]), g)


# ---------------------------------------------------------------------------- extremes


def _to_index(B: Any, g: Any, x: Any, dim: int, idx: Any) -> Any:
    return B.zeros_scatter_add(B.shape(x), dim, idx, g)


def _whole_extreme(B: Any, g: Any, x: Any, arg: Any) -> Any:
    s = B.shape(x)
    flat = B.reshape(x, (numel(s),))
    idx = arg(flat, 0)
    return B.reshape(_to_index(B, B.reshape(g, (1,)), flat, 0, idx), s)


@unary("max", save="x")
def _max(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return _whole_extreme(B, g, x, B.argmax)


@unary("min", save="x")
def _min(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return _whole_extreme(B, g, x, B.argmin)


@unary("max_dim", save="x")
def _max_dim(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return _to_index(B, g, x, args[0], B.argmax(x, args[0]))


@unary("min_dim", save="x")
def _min_dim(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return _to_index(B, g, x, args[0], B.argmin(x, args[0]))


indexed("max_dim_with_indices", "min_dim_with_indices", "sort_with_indices", "topk", "median")

# ---------------------------------------------------------------------------- scans


def _revcumsum(B: Any, g: Any, dim: int) -> Any:
    return B.flip(B.cumsum(B.flip(g, (dim,)), dim), (dim,))


@unary("cumsum")
def _cumsum(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return _revcumsum(B, g, args[0])


@unary("cumprod", save="xy")
def _cumprod(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    """``d/dx_k sum_j g_j y_j`` for ``y = cumprod(x)`` along ``dim``, exact with zeros, O(n), data-independent.

    PyTorch's O(n) formula (``cumprod_backward``, torch/csrc/autograd/FunctionsManual.cpp), with its
    ``masked_scatter`` steps replaced by element-wise masks so that no value is read on the host (the rule
    can be traced by ``jax.jit``). With ``z1`` the first zero along the dim and ``z2`` the second (or the end):

    - ``k < z1`` (``x_k != 0``): ``revcumsum(g y)_k / x_k``, the sums taken over ``j < z1`` only;
    - ``k = z1``: ``prod(x[:z1]) * sum_{z1 <= j < z2} g_j prod_{z1 < i <= j} x_i``;
    - ``k > z1``: 0 (every ``y_j``, ``j >= k``, holds the factor ``x_z1 = 0``).

    Without zeros this is the plain ``revcumsum(g y) / x``.
    """
    dim = args[0]
    zero = B.equal(x, 0.0)
    count = B.cumsum(B.cast(zero, B.dtype(x)), dim)  # zeros met so far, per position (exact small integers)
    after = B.not_equal(count, 0.0)  # at or after the first zero
    # k < z1: the division formula, sums cut at the first zero, divisions by x_k != 0 only
    before = B.div(_revcumsum(B, B.mask_fill(B.mul(g, y), after, 0.0), dim), B.mask_fill(x, after, 1.0))
    out = B.mask_fill(before, after, 0.0)
    # k = z1: x_i for z1 < i < z2 (1 elsewhere), cumulated, weighted by g_j for z1 <= j < z2, summed
    not_run = B.not_equal(count, 1.0)  # outside [z1, z2)
    inside = B.cumprod(B.mask_fill(B.mask_fill(x, not_run, 1.0), zero, 1.0), dim)
    tail = B.sum_dim(B.mul(inside, B.mask_fill(g, not_run, 0.0)), dim)
    head = B.prod_dim(B.mask_fill(x, after, 1.0), dim)  # prod(x[:z1])
    first = B.logical_and(zero, B.equal(count, 1.0))
    return B.mask_where(out, first, B.mul(tail, head))


def _cum_extreme(B: Any, g: Any, x: Any, y: Any, dim: int) -> Any:
    # the running extreme at j was set at the last i <= j where x[i] == y[i]
    s = B.shape(x)
    n = s[dim]
    ar = B.arange(0, n, 1, B.int_dtype, B.device_handle(x))
    ar = B.expand(B.reshape(ar, tuple(n if i == dim else 1 for i in range(len(s)))), s)
    pos = B.mask_fill(ar, B.not_equal(x, y), 0)
    return _to_index(B, g, x, dim, B.cummax(pos, dim))


@unary("cummax", save="xy")
def _cummax(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return _cum_extreme(B, g, x, y, args[0])


@unary("cummin", save="xy")
def _cummin(B: Any, g: Any, x: Any, y: Any, args: Any) -> Any:
    return _cum_extreme(B, g, x, y, args[0])
