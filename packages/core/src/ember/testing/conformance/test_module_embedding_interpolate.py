"""``embedding`` and ``interpolate`` (``ember.tensor.functional``): forward against independent
float64 references (and torch in float64 where installed), finite-difference gradients under
``Autodiff``, the contract's defaults, errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ember import IndexError as EmberIndexError
from ember import KindError, ShapeError, Tensor
from ember.autodiff import gradcheck
from ember.backend._ops_module import ModuleOps
from ember.tensor import functional as M
from ember.testing import assert_close

from ._module_helpers import ftensor, held, interpolate_ref

rng = np.random.default_rng(31)

# (x shape, output size, mode, align_corners)
INTERP = [
    ((1, 2, 3, 4), (6, 8), "nearest", False),
    ((2, 1, 5, 7), (3, 4), "nearest", False),
    ((1, 2, 4, 3), (7, 5), "bilinear", False),
    ((1, 2, 4, 3), (7, 5), "bilinear", True),
    ((2, 1, 6, 5), (3, 2), "bilinear", False),
    ((1, 1, 5, 5), (1, 3), "bilinear", True),
    ((1, 2, 4, 5), (7, 3), "bicubic", False),
    ((1, 2, 4, 5), (7, 3), "bicubic", True),
    ((1, 1, 6, 6), (4, 9), "bicubic", False),
]


# ---------------------------------------------------------------------------- embedding
@pytest.mark.parametrize("ishape", [(4,), (2, 3), (2, 1, 3)], ids=str)
def test_module_embedding(float_device: Any, ishape: tuple[int, ...]) -> None:
    w = ftensor(rng.uniform(-1, 1, (6, 3)), float_device)
    idx = rng.integers(0, 6, ishape)
    y = M.embedding(w, Tensor.from_ints(idx.tolist(), float_device))
    assert y.shape == ishape + (3,)
    assert_close(y, held(w)[idx])


def test_module_embedding_gradcheck(ad_device: Any) -> None:
    idx = [[1, 4, 1], [0, 2, 2]]  # repeated indices accumulate
    gradcheck(lambda w: M.embedding(w, Tensor.from_ints(idx, w.device)), [rng.uniform(-1, 1, (5, 3))], ad_device)


def test_module_embedding_backward_accumulates(ad_device: Any) -> None:
    w = ftensor(np.zeros((4, 2)), ad_device).require_grad()
    grads = M.embedding(w, Tensor.from_ints([[3, 1, 3], [3, 0, 1]], ad_device)).sum().backward()
    assert_close(w.grad(grads), [[1.0, 1.0], [2.0, 2.0], [0.0, 0.0], [3.0, 3.0]])


def test_module_embedding_errors(device: Any) -> None:
    w = Tensor.zeros([5, 3], device)
    with pytest.raises(KindError, match="embedding: indices must be an Int tensor"):
        M.embedding(w, Tensor.zeros([2], device))
    with pytest.raises(ShapeError, match=r"embedding.*\[num_embeddings, dim\].*\[5\]"):
        M.embedding(Tensor.zeros([5], device), Tensor.from_ints([1], device))
    if not device.backend.checks_index_values(device.handle):
        pytest.skip(f"{device.name} does not report out-of-range index values (Backend.checks_index_values)")
    # index values are checked in the core, the same way on every backend (test_index_values.py)
    for bad in (7, -1):
        with pytest.raises(EmberIndexError, match=rf"embedding: index {bad} is out of range for 5 embeddings"):
            M.embedding(w, Tensor.from_ints([0, bad], device))


# ---------------------------------------------------------------------------- interpolate
@pytest.mark.parametrize("case", INTERP, ids=str)
def test_module_interpolate(float_device: Any, case: Any) -> None:
    xs, out, mode, align = case
    x = ftensor(rng.uniform(-1, 1, xs), float_device)
    y = M.interpolate(x, out, M.InterpolateOptions(mode, align))
    assert_close(y, interpolate_ref(held(x), out, mode, align))


@pytest.mark.parametrize("case", INTERP, ids=str)
def test_module_interpolate_matches_torch(f64_device: Any, case: Any) -> None:
    torch = pytest.importorskip("torch")
    xs, out, mode, align = case
    x = rng.uniform(-1, 1, xs)
    y = M.interpolate(ftensor(x, f64_device), out, M.InterpolateOptions(M.InterpolateMode(mode), align))
    exp = torch.nn.functional.interpolate(torch.tensor(x), size=out, mode=mode,
                                          align_corners=None if mode == "nearest" else align)
    assert_close(y, exp.numpy())


@pytest.mark.parametrize("case", INTERP, ids=str)
def test_module_interpolate_gradcheck(ad_device: Any, case: Any) -> None:
    xs, out, mode, align = case
    gradcheck(lambda x: M.interpolate(x, out, M.InterpolateOptions(mode, align)), [rng.uniform(-1, 1, xs)],
              ad_device)


def test_module_interpolate_identity(f64_device: Any) -> None:
    # resizing to the same size is the identity for every mode (PyTorch's formulas)
    x = ftensor(rng.uniform(-1, 1, (1, 2, 4, 5)), f64_device)
    for mode in ("nearest", "bilinear", "bicubic"):
        for align in (False, True):
            assert_close(M.interpolate(x, (4, 5), M.InterpolateOptions(mode, align)), held(x))


def test_module_interpolate_contract_default_backward(f64_device: Any) -> None:
    # adjoint identity <interp(x), g> = <x, interp_backward(g)> for the contract's default
    B = f64_device.backend
    x, g = rng.uniform(-1, 1, (1, 2, 4, 5)), rng.uniform(-1, 1, (1, 2, 6, 3))
    for mode in ("nearest", "bilinear", "bicubic"):
        y = B.to_numpy(ModuleOps.interpolate(B, ftensor(x, f64_device).primitive, (6, 3), mode, False))
        gx = B.to_numpy(ModuleOps.interpolate_backward(B, ftensor(g, f64_device).primitive, x.shape, (6, 3), mode,
                                                       False))
        assert abs(float((y * g).sum()) - float((x * gx).sum())) < 1e-10


def test_module_interpolate_errors(device: Any) -> None:
    x = Tensor.zeros([1, 2, 4, 4], device)
    with pytest.raises(ValueError, match="unknown mode 'area'"):
        M.interpolate(x, (2, 2), M.InterpolateOptions("area"))
    with pytest.raises(ShapeError, match=r"interpolate.*\[batch, channels, height, width\].*\[2, 4, 4\]"):
        M.interpolate(Tensor.zeros([2, 4, 4], device), (2, 2))
    with pytest.raises(ValueError, match="output_size must be >= 1"):
        M.interpolate(x, (0, 2))
    with pytest.raises(KindError, match="interpolate"):
        M.interpolate(x.int(), (2, 2))


@pytest.mark.parametrize(("size", "out"), [(2, 98), (3, 123), (2, 82), (7, 5), (5, 13)])
def test_interpolate_nearest_uses_the_exact_integer_floor(device: Any, size: int, out: int) -> None:
    """``src = floor(dst * size / out)`` computed in integers: float rounding of ``size / out``
    misplaces one pixel for some sizes (2→98, 3→123)."""
    x = np.arange(size * size, dtype=np.float64).reshape(1, 1, size, size)
    src = np.minimum((np.arange(out) * size) // out, size - 1)
    expected = x[:, :, src][:, :, :, src]
    got = M.interpolate(Tensor.from_data(x, device), [out, out], M.InterpolateOptions("nearest"))
    assert_close(got, expected)
