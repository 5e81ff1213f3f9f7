"""Shared helpers of the numeric conformance tests (``test_numeric``, ``test_reduce``,
``test_ordered``, ``test_operators``).

Inputs are chosen so the references are exact in every dtype: floats are multiples of 1/4 in
``[-8, 8)`` (exact in float16 and bfloat16), divisors are signed powers of two, ints are small.
References are computed in numpy float64 / int64 on the values the tensor actually holds.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import Float, Int, Tensor

#: shapes every element-wise op is checked on: rank 0, rank 1, rank 3, empty
SHAPES = [(), (5,), (2, 3, 4), (0,), (2, 0, 3)]
#: (left, right) shape pairs that broadcast, including [3, 1] with [4] and rank-0 operands
BROADCAST = [
    ((), ()),
    ((5,), (5,)),
    ((2, 3, 4), (2, 3, 4)),
    ((3, 1), (4,)),
    ((4,), (3, 1)),
    ((2, 1, 4), (3, 1)),
    ((2, 3, 4), ()),
    ((), (2, 3)),
    ((0, 3), (3,)),
]
#: (left, right) shape pairs that do not broadcast
MISMATCH = [((3,), (4,)), ((2, 3), (3, 2)), ((2, 3, 4), (5, 1))]


def values(shape: tuple[int, ...], kind: Any, seed: int = 0, *, nonzero: bool = False) -> np.ndarray:
    """Exact test values: Float quarters in [-8, 8) (float64), Int in [-9, 9] (int64).

    ``nonzero``: signed powers of two for Float (0.5 ... 4) and non-zero ints in [-5, 5] for Int,
    for divisors.
    """
    rng = np.random.default_rng(seed)
    if kind is Float:
        if nonzero:
            mag = rng.choice(np.array([0.5, 1.0, 2.0, 4.0]), size=shape)
            return np.asarray(mag * rng.choice(np.array([-1.0, 1.0]), size=shape), dtype=np.float64)
        return np.asarray(rng.integers(-32, 32, size=shape) / 4.0, dtype=np.float64)
    if nonzero:
        mag = rng.integers(1, 6, size=shape)
        return np.asarray(mag * rng.choice(np.array([-1, 1]), size=shape), dtype=np.int64)
    return np.asarray(rng.integers(-9, 10, size=shape), dtype=np.int64)


def tensor(arr: Any, device: Any, kind: Any = None) -> Any:
    """``Tensor.from_data`` of ``arr`` (kind inferred from the numpy dtype unless given)."""
    if kind is None:
        return Tensor.from_data(np.asarray(arr), device)
    return Tensor.from_data(np.asarray(arr), device, kind)


def held(t: Any) -> np.ndarray:
    """What the tensor holds, widened for references (float64 or int64)."""
    a = np.asarray(t.to_numpy())
    return a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64) if a.dtype.kind in "iu" else a


def noncontig(arr: np.ndarray, device: Any, kind: Any = None) -> Any:
    """A tensor equal to ``arr`` (rank >= 2) built by permuting a tensor stored in another order,
    so backends with strided storage see a non-contiguous input."""
    arr = np.asarray(arr)
    r = arr.ndim
    perm = tuple(range(r))[::-1]  # reversing the dims is its own inverse
    base = tensor(np.ascontiguousarray(np.transpose(arr, perm)), device, kind)
    if not hasattr(base, "permute"):  # pragma: no cover - shape ops not available yet
        pytest.skip("Tensor.permute is not available")
    out = base.permute(perm)
    assert out.shape == arr.shape
    return out


def dtype_of(device: Any, kind: Any) -> Any:
    """The element type the device's backend uses for ``kind``."""
    return device.backend.float_dtype if kind is Float else device.backend.int_dtype if kind is Int else None


def wrap_int(x: Any, dtype: Any) -> np.ndarray:
    """Exact integers wrapped to the two's-complement range of ``dtype`` (int32 or int64)."""
    bits = np.dtype(dtype.to_numpy()).itemsize * 8
    x = np.asarray(x, dtype=object)
    half = 1 << (bits - 1)
    return np.asarray(((x + half) % (1 << bits)) - half, dtype=np.int64)



#: every Float and Int element type: parametrize a test with ``@NUM_DTYPES`` and call :func:`num_device`
NUM_DTYPES = pytest.mark.parametrize(
    "num_dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32"]
)


def num_device(backend_name: str, num_dtype: str) -> tuple[Any, Any]:
    """``(kind, device)`` for the element type ``num_dtype`` (skips when the backend lacks it)."""
    from ember import DType
    from ember.testing.plugin import _dtype_device

    dt = DType.parse(num_dtype)
    kind = Float if dt.is_float else Int
    return kind, _dtype_device(backend_name, "float_dtype" if dt.is_float else "int_dtype", dt)
