"""The one index-value check of every op that takes indices (issue 28).

Gathers, selects, scatters, ``take``, ``t[tensor]``, the N-d gathers, ``embedding``, ``one_hot`` and
``CrossEntropyLoss`` targets all call :func:`check_index_values` in the core before the backend, so an
index outside ``[0, size)`` — negative ones included — raises the same ``ember.IndexError`` with the same
message on every backend. Left to the libraries, numpy counts negative indices from the end, torch raises
its own errors and jax clamps, fills or drops.

Cost: one fused min/max reduction over the index tensor and one host read of two scalars
(:meth:`ember.backend.Backend.index_bounds`), no Python loop over the values. The check reads nothing, and
the library's own behaviour applies, where values cannot be read cheaply:

- traced values (``Backend.is_concrete`` is ``False``: inside ``ember_jax.jit`` and other compiled steps):
  jax then counts negative indices from the end, fills out-of-range gathers (NaN for floats) and drops
  out-of-range scatter updates;
- devices whose backend says ``Backend.checks_index_values(handle)`` is ``False`` (torch on CUDA: the read
  would be a host synchronisation per op; torch's kernels stop with a device-side assert instead).
"""

from __future__ import annotations

from typing import Any

from .._errors import IndexError_

__all__ = ["check_index_values", "index_bounds", "out_of_range"]


def index_bounds(ops: Any, p: Any, device: Any) -> tuple[int, int] | None:
    """``(min, max)`` of the Int primitive ``p`` read on the host, or ``None`` where it is not read: an empty
    ``p``, traced values, or a device that does not report index values (see the module docstring)."""
    d = device.inner  # an autodiff device answers for its inner device: ask that one (one frame less)
    if 0 in ops.shape(p) or not ops.is_concrete(p) or not d.backend.checks_index_values(d.handle):
        return None
    return ops.index_bounds(p)


def out_of_range(op: str, found: int, size: int, dim: int | None = None, what: str = "index",
                 hint: str = "", where: str = "") -> IndexError_:
    """The ``ember.IndexError`` of every index-value check: the op, the value found, the valid range and what
    to do. ``where`` replaces "dim D of size N", ``hint`` the default advice."""
    if not where:
        where = f"dim {dim} of size {size}" if dim is not None else f"size {size}"
    valid = f"expected a value in [0, {size - 1}]" if size > 0 else "no value fits an empty dim"
    if not hint:
        hint = (f"negative values are not counted from the end: add {size} to them first, or fix the data"
                if found < 0 else f"values must stay below {size}: fix the data or the size")
    return IndexError_(f"{op}: {what} {found} is out of range for {where}; {valid}; {hint}.")


def check_index_values(op: str, indices: Any, size: int, dim: int | None = None, what: str = "index",
                       hint: str = "", where: str = "") -> None:
    """Check that every value of the Int tensor ``indices`` lies in ``[0, size)``.

    One min/max reduction and one host read; skipped (nothing read) for empty, traced or unreported values
    (module docstring). ``what``, ``hint`` and ``where`` word the message (:func:`out_of_range`).

    Raises:
        IndexError_: a value below 0 or at least ``size``; the message names ``op``, the value found (the
        smallest when one is negative, else the largest), ``dim``, the valid range and what to do.
    """
    b = index_bounds(indices.ops, indices.primitive, indices.device)
    if b is not None and (b[0] < 0 or b[1] >= size):
        raise out_of_range(op, b[0] if b[0] < 0 else b[1], size, dim, what, hint, where)
