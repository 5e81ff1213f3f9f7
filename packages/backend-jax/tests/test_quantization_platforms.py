"""The non-CPU integer kernels (``_quant.py``: im2col + int32 dot, int32 matmul), which a CPU run never selects.

XLA on NVIDIA GPUs has no exact int8 convolution with an int32 result and its int8 dot was wrong on one batched
shape (the H200 run of 2026-11-27: 20 conformance failures), so off the CPU ``lax.platform_dependent`` picks these.
Here they are called directly and checked against numpy int64 on every stride / dilation / groups combination the
conformance cases use and more; on a GPU the conformance suite checks them through the primitive.
"""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

from ember_jax import _quant


def _conv_ref(x: np.ndarray, w: np.ndarray, stride, dilation, groups) -> np.ndarray:
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    ho, wo = (h - dh * (kh - 1) - 1) // sh + 1, (wd - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, o, ho, wo), np.int64)
    og = o // groups
    for b, oc, i, j in itertools.product(range(n), range(o), range(ho), range(wo)):
        g = oc // og
        win = x[b, g * cg:(g + 1) * cg, i * sh:i * sh + dh * (kh - 1) + 1:dh, j * sw:j * sw + dw * (kw - 1) + 1:dw]
        out[b, oc, i, j] = np.sum(win.astype(np.int64) * w[oc].astype(np.int64))
    return out


@pytest.mark.parametrize("stride,dilation,groups,k", [
    ((1, 1), (1, 1), 1, (3, 3)), ((2, 1), (1, 1), 1, (3, 2)), ((1, 2), (2, 1), 1, (2, 3)),
    ((2, 2), (2, 2), 2, (3, 3)), ((1, 1), (1, 1), 4, (1, 1)), ((3, 2), (1, 3), 2, (2, 2)),
])
def test_im2col_convolution_is_exact(stride, dilation, groups, k):
    rng = np.random.default_rng(7)
    x = rng.integers(-128, 128, size=(2, 4, 9, 11)).astype(np.int8)
    w = rng.integers(-128, 128, size=(4, 4 // groups) + k).astype(np.int8)
    x[0, :, :3, :] = -128  # the extreme products
    w[0] = -128
    got = np.asarray(jax.jit(_quant._conv_im2col, static_argnums=(2, 3, 4))(x, w, stride, dilation, groups))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, _conv_ref(x, w, stride, dilation, groups))
    # and the CPU's int8 convolution agrees with it
    np.testing.assert_array_equal(got, np.asarray(_quant._conv_int8(x, w, stride, dilation, groups)))


@pytest.mark.parametrize("shape_a,shape_b", [((3, 5, 37), (37, 4)), ((6, 1100), (1100, 3)), ((2, 3, 8), (2, 8, 5))])
def test_int32_matmul_is_exact(shape_a, shape_b):
    rng = np.random.default_rng(11)
    a = rng.integers(-128, 128, size=shape_a).astype(np.int8)
    b = rng.integers(-128, 128, size=shape_b).astype(np.int8)
    a[..., 0, :] = -128
    b[..., :, 0] = -128
    got = np.asarray(jax.jit(_quant._matmul_int32)(a, b))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))


def _lowered(platform: str) -> tuple[str, str]:
    x = np.zeros((1, 2, 5, 5), np.int8)
    w = np.zeros((3, 2, 3, 3), np.int8)
    one = np.ones(1, np.float32)
    conv = _quant._qconv2d.trace(x, one, None, w, np.ones(3, np.float32), None, (1, 1), (1, 1), (1, 1), 1,
                                 np.dtype(np.float32), None, None)
    mm = _quant._int_matmul.trace(np.zeros((3, 5, 37), np.int8), np.zeros((37, 4), np.int8))
    return (conv.lower(lowering_platforms=(platform,)).as_text(), mm.lower(lowering_platforms=(platform,)).as_text())


def test_each_platform_lowers_its_own_kernels():
    """The choice is made at lowering: the CPU gets the int8 convolution and dot, CUDA the im2col int32 dot."""
    conv, mm = _lowered("cpu")
    assert "stablehlo.convolution" in conv and "dot_general" not in conv
    assert "tensor<3x5x37xi8>, tensor<37x4xi8>) -> tensor<3x5x4xi32>" in mm
    conv, mm = _lowered("cuda")
    assert "stablehlo.convolution" not in conv and "dot_general" in conv
    assert "xi8>, tensor<37x4xi8>) -> tensor<3x5x4xi32>" not in mm and "37x4xi32>) -> tensor<3x5x4xi32>" in mm
