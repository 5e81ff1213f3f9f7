"""Shared helpers of the shape and indexing conformance tests (``test_basic``, ``test_indexing``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import Bool, DType, Float, Int, Tensor
from ember.testing import assert_close
from ember.testing.plugin import _dtype_device

#: every element type a shape op must carry unchanged: (id, kind, dtype or None for bool)
KIND_DTYPES = [
    ("float32", Float, DType.FLOAT32),
    ("float64", Float, DType.FLOAT64),
    ("float16", Float, DType.FLOAT16),
    ("bfloat16", Float, DType.BFLOAT16),
    ("int64", Int, DType.INT64),
    ("int32", Int, DType.INT32),
    ("bool", Bool, None),
]


@pytest.fixture(params=KIND_DTYPES, ids=[k[0] for k in KIND_DTYPES])
def kd(request: Any, backend_name: str) -> tuple[Any, Any]:
    """``(kind, device)`` for every kind and supported element type (skips unsupported ones)."""
    _, kind, dtype = request.param
    if kind is Float:
        return kind, _dtype_device(backend_name, "float_dtype", dtype)
    if kind is Int:
        return kind, _dtype_device(backend_name, "int_dtype", dtype)
    return kind, _dtype_device(backend_name, "float_dtype", DType.FLOAT32)


def ref_values(shape: tuple[int, ...], kind: Any, seed: int = 0) -> np.ndarray:
    """Values exact in every dtype (quarters in [-4, 4) for floats, small ints, random bools)."""
    rng = np.random.default_rng(seed)
    if kind is Float:
        return rng.integers(-16, 16, size=shape) / 4.0
    if kind is Int:
        return rng.integers(-50, 50, size=shape).astype(np.int64)
    return rng.random(shape) < 0.5


LAYOUTS = ["contiguous", "permuted", "flipped"]


def make(device: Any, shape: tuple[int, ...], kind: Any = Float, layout: str = "contiguous",
         seed: int = 0) -> tuple[Any, np.ndarray]:
    """A tensor of ``shape`` and its float64/int64/bool numpy reference. ``permuted`` and
    ``flipped`` build the tensor from a transposed/reversed array and undo that with
    ``permute``/``flip``, so the backend sees a non-contiguous primitive (on numpy, a view)."""
    ref = ref_values(shape, kind, seed)
    rank = len(shape)
    if layout == "permuted" and rank >= 2:
        rev = tuple(reversed(range(rank)))
        t = Tensor.from_data(np.ascontiguousarray(ref.transpose(rev)), device, kind).permute(rev)
    elif layout == "flipped" and rank >= 1:
        t = Tensor.from_data(np.ascontiguousarray(np.flip(ref)), device, kind).flip(list(range(rank)))
    else:
        t = Tensor.from_data(ref, device, kind)
    assert t.shape == shape
    return t, ref


def check(t: Any, expected: Any, kind: Any = None) -> None:
    """Exact comparison of values (test values are exactly representable), shape and kind."""
    exp = np.asarray(expected)
    if kind is not None:
        assert t.kind is kind, f"kind: expected {kind}, got {t.kind}"
    assert_close(t, exp, atol=0.0, rtol=0.0)


def raises_out_of_range(device: Any, op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Assert ``fn(*args)`` raises ``ember.IndexError`` naming ``op`` for an index value out of range,
    where ``device`` reports those (``Backend.checks_index_values``); elsewhere (torch on CUDA: a
    device-side assert that would end the process's CUDA context) the call is not made."""
    if not device.backend.checks_index_values(device.handle):
        return None
    from ember import IndexError as IndexError_

    return raises(IndexError_, op, fn, *args, **kwargs)


def raises(exc: type, op: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Assert ``fn(*args)`` raises ``exc`` with a message naming ``op``."""
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert op in str(info.value), f"the message does not name {op!r}: {info.value}"
    return info.value
