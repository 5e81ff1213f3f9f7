"""Assertions comparing Ember tensors with independent numpy references."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._dtype import DType

_TOL = {
    DType.FLOAT64: (1e-10, 1e-9),
    DType.FLOAT32: (1e-5, 1e-4),
    DType.FLOAT16: (2e-3, 2e-2),
    DType.BFLOAT16: (2e-2, 2e-2),
}


def tolerance_for(dtype: DType) -> tuple[float, float]:
    """``(atol, rtol)`` used by the suite for results of ``dtype`` (exact for ints and bools)."""
    return _TOL.get(dtype, (0.0, 0.0))


def assert_close(tensor: Any, expected: Any, *, atol: float | None = None, rtol: float | None = None,
                 kind: Any = None) -> None:
    """Assert ``tensor`` (an ``ember.Tensor``) equals ``expected`` (array-like, ideally float64)
    in shape and values, within the tolerance of the tensor's dtype (or the given one).

    NaNs must match positions; infinities must be equal. ``kind`` also checks the tensor's kind.
    """
    if kind is not None and tensor.kind is not kind:
        raise AssertionError(f"kind: expected {kind}, got {tensor.kind}")
    got = np.asarray(tensor.to_numpy())
    exp = np.asarray(expected)
    if tuple(got.shape) != tuple(exp.shape):
        raise AssertionError(f"shape: expected {list(exp.shape)}, got {list(got.shape)}")
    a0, r0 = tolerance_for(tensor.dtype)
    a = a0 if atol is None else atol
    r = r0 if rtol is None else rtol
    if got.dtype.kind == "b" or exp.dtype.kind == "b":
        ok = got.astype(bool) == exp.astype(bool)
    else:
        g, e = got.astype(np.float64), exp.astype(np.float64)
        ok = np.isclose(g, e, atol=a, rtol=r, equal_nan=True)
    if not np.all(ok):
        bad = np.argwhere(~np.asarray(ok))
        idx = tuple(int(i) for i in bad[0]) if bad.size else ()
        raise AssertionError(
            f"{len(bad)} of {exp.size} elements differ (atol={a:g}, rtol={r:g}, dtype {tensor.dtype}); "
            f"first at {list(idx)}: got {got[idx]!r}, expected {exp[idx]!r}\n got: {got!r}\n expected: {exp!r}"
        )


def assert_equal(tensor: Any, expected: Any, kind: Any = None) -> None:
    """Exact comparison (ints, bools, indices)."""
    assert_close(tensor, expected, atol=0.0, rtol=0.0, kind=kind)
