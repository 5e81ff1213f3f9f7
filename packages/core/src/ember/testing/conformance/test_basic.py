"""Shape ops (Burn's BasicOps, shape half) against numpy float64/int64/bool references:
reshape, flatten, squeeze/unsqueeze, permutations, flip, expand/repeat, cat/stack/split,
narrow, iter_dim, roll, unfold, pad, triu/tril and the triangular masks."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Bool, DeviceError, Float, IndexError, Int, KindError, ShapeError, Tensor
from ember.testing.conformance import _shape_helpers
from ember.testing.conformance._shape_helpers import LAYOUTS, check, make, raises

kd = _shape_helpers.kd  # fixture: (kind, device) for every kind and element type

SHAPE3 = (2, 3, 4)


# ---------------------------------------------------------------------- reshape / flatten
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    ("shape", "new", "expected"),
    [
        ((2, 3, 4), [4, -1], (4, 6)),
        ((2, 3, 4), [0, 12], (2, 12)),
        ((2, 3, 4), [0, -1, 2], (2, 6, 2)),
        ((2, 3, 4), [24], (24,)),
        ((1,), [], ()),
        ((0, 3), [3, -1], (3, 0)),
        ((0, 3), [-1, 3], (0, 3)),
    ],
)
def test_reshape(kd, shape, new, expected, layout):
    kind, dev = kd
    x, r = make(dev, shape, kind, layout)
    check(x.reshape(new), r.reshape(expected), kind)


def test_reshape_rank0(device):
    x = Tensor.from_data(2.5, device)
    check(x.reshape([1, 1]), np.full((1, 1), 2.5))
    check(x.reshape([1]).reshape([]), np.asarray(2.5))


def test_reshape_errors(device):
    x, _ = make(device, SHAPE3)
    raises(ShapeError, "reshape", x.reshape, [5, 5])
    raises(ShapeError, "reshape", x.reshape, [-1, -1])
    raises(ShapeError, "reshape", x.reshape, [-1, 5])
    raises(ShapeError, "reshape", x.reshape, [2, -3, 4])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("s", "e", "expected"), [(0, -1, (24,)), (1, 2, (2, 12)), (0, 1, (6, 4)), (-2, -2, (2, 3, 4))])
def test_flatten(kd, s, e, expected, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    check(x.flatten(s, e), r.reshape(expected), kind)


def test_flatten_rank0_and_errors(device):
    check(Tensor.from_data(3.0, device).flatten(), np.array([3.0]))
    x, _ = make(device, SHAPE3)
    raises(IndexError, "flatten", x.flatten, 2, 1)
    raises(IndexError, "flatten", x.flatten, 0, 3)


# ---------------------------------------------------------------------- squeeze / unsqueeze
def test_squeeze_family(kd):
    kind, dev = kd
    x, r = make(dev, (1, 3, 1, 2), kind, "permuted")
    check(x.squeeze(), r.reshape(3, 2), kind)
    check(x.squeeze_dim(-2), r.reshape(1, 3, 2), kind)
    check(x.squeeze(0), r.reshape(3, 1, 2), kind)
    check(x.squeeze_dims([0, -2]), r.reshape(3, 2), kind)
    check(x.squeeze_dims([]), r.reshape(3, 2), kind)
    y, ry = make(dev, (1, 1), kind)
    check(y.squeeze(), ry.reshape(()), kind)


def test_squeeze_errors(device):
    x, _ = make(device, (1, 3, 1))
    raises(ShapeError, "squeeze_dim", x.squeeze_dim, 1)
    raises(IndexError, "squeeze_dim", x.squeeze_dim, 3)
    raises(ShapeError, "squeeze_dims", x.squeeze_dims, [0, 1])
    raises(IndexError, "squeeze_dims", x.squeeze_dims, [0, -3])


def test_unsqueeze_family(kd):
    kind, dev = kd
    x, r = make(dev, (3, 4), kind, "flipped")
    check(x.unsqueeze(4), r.reshape(1, 1, 3, 4), kind)
    check(x.unsqueeze(2), r, kind)
    check(x.unsqueeze_dim(1), r[:, None], kind)
    check(x.unsqueeze_dim(-1), r[..., None], kind)
    check(x.unsqueeze_dims([0, -1]), np.expand_dims(r, (0, -1)), kind)
    check(x.unsqueeze_dims([1, 2]), np.expand_dims(r, (1, 2)), kind)
    s = Tensor.from_data(1.5, dev).unsqueeze_dim(0) if kind is Float else None
    if s is not None:
        check(s, np.array([1.5]))


def test_unsqueeze_errors(device):
    x, _ = make(device, (3, 4))
    raises(ShapeError, "unsqueeze", x.unsqueeze, 1)
    raises(IndexError, "unsqueeze_dim", x.unsqueeze_dim, 3)
    raises(IndexError, "unsqueeze_dim", x.unsqueeze_dim, -4)
    raises(IndexError, "unsqueeze_dims", x.unsqueeze_dims, [0, 0])
    raises(IndexError, "unsqueeze_dims", x.unsqueeze_dims, [4])


def test_shape_ops_keep_an_empty_dim(kd):
    # the ops that compute their target shape reshape to it exactly: a 0 there is an empty dim, not reshape's
    # "keep this dim" (which made flatten, squeeze_dims, unsqueeze_dim, repeat and roll fail on empty tensors)
    kind, dev = kd
    x, r = make(dev, (2, 0, 3), kind)
    check(x.flatten(), r.reshape(0), kind)
    check(x.flatten(1, 2), r.reshape(2, 0), kind)
    check(x.unsqueeze(4), r[None], kind)
    check(x.unsqueeze_dim(2), np.expand_dims(r, 2), kind)
    check(x.unsqueeze_dims([0, -1]), np.expand_dims(r, (0, -1)), kind)
    check(x.repeat([2, 1, 2]), np.tile(r, (2, 1, 2)), kind)
    check(x.roll([1]), r, kind)
    y, ry = make(dev, (1, 0, 1), kind)
    check(y.squeeze_dims([0, 2]), ry.reshape(0), kind)
    check(y.squeeze(), ry.reshape(0), kind)
    check(y.squeeze_dim(-1), ry.reshape(1, 0), kind)
    z, rz = make(dev, (2, 3), kind)
    check(z.repeat([0, 2]), np.tile(rz, (0, 2)), kind)


# ---------------------------------------------------------------------- permutations, flip
@pytest.mark.parametrize("layout", LAYOUTS)
def test_permutations(kd, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    check(x.permute([2, 0, 1]), r.transpose(2, 0, 1), kind)
    check(x.permute([-1, -3, -2]), r.transpose(2, 0, 1), kind)
    check(x.swap_dims(0, -1), np.swapaxes(r, 0, 2), kind)
    check(x.transpose(), np.swapaxes(r, 1, 2), kind)
    check(x.t(), np.swapaxes(r, 1, 2), kind)
    check(x.movedim(0, -1), np.moveaxis(r, 0, -1), kind)
    check(x.movedim([0, 1], [2, 0]), np.moveaxis(r, [0, 1], [2, 0]), kind)
    check(x.flip([0, -1]), r[::-1, :, ::-1], kind)
    check(x.flip([1]), r[:, ::-1], kind)


def test_permutations_small_and_empty(device):
    v, rv = make(device, (5,))
    check(v.transpose(), rv)
    e, re = make(device, (0, 3))
    check(e.transpose(), re.T)
    check(e.flip([0, 1]), re)
    s = Tensor.from_data(2.0, device)
    check(s.permute([]), np.asarray(2.0))
    check(s.flip([]), np.asarray(2.0))


def test_permutation_errors(device):
    x, _ = make(device, SHAPE3)
    raises(ShapeError, "permute", x.permute, [0, 1])
    raises(IndexError, "permute", x.permute, [0, 1, 1])
    raises(IndexError, "permute", x.permute, [0, 1, 3])
    raises(IndexError, "swap_dims", x.swap_dims, 0, 3)
    raises(IndexError, "movedim", x.movedim, 0, 5)
    raises(ShapeError, "movedim", x.movedim, [0, 1], [2])
    raises(IndexError, "flip", x.flip, [3])
    raises(IndexError, "flip", x.flip, [0, -3])


# ---------------------------------------------------------------------- expand / repeat
@pytest.mark.parametrize("layout", LAYOUTS)
def test_expand(kd, layout):
    kind, dev = kd
    x, r = make(dev, (3, 1), kind, layout)
    check(x.expand([2, 3, 4]), np.broadcast_to(r, (2, 3, 4)), kind)
    check(x.expand([-1, 5]), np.broadcast_to(r, (3, 5)), kind)
    check(x.expand([3, 0]), np.zeros((3, 0), dtype=r.dtype), kind)


def test_expand_errors(device):
    x, _ = make(device, (3, 1))
    raises(ShapeError, "expand", x.expand, [4, 2])
    raises(ShapeError, "expand", x.expand, [3])
    raises(ShapeError, "expand", x.expand, [-1, 3, 1])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_repeat(kd, layout):
    kind, dev = kd
    x, r = make(dev, (2, 3), kind, layout)
    check(x.repeat([2, 3]), np.tile(r, (2, 3)), kind)
    check(x.repeat([1, 1]), r, kind)
    check(x.repeat([2, 1, 2]), np.tile(r, (2, 1, 2)), kind)
    check(x.repeat([0, 2]), np.tile(r, (0, 2)), kind)
    check(x.repeat_dim(0, 3), np.concatenate([r, r, r], axis=0), kind)
    check(x.repeat_dim(-1, 2), np.concatenate([r, r], axis=1), kind)
    check(x.repeat_dim(1, 0), r[:, :0], kind)


def test_repeat_errors(device):
    x, _ = make(device, (2, 3))
    raises(ShapeError, "repeat", x.repeat, [2])
    raises(ShapeError, "repeat", x.repeat, [2, -1])
    raises(IndexError, "repeat_dim", x.repeat_dim, 2, 2)
    raises(ShapeError, "repeat_dim", x.repeat_dim, 0, -1)


# ---------------------------------------------------------------------- cat / stack / split
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat(kd, dim):
    kind, dev = kd
    shapes = [(2, 3), (2, 3), (2, 3)]
    if dim == 0:
        shapes = [(2, 3), (0, 3), (4, 3)]
    elif dim in (1, -1):
        shapes = [(2, 1), (2, 0), (2, 3)]
    pairs = [make(dev, s, kind, lay, seed=i) for i, (s, lay) in enumerate(zip(shapes, LAYOUTS))]
    out = Tensor.cat([p[0] for p in pairs], dim)
    check(out, np.concatenate([p[1] for p in pairs], axis=dim), kind)
    check(Tensor.cat([pairs[0][0]], dim), pairs[0][1], kind)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack(kd, dim):
    kind, dev = kd
    pairs = [make(dev, (2, 3), kind, lay, seed=i) for i, lay in enumerate(LAYOUTS)]
    check(Tensor.stack([p[0] for p in pairs], dim), np.stack([p[1] for p in pairs], axis=dim), kind)


def test_cat_stack_errors(device):
    a, _ = make(device, (2, 3))
    b, _ = make(device, (3, 3))
    err = raises(ShapeError, "cat", Tensor.cat, [a, b], 1)
    assert "[2, 3]" in str(err) and "[3, 3]" in str(err)
    raises(ShapeError, "cat", Tensor.cat, [a, a.reshape([6])], 0)
    raises(ShapeError, "cat", Tensor.cat, [], 0)
    raises(IndexError, "cat", Tensor.cat, [a, a], 2)
    raises(KindError, "cat", Tensor.cat, [a, a.int()], 0)
    other = ember.backend(device.backend.name, float_dtype="float64").device()
    raises(DeviceError, "cat", Tensor.cat, [a, Tensor.from_data(np.zeros((2, 3)), other)], 0)
    raises(ShapeError, "stack", Tensor.stack, [a, b], 0)
    raises(ShapeError, "stack", Tensor.stack, [], 0)
    raises(IndexError, "stack", Tensor.stack, [a, a], 3)
    raises(KindError, "stack", Tensor.stack, [a, a.bool()], 0)


@pytest.mark.parametrize(
    ("n", "op", "arg", "sizes"),
    [
        (5, "chunk", 4, [2, 2, 1]),
        (6, "chunk", 3, [2, 2, 2]),
        (2, "chunk", 5, [1, 1]),
        (7, "split", 3, [3, 3, 1]),
        (6, "split", 6, [6]),
        (6, "split", 10, [6]),
        (6, "split", [1, 0, 5], [1, 0, 5]),
        (6, "split_with_sizes", [4, 2], [4, 2]),
    ],
)
@pytest.mark.parametrize("dim", [1, -2])
def test_split_family(kd, n, op, arg, sizes, dim):
    kind, dev = kd
    x, r = make(dev, (2, n, 3) if dim == 1 else (2, n, 3), kind, "permuted")
    parts = getattr(x, op)(arg, dim)
    assert [p.shape[1] for p in parts] == sizes
    bounds = np.cumsum([0, *sizes])
    for p, lo, hi in zip(parts, bounds[:-1], bounds[1:]):
        check(p, r[:, lo:hi], kind)


def test_split_empty_dim(device):
    x, r = make(device, (0, 2))
    assert [p.shape for p in x.chunk(3, 0)] == [(0, 2)]
    assert [p.shape for p in x.split(2, 0)] == [(0, 2)]


def test_split_errors(device):
    x, _ = make(device, (6, 2))
    raises(ShapeError, "chunk", x.chunk, 0, 0)
    raises(IndexError, "chunk", x.chunk, 2, 2)
    raises(ShapeError, "split", x.split, 0, 0)
    raises(ShapeError, "split_with_sizes", x.split_with_sizes, [2, 2], 0)
    raises(ShapeError, "split_with_sizes", x.split_with_sizes, [7, -1], 0)
    raises(IndexError, "split_with_sizes", x.split_with_sizes, [6], 3)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_narrow_and_iter_dim(kd, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    check(x.narrow(1, 1, 2), r[:, 1:3], kind)
    check(x.narrow(-1, -3, 2), r[..., 1:3], kind)
    check(x.narrow(2, 4, 0), r[..., 4:4], kind)
    parts = list(x.iter_dim(1))
    assert len(parts) == 3
    for i, p in enumerate(parts):
        check(p, r[:, i:i + 1], kind)
    assert list(make(dev, (0, 2), kind)[0].iter_dim(0)) == []


def test_narrow_iter_errors(device):
    x, _ = make(device, SHAPE3)
    raises(IndexError, "narrow", x.narrow, 1, 2, 2)
    raises(IndexError, "narrow", x.narrow, 1, 4, 0)
    raises(IndexError, "narrow", x.narrow, 3, 0, 1)
    raises(IndexError, "iter_dim", lambda: next(x.iter_dim(3)))


# ---------------------------------------------------------------------- roll / unfold
@pytest.mark.parametrize("layout", LAYOUTS)
def test_roll(kd, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    check(x.roll_dim(1, 0), np.roll(r, 1, axis=0), kind)
    check(x.roll_dim(-5, -1), np.roll(r, -5, axis=2), kind)
    check(x.roll([1, 7], [1, 2]), np.roll(r, (1, 7), axis=(1, 2)), kind)
    check(x.roll(3), np.roll(r, 3), kind)
    check(x.roll_dim(3, 1), r, kind)
    e, re = make(dev, (0, 3), kind)
    check(e.roll_dim(2, 0), re, kind)


def test_roll_errors(device):
    x, _ = make(device, SHAPE3)
    raises(IndexError, "roll_dim", x.roll_dim, 1, 3)
    raises(ShapeError, "roll", x.roll, [1, 2], [0])
    raises(IndexError, "roll", x.roll, [1], [-4])


def _unfold_ref(r, dim, size, step):
    n = (r.shape[dim] - size) // step + 1
    wins = [np.moveaxis(np.take(r, np.arange(i * step, i * step + size), axis=dim), dim, -1) for i in range(n)]
    if not wins:
        shp = list(r.shape)
        shp[dim] = 0
        return np.zeros((*shp, size), dtype=r.dtype)
    return np.stack(wins, axis=dim)


@pytest.mark.parametrize(("dim", "size", "step"), [(1, 2, 1), (2, 3, 2), (-1, 4, 1), (0, 1, 3), (2, 2, 5)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_unfold(kd, dim, size, step, layout):
    kind, dev = kd
    x, r = make(dev, (2, 3, 5), kind, layout)
    d = dim % 3
    check(x.unfold(dim, size, step), _unfold_ref(r, d, size, step), kind)


def test_unfold_errors(device):
    x, _ = make(device, (2, 3))
    raises(ShapeError, "unfold", x.unfold, 1, 4, 1)
    raises(ShapeError, "unfold", x.unfold, 1, 2, 0)
    raises(IndexError, "unfold", x.unfold, 2, 1, 1)


# ---------------------------------------------------------------------- pad
def test_pad_burn_example(float_device):
    # Burn's padding_2d_test: (2, 2, 2, 2) with 1.1 -> a 6 x 7 frame around [[0, 1, 2], [3, 4, 5]]
    x = Tensor.from_data([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], float_device)
    exp = np.full((6, 7), 1.1)
    exp[2:4, 2:5] = [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    out = x.pad((2, 2, 2, 2), 1.1)
    from ember.testing import assert_close

    assert_close(out, exp)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_pad(kd, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    val = {Float: -2.5, Int: 7, Bool: True}[kind]
    # (left, right, top, bottom) pads the last two dims: width (dim 2) then height (dim 1)
    check(x.pad((1, 2, 0, 3), val), np.pad(r, ((0, 0), (0, 3), (1, 2)), constant_values=val), kind)
    check(x.pad([(1, 0)], val), np.pad(r, ((0, 0), (0, 0), (1, 0)), constant_values=val), kind)
    check(x.pad([(1, 1), (0, 2), (3, 0)], val), np.pad(r, ((1, 1), (0, 2), (3, 0)), constant_values=val), kind)
    check(x.pad([(0, 0)]), r, kind)
    check(x.pad((2, 1), val), np.pad(r, ((0, 0), (0, 0), (2, 1)), constant_values=val), kind)
    check(x.pad((0, 1, 1, 0, 2, 0), val), np.pad(r, ((2, 0), (1, 0), (0, 1)), constant_values=val), kind)
    if kind is not Bool:
        check(x.pad([(2, 3)], mode="reflect"), np.pad(r, ((0, 0), (0, 0), (2, 3)), mode="reflect"), kind)
        check(x.pad((1, 2, 2, 1), mode="edge"), np.pad(r, ((0, 0), (2, 1), (1, 2)), mode="edge"), kind)


def test_pad_empty_and_errors(device):
    e, re = make(device, (0, 2))
    check(e.pad((1, 1, 1, 1), 3.0), np.pad(re, ((1, 1), (1, 1)), constant_values=3.0))
    x, rx = make(device, (3, 4))
    check(x.pad((-1, -1, -1, -1)), rx[1:-1, 1:-1])  # negative amounts crop, as torch's F.pad
    raises(ShapeError, "pad", x.pad, [(1, 1)] * 3)
    raises(ShapeError, "pad", make(device, (4,))[0].pad, (1, 1, 1, 1))
    raises(ShapeError, "pad", x.pad, [(4, 0)], mode="reflect")
    raises(ShapeError, "pad", e.pad, [(1, 0), (0, 0)], mode="edge")
    raises(TypeError, "pad", x.pad, (1, 2, 3))
    raises(TypeError, "pad", x.pad, [(1, 2, 3)])
    raises(ShapeError, "pad", x.pad, (1, 1, 1, 1, 1, 1))
    raises(ValueError, "pad", x.pad, [(1, 1)], mode="wrap")
    raises(KindError, "pad", x.int().pad, [(1, 1)], 0.5)


# ---------------------------------------------------------------------- triangles
@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 5, 3), (0, 3)])
def test_triu_tril(kd, diagonal, shape):
    kind, dev = kd
    if kind is Bool:
        pytest.skip("triu/tril are numeric ops (Burn); Bool is checked in test_triu_tril_errors")
    x, r = make(dev, shape, kind, "permuted")
    check(x.triu(diagonal), np.triu(r, diagonal), kind)
    check(x.tril(diagonal), np.tril(r, diagonal), kind)


def test_triu_tril_errors(device):
    raises(ShapeError, "triu", make(device, (3,))[0].triu)
    raises(ShapeError, "tril", make(device, (3,))[0].tril)
    raises(KindError, "triu", make(device, (3, 3), Bool)[0].triu)


def test_tri_masks_burn_values(device):
    # Burn's tri_mask tests: the masks are TRUE where elements are masked out
    F, T = False, True  # noqa: N806
    check(Tensor.triu_mask([3, 3], 0, device), [[F, F, F], [T, F, F], [T, T, F]], Bool)
    check(Tensor.triu_mask([3, 3], 1, device), [[T, F, F], [T, T, F], [T, T, T]], Bool)
    check(Tensor.tril_mask([3, 3], 0, device), [[F, T, T], [F, F, T], [F, F, F]], Bool)
    check(Tensor.diag_mask([3, 3], 0, device), [[F, T, T], [T, F, T], [T, T, F]], Bool)
    check(Tensor.diag_mask([3, 3], 1, device), [[T, F, T], [T, T, F], [T, T, T]], Bool)


@pytest.mark.parametrize("offset", [-1, 0, 2])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (0, 2)])
def test_tri_masks(device, shape, offset):
    ones = np.ones(shape, dtype=bool)
    check(Tensor.triu_mask(shape, offset, device), ~np.triu(ones, offset), Bool)
    check(Tensor.tril_mask(shape, offset, device), ~np.tril(ones, offset), Bool)
    h, w = shape[-2:]
    diag = np.subtract.outer(np.arange(h), np.arange(w)) == -offset
    check(Tensor.diag_mask(shape, offset, device), np.broadcast_to(~diag, shape), Bool)


def test_tri_mask_errors(device):
    raises(ShapeError, "triu_mask", Tensor.triu_mask, [3], 0, device)
    raises(ShapeError, "tril_mask", Tensor.tril_mask, [2, -1], 0, device)
    raises(TypeError, "diag_mask", Tensor.diag_mask, [2, 2], 0.5, device)


def test_int_kinds_kept(int_device):
    x, r = make(int_device, (2, 3), Int)
    assert x.reshape([3, 2]).dtype is int_device.backend.int_dtype
    assert Tensor.cat([x, x], 0).dtype is int_device.backend.int_dtype
    check(x.pad([(1, 0)], -1), np.pad(r, ((0, 0), (1, 0)), constant_values=-1), Int)


# ---------------------------------------------------------------------- gradients (composites)
def _ad(f64_device):
    from ember.autodiff import Autodiff

    return Autodiff(f64_device.backend).device(f64_device.name)


BASIC_GRADS = [
    ("flatten_movedim", lambda x: x.movedim(0, -1).flatten(0, 1)),
    ("squeeze_unsqueeze", lambda x: x.unsqueeze_dims([0, 2]).squeeze()),
    ("repeat", lambda x: x.repeat([2, 1, 3])),
    ("roll", lambda x: x.roll([1, -2], [0, 2])),
    ("unfold", lambda x: x.unfold(2, 2, 1)),
    ("pad_constant", lambda x: x.pad((1, 2, 0, 1), 0.5)),
    ("pad_reflect", lambda x: x.pad([(2, 1)], mode="reflect")),
    ("pad_edge", lambda x: x.pad((1, 0, 2, 1), mode="edge")),
    ("triu", lambda x: x.triu(1)),
    ("tril", lambda x: x.tril(-1)),
    ("split_cat", lambda x: Tensor.cat(x.split(2, 2)[::-1], 2)),
    ("chunk_stack", lambda x: Tensor.stack(x.chunk(2, 1)[:1] * 2, 0)),
    ("flip_transpose", lambda x: x.flip([0, -1]).transpose()),
]


def test_gradient_through_shape_ops_of_an_empty_tensor(f64_device):
    # the reshape of flatten/squeeze/unsqueeze/repeat keeps the empty dim in the backward pass too: the gradient
    # of a [2, 0, 3] input is an empty [2, 0, 3] tensor, and a sum over nothing leaves a second input's at 1
    x = Tensor.from_data(np.zeros((2, 0, 3)), _ad(f64_device)).require_grad()
    w = Tensor.from_data(np.array([0.5]), _ad(f64_device)).require_grad()
    t = x.unsqueeze_dim(0).flatten(1, 2).repeat([2, 1, 1]).unsqueeze_dim(0).squeeze_dims([0])
    loss = (t.sum() + w).sum()
    grads = loss.backward()
    gx = x.grad(grads)
    assert tuple(gx.shape) == (2, 0, 3)
    check(w.grad(grads), np.array([1.0]))


@pytest.mark.parametrize(("name", "fn"), BASIC_GRADS, ids=[g[0] for g in BASIC_GRADS])
def test_basic_gradients(f64_device, name, fn):
    from ember.autodiff import gradcheck

    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    gradcheck(fn, [x], _ad(f64_device))
