"""How a person writes a traced call: a one-element constant operand as a Python number (``x / 8.0``, not a
``scalar = Tensor.from_data(8.0, ...)`` line) and a permutation that swaps two dims as ``swap_dims(i, j)``.

Each rewrite computes what the recorded call computes (the trace's shadow ran the original call):

- a constant with one element, of the other operand's element type and of a rank no higher than the other's,
  broadcasts to the other operand's shape, so ``t op c`` equals ``t op scalar`` (Ember converts a Python scalar to
  the tensor's element type, ``ember.tensor._core.scalar_for``; the number is written so that it converts back to
  the constant's exact value). Bool constants, non-finite values and values read from tensor data stay tensors.
- ``permute(p)`` where ``p`` is the identity but for two positions is ``swap_dims`` of those two dims.
- ``slice([...])`` with step-1 ranges (slices, or the ``(start, end, 1)`` ranges of the ``Slice`` rule, whose
  ``end`` may be the dim's size) is ``x[:, a:b]`` (the bounds were clamped into ``[0, n]`` by ``Slice``, so
  Python's clamping changes nothing); with a backward range among them, the whole dims are ``None``
  (``x.slice([None, (0, 5, -1)])``); ranges read from the data stay ``x.slice(ranges)``.
- ``take(dim, c)`` with ``c`` a rank-0 non-negative Int constant is ``x[:, ..., c]`` (indexing with an int drops
  the dim as ``take`` with a rank-0 index does).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import DType, Tensor

from ._sym import Parts

__all__ = ["idiom"]

#: Python operators a scalar operand may replace a one-element tensor in (both orders are valid Python)
_SCALAR_OPS = frozenset({"+", "-", "*", "/", "**", "%", "//", "<", "<=", ">", ">="})
#: numpy types whose shortest ``str`` round-trips the element type exactly
_NP_FLOAT = {DType.FLOAT32: np.float32, DType.FLOAT16: np.float16, DType.FLOAT64: np.float64}


def _number(gen: Any, c: Any, other: Any) -> str | None:
    """``c`` as a Python number when it may stand for the one-element constant tensor ``c`` next to ``other``."""
    if not isinstance(c, Tensor) or not isinstance(other, Tensor) or id(c) in gen.traced or id(c) in gen.host_syms:
        return None
    with gen.untraced():
        dt, n, rank, other_rank, other_dt = c.dtype, c.num_elements(), len(c.shape), len(other.shape), other.dtype
        if n != 1 or rank > other_rank or dt is not other_dt or dt is DType.BOOL:
            return None
        value = c.reshape([1]).tolist()[0]
    if dt.is_int:
        text = repr(int(value))
    elif not np.isfinite(value):
        return None
    else:
        text = repr(float(value))
        np_type = _NP_FLOAT.get(dt)
        if np_type is not None:
            short = str(np_type(value))
            if "e" not in short and "." not in short:
                short += ".0"
            if np_type(float(short)) == np_type(value):
                text = short
    return f"({text})" if text.startswith("-") else text


def _plain(gen: Any, r: Any) -> bool:
    """A slice Python indexing writes the same: step 1, bounds non-negative ints or sizes (``Slice`` clamped
    them into ``[0, n]``)."""
    if not isinstance(r, slice) or r.step not in (None, 1):
        return False
    return all(b is None or (isinstance(b, int) and not isinstance(b, bool) and b >= 0) for b in (r.start, r.stop))


def _as_slice(gen: Any, r: Any, n: Any) -> Any:
    """A step-1 range ``(start, end, 1)`` of a dim of size ``n`` (what the ``Slice`` rule plans, clamped into
    ``[0, n]``) as the Python slice indexing writes the same (``end`` of the whole dim: open); other ranges
    as they are. Values read from the data stay a range: comparing them would specialise the code."""
    if not (isinstance(r, tuple) and len(r) == 3 and type(r[2]) is int and r[2] == 1):
        return r
    if any(getattr(b, "data", False) for b in r[:2]):
        return r
    start, end = r[0], r[1]
    whole = (
        end is n
        or (type(end) is int and type(n) is int and end == n)
        or (hasattr(end, "parts") and hasattr(n, "parts") and end.parts == n.parts)
    )
    return _drop_zero(slice(start, None if whole else end))


def _shape(gen: Any, t: Any) -> tuple[Any, ...]:
    """``t``'s shape as the trace knows it (its dynamic dims as :class:`~._sym.Sym`\\ s)."""
    sym = gen.sym_shapes.get(id(t))
    if sym is not None:
        return tuple(sym)
    with gen.untraced():
        return tuple(t.shape)


def _drop_zero(r: slice) -> slice:
    start = None if type(r.start) is int and r.start == 0 else r.start
    return slice(start, r.stop)


def _index(gen: Any, idx: Any) -> int | None:
    """A rank-0 non-negative Int constant as a Python int (``x.take(1, c)`` is ``x[:, c]``: both drop the dim and
    both reject an index past the end)."""
    if not isinstance(idx, Tensor) or id(idx) in gen.traced or id(idx) in gen.host_syms:
        return None
    with gen.untraced():
        if idx.shape or not idx.dtype.is_int:
            return None
        k = int(idx.tolist())
    return k if k >= 0 else None


def idiom(gen: Any, name: str, op: str | None, recv: Any, rest: tuple[Any, ...],
          kwargs: dict[str, Any]) -> Parts | None:
    """The idiomatic source of the call ``recv.name(*rest, **kwargs)`` (``op`` its Python operator, reflected
    operators with ``recv`` the right operand), or ``None`` to write it as recorded."""
    if op is not None and op in _SCALAR_OPS and len(rest) == 1 and not kwargs:
        other = rest[0]
        reflected = name.startswith("__r")
        left, right = (other, recv) if reflected else (recv, other)
        num = _number(gen, right, left)
        if num is not None:
            return (*gen.arg(left, atom=True), f" {op} ", num)
        num = _number(gen, left, right)
        if num is not None:
            return (num, f" {op} ", *gen.arg(right, atom=True))
        return None
    if name == "take" and len(rest) == 2 and not kwargs and type(rest[0]) is int and rest[0] >= 0:
        k = _index(gen, rest[1])
        if k is not None:
            return (*gen.arg(recv, atom=True), "[", ":, " * rest[0], str(k), "]")
    if name == "slice" and len(rest) == 1 and not kwargs and isinstance(rest[0], (list, tuple)) and rest[0]:
        ranges = [_as_slice(gen, r, n) for r, n in zip(rest[0], _shape(gen, recv))]
    else:
        ranges = []
    if ranges and all(_plain(gen, r) for r in ranges):
        while ranges and ranges[-1] == slice(None):
            ranges.pop()
        if ranges:
            return (*gen.arg(recv, atom=True), "[", *gen.index(tuple(_drop_zero(r) for r in ranges)), "]")
    elif ranges and any(r == slice(None) for r in ranges):  # a backward range beside whole dims: those are None
        ranges = [None if r == slice(None) else o for r, o in zip(ranges, rest[0])]
        while ranges[-1] is None:
            ranges.pop()
        return (*gen.arg(recv, atom=True), ".slice(", *gen.arg(ranges), ")")
    if name == "permute" and len(rest) == 1 and not kwargs and isinstance(rest[0], (list, tuple)):
        perm = [int(p) for p in rest[0]]
        moved = [i for i, p in enumerate(perm) if p != i]
        if len(moved) == 2 and perm[moved[0]] == moved[1] and perm[moved[1]] == moved[0]:
            return (*gen.arg(recv, atom=True), f".swap_dims({moved[0]}, {moved[1]})")
    return None
