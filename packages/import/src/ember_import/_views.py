"""Tensor views into storages: validation when the pickle declares them, materialization afterwards.

PyTorch pickles a tensor as ``_rebuild_tensor_v2(storage, storage_offset, size, stride, ...)`` (source:
``torch/_tensor.py``, ``Tensor._reduce_ex_internal``): a strided view of ``size`` elements into a storage,
in units of the element type. Several tensors may view one storage (a tensor and its transpose, slices of
one buffer). :func:`make_view` checks a declaration before any byte is read: non-negative integer sizes,
strides and offset, the farthest element inside the storage, and the materialized size under a limit (a
zero stride can make a 1-element storage look like terabytes). :func:`materialize` then builds the
``TensorData``: a zero-copy slice when the view is C-contiguous, else ``numpy.lib.stride_tricks.as_strided``
on the already-checked extent followed by a contiguous copy.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ember import DType, TensorData

from ._errors import ModelImportError
from ._frozen import Frozen
from ._limits import summary
from ._storage import Storage

__all__ = ["PendingTensor", "make_view", "materialize"]


class PendingTensor(Frozen):
    """A tensor declared by the pickle and not read yet: a view of ``shape``/``stride`` into ``storage``."""

    __slots__ = ("storage", "offset", "shape", "stride", "dtype")
    storage: Storage
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: DType

    def __init__(self, storage: Storage, offset: int, shape: tuple[int, ...], stride: tuple[int, ...],
                 dtype: DType) -> None:
        for name, value in (("storage", storage), ("offset", offset), ("shape", shape), ("stride", stride),
                            ("dtype", dtype)):
            object.__setattr__(self, name, value)

    @property
    def nbytes(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"PendingTensor(shape={list(self.shape)}, dtype={self.dtype}, storage={self.storage.name!r})"


def _ints(value: Any, what: str, origin: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)):
        raise ModelImportError(f"{origin}: a tensor's {what} is {type(value).__name__}, expected a tuple of ints.")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ModelImportError(f"{origin}: a tensor's {what} holds {summary(v)}, expected non-negative ints.")
        if v < 0:
            raise ModelImportError(f"{origin}: a tensor's {what} holds the negative value {v}; corrupted file.")
        out.append(operator.index(v))
    return tuple(out)


def make_view(storage: Any, offset: Any, size: Any, stride: Any, dtype: DType | None, *, origin: str,
              max_bytes: int) -> PendingTensor:
    """Check a tensor declaration and return it as a :class:`PendingTensor` (nothing is read).

    Args:
        storage: the :class:`Storage` the pickle's persistent id resolved to.
        offset, size, stride: in elements of ``dtype`` (PyTorch's ``storage_offset``, ``size``, ``stride``).
        dtype: the tensor's element type; None means the storage's (``_rebuild_tensor_v2``).
        max_bytes: the largest materialized tensor accepted, in bytes.

    Raises:
        ModelImportError: not a storage, malformed or negative numbers, rank mismatch, an element outside
            the storage, a materialized size above ``max_bytes``, or an element type Ember lacks.
    """
    if not isinstance(storage, Storage):
        raise ModelImportError(
            f"{origin}: a tensor is rebuilt from a {type(storage).__name__}, expected a storage reference; "
            "the pickle is malformed."
        )
    dt = dtype if dtype is not None else storage.dtype
    if dt is None:
        raise ModelImportError(f"{origin}: a tensor on the untyped storage {storage.name!r} has no element type.")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ModelImportError(f"{origin}: a tensor's storage offset is {summary(offset)}, expected an int >= 0.")
    shape = _ints(size, "size", origin)
    strides = _ints(stride, "stride", origin)
    if len(shape) != len(strides):
        raise ModelImportError(
            f"{origin}: a tensor has size {list(shape)} but stride {list(strides)} (different ranks); corrupted."
        )
    if storage.nbytes % dt.itemsize:
        raise ModelImportError(
            f"{origin}: storage {storage.name!r} has {storage.nbytes} bytes, not a multiple of {dt}'s "
            f"{dt.itemsize}-byte elements."
        )
    capacity = storage.nbytes // dt.itemsize
    numel = 1
    for s in shape:
        numel *= s  # Python ints: no overflow
    if numel == 0:
        last = offset - 1  # nothing is read; the offset itself may sit at the end
    else:
        last = offset + sum((n - 1) * st for n, st in zip(shape, strides))
    if offset > capacity or last >= capacity:
        raise ModelImportError(
            f"{origin}: a tensor of size {list(shape)}, stride {list(strides)} at offset {offset} reaches element "
            f"{last} of storage {storage.name!r}, which holds only {capacity} {dt} elements; the file is "
            "corrupted or malicious."
        )
    nbytes = numel * dt.itemsize
    if nbytes > max_bytes:
        raise ModelImportError(
            f"{origin}: a tensor of size {list(shape)} ({dt}) would need {nbytes} bytes, above the limit of "
            f"{max_bytes} bytes (its strides repeat elements of a {storage.nbytes}-byte storage). Raise "
            "max_tensor_bytes if the file is trusted."
        )
    return PendingTensor(storage, offset, shape, strides, dt)


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    out = [0] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        out[i] = acc
        acc *= shape[i]
    return tuple(out)


def _is_c_contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    return all(n == 1 or s == c for n, s, c in zip(shape, stride, _c_strides(shape)))


def materialize(t: PendingTensor, *, big_endian: bool = False, share: bool = True) -> TensorData:
    """The :class:`~ember.TensorData` of a checked view (its storage must be filled).

    A C-contiguous view is a zero-copy slice of the storage. With ``share=False`` (the read path) a contiguous
    view using less than half of its storage is copied instead, so a small slice never pins a large buffer;
    ``share=True`` (the mmap path) always slices, since unused mapped pages cost nothing. Other views go
    through ``as_strided`` (extent already checked by :func:`make_view`) and are copied to C order. Big-endian
    data is byte-swapped to native order; bool bytes are normalized to 0/1.
    """
    dt = t.dtype
    isz = dt.itemsize
    np_dt = dt.to_numpy().newbyteorder(">" if big_endian else "<")
    buf = t.storage.data()
    numel = t.nbytes // isz
    if numel == 0:
        arr = np.empty(t.shape, dtype=dt.to_numpy())
    elif _is_c_contiguous(t.shape, t.stride):
        start = t.offset * isz
        arr = buf[start : start + numel * isz].view(np_dt).reshape(t.shape)
        if not share and 2 * numel * isz < buf.size:
            arr = arr.copy()
    else:
        capacity = buf.size // isz
        base = buf[: capacity * isz].view(np_dt)[t.offset :]
        view = as_strided(base, shape=t.shape, strides=tuple(s * isz for s in t.stride), writeable=False)
        arr = np.array(view, order="C")  # (ascontiguousarray would make rank 0 rank 1)
    if big_endian and isz > 1:
        arr = arr.astype(dt.to_numpy())
    if dt is DType.BOOL:
        arr = arr.view(np.uint8) != 0
    return TensorData.from_bits(arr, dt)
