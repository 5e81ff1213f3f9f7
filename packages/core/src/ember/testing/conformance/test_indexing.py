"""Indexing ops (Burn's BasicOps, indexing half) against numpy references and hand-written
loops: slice / slice_assign / slice_fill / slice_dim, ``t[...]``, select / select_assign, take,
gather / scatter, gather_nd / scatter_nd, mask_where / mask_fill, nonzero / argwhere, unique."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import Bool, DeviceError, Float, IndexError, Int, KindError, ShapeError, Tensor
from ember.testing.conformance import _shape_helpers
from ember.testing.conformance._shape_helpers import LAYOUTS, check, make, raises, raises_out_of_range

kd = _shape_helpers.kd  # fixture: (kind, device) for every kind and element type

SHAPE3 = (3, 4, 5)


def _ints(dev, values):
    return Tensor.from_data(np.asarray(values, dtype=np.int64), dev, Int)


def _other_device(device):
    return ember.backend(device.backend.name, float_dtype="float64").device()


# ---------------------------------------------------------------------- slice
PY_SLICES = [
    [slice(None)],
    [slice(1, 3)],
    [slice(None, None, -1)],
    [slice(-2, None), slice(None, None, 2), slice(4, 0, -2)],
    [slice(None), slice(-1, -5, -1)],
    [slice(5, 1), slice(10, 20)],
    [slice(-100, 100, 3), slice(3, None, -3)],
    [1, slice(None), -1],
]


@pytest.mark.parametrize("ranges", PY_SLICES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_slice_python_slices(kd, ranges, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    key = tuple(slice(i, i + 1 if i != -1 else None) if isinstance(i, int) else i for i in ranges)
    check(x.slice(ranges), r[key], kind)


@pytest.mark.parametrize(
    ("rng", "idx"),
    [
        ((1, 4), [1, 2, 3]),
        ((0, 5, -2), [4, 2, 0]),  # Burn: the range 0..5 walked backward
        ((None, None, -1), [4, 3, 2, 1, 0]),
        ((-3, None), [2, 3, 4]),
        ((1, -1, 2), [1, 3]),
        ((-100, 100), [0, 1, 2, 3, 4]),
        ((3, 1), []),
        ((1, 5, -3), [4, 1]),
        (None, [0, 1, 2, 3, 4]),
        (-2, [3]),
        (range(4, 0, -2), [4, 2]),
        ((1, 5, 2**63 - 1), [1]),  # a step past the dim takes one element (no stride overflow: torch's)
        ((0, 5, -(2**63)), [4]),
        (slice(3, None, 2**63 - 1), [3]),
        (slice(-1, -(2**63), -(2**63) + 1), [4]),
    ],
    ids=str,
)
def test_slice_burn_ranges(device, rng, idx):
    x, r = make(device, (2, 5), Float, "flipped")
    check(x.slice([slice(None), rng]), r[:, idx])
    check(x.slice_dim(1, rng), r[:, idx])
    check(x.slice_dim(-1, rng), r[:, idx])


def test_slice_rank0_and_empty(device):
    s = Tensor.from_data(4.0, device)
    check(s.slice([]), np.asarray(4.0))
    e, re = make(device, (0, 3))
    check(e.slice([slice(None), slice(None, None, -1)]), re[:, ::-1])
    check(e.slice([slice(1, 5)]), re[1:5])


def test_slice_errors(device):
    x, _ = make(device, SHAPE3)
    raises(IndexError, "slice", x.slice, [3])
    raises(IndexError, "slice", x.slice, [0, -5])
    raises(IndexError, "slice", x.slice, [slice(None, None, 0)])
    raises(IndexError, "slice", x.slice, [(0, 2, 0)])
    raises(IndexError, "slice", x.slice, [None, None, None, None])
    raises(TypeError, "slice", x.slice, ["a"])
    raises(TypeError, "slice", x.slice, (0, 2))  # ambiguous: a range or two indices
    raises(IndexError, "slice_dim", x.slice_dim, 3, slice(None))
    raises(IndexError, "slice_dim", x.slice_dim, 0, 7)


@pytest.mark.parametrize(
    "ranges",
    [[slice(1, 3)], [slice(None, None, -1), slice(0, 4, 2)], [(0, 5, -2), 1], [2, (1, 4), slice(4, None, -2)]],
    ids=str,
)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_slice_assign_and_fill(kd, ranges, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    region = x.slice(ranges)
    v, rv = make(dev, region.shape, kind, "flipped", seed=7)
    out = x.slice_assign(ranges, v)
    # reference: write value v elementwise at the coordinates the region reads, via an index map
    coords = np.arange(r.size).reshape(r.shape)
    pos = Tensor.from_data(coords, dev, Int).slice(ranges).to_numpy().ravel()
    exp = r.copy().ravel()
    exp[pos] = rv.ravel()
    check(out, exp.reshape(r.shape), kind)
    check(x, r, kind)  # the input is unchanged (immutability)
    val = {Float: 1.5, Int: -3, Bool: True}[kind]
    exp_fill = r.copy().ravel()
    exp_fill[pos] = val
    check(x.slice_fill(ranges, val), exp_fill.reshape(r.shape), kind)


def test_slice_assign_errors(device):
    x, _ = make(device, (3, 4))
    raises(ShapeError, "slice_assign", x.slice_assign, [slice(0, 2)], make(device, (3, 4))[0])
    raises(KindError, "slice_assign", x.slice_assign, [slice(0, 2)], make(device, (2, 4), Int)[0])
    raises(TypeError, "slice_assign", x.slice_assign, [slice(0, 2)], 1.0)
    raises(IndexError, "slice_assign", x.slice_assign, [5], make(device, (1, 4))[0])
    other = Tensor.from_data(np.zeros((2, 4)), _other_device(device))
    raises(DeviceError, "slice_assign", x.slice_assign, [slice(0, 2)], other)
    raises(IndexError, "slice_fill", x.slice_fill, [0, 9], 1.0)
    raises(KindError, "slice_fill", x.int().slice_fill, [0], 0.5)


# ---------------------------------------------------------------------- select / take
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_select(kd, dim, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    n = SHAPE3[dim]
    idx = [n - 1, 0, 0, 1]
    check(x.select(dim, _ints(dev, idx)), np.take(r, idx, axis=dim), kind)
    check(x.select(dim, idx), np.take(r, idx, axis=dim), kind)
    check(x.select(dim, _ints(dev, [])), np.take(r, np.zeros(0, dtype=np.int64), axis=dim), kind)


def test_select_assign_accumulates(kd):
    kind, dev = kd
    if kind is Bool:
        pytest.skip("select_assign adds values: numeric kinds only")
    x, r = make(dev, SHAPE3, kind, "permuted")
    idx = [2, 0, 2, 2]
    v, rv = make(dev, (3, 4, 4), kind, "flipped", seed=3)
    exp = r.astype(np.float64).copy()
    for j, i in enumerate(idx):
        exp[:, :, i] += rv[:, :, j]
    check(x.select_assign(2, _ints(dev, idx), v), exp, kind)
    check(x.select_assign(-1, [], make(dev, (3, 4, 0), kind)[0]), r, kind)


@pytest.mark.parametrize("ishape", [(), (4,), (2, 3)])
@pytest.mark.parametrize("dim", [0, 2, -2])
def test_take(kd, ishape, dim):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, "permuted")
    n = SHAPE3[dim]
    idx = np.random.default_rng(1).integers(0, n, size=ishape)
    check(x.take(dim, _ints(dev, idx)), np.take(r, idx, axis=dim), kind)


def test_select_take_errors(device):
    x, _ = make(device, SHAPE3)
    raises(ShapeError, "select", x.select, 0, _ints(device, [[0, 1]]))
    raises(KindError, "select", x.select, 0, Tensor.from_data([0.0, 1.0], device))
    raises(KindError, "select", x.select, 0, Tensor.from_data([True], device))
    raises(KindError, "select", x.select, 0, [0.5])
    raises(IndexError, "select", x.select, 3, [0])
    raises_out_of_range(device, "select", x.select, 0, [3])
    other = Tensor.from_data(np.array([0]), _other_device(device))
    raises(DeviceError, "select", x.select, 0, other)
    raises_out_of_range(device, "take", x.take, 1, _ints(device, [[0, 4]]))
    raises(IndexError, "take", x.take, -4, [0])
    v, _ = make(device, (3, 4, 2))
    raises(ShapeError, "select_assign", x.select_assign, 2, [0, 1, 2], v)
    raises_out_of_range(device, "select_assign", x.select_assign, 2, [0, 5], v)
    raises(KindError, "select_assign", x.select_assign, 2, [0, 1], v.int())


# ---------------------------------------------------------------------- gather / scatter
def _gather_ref(r, dim, idx):
    out = np.empty(idx.shape, dtype=r.dtype)
    for pos in np.ndindex(*idx.shape):
        src = list(pos)
        src[dim] = idx[pos]
        out[pos] = r[tuple(src)]
    return out


def _scatter_ref(r, dim, idx, vals):
    out = r.astype(np.float64).copy()
    for pos in np.ndindex(*idx.shape):
        dst = list(pos)
        dst[dim] = idx[pos]
        out[tuple(dst)] += vals[pos]
    return out


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_gather(kd, dim, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    ishape = list(SHAPE3)
    ishape[dim] = 6
    idx = np.random.default_rng(2).integers(0, SHAPE3[dim], size=ishape)
    check(x.gather(dim, _ints(dev, idx)), _gather_ref(r, dim % 3, idx), kind)
    ishape[dim] = 0
    check(x.gather(dim, _ints(dev, np.zeros(ishape, dtype=np.int64))), np.zeros(ishape, dtype=r.dtype), kind)


def test_gather_burn_example(int_device):
    # Burn's should_gather_2d_dim0
    x = Tensor.from_data([[0, 1, 2], [3, 4, 5]], int_device)
    check(x.gather(0, _ints(int_device, [[0, 1, 0], [1, 0, 1]])), [[0, 4, 2], [3, 1, 5]], Int)


@pytest.mark.parametrize("dim", [0, 2, -2])
def test_scatter_adds(kd, dim):
    kind, dev = kd
    if kind is Bool:
        pytest.skip("scatter adds values: numeric kinds only")
    x, r = make(dev, SHAPE3, kind, "flipped")
    ishape = list(SHAPE3)
    ishape[dim] = 7  # more entries than the dim: indices repeat and must accumulate
    idx = np.random.default_rng(4).integers(0, SHAPE3[dim], size=ishape)
    v, rv = make(dev, tuple(ishape), kind, "permuted", seed=5)
    check(x.scatter(dim, _ints(dev, idx), v), _scatter_ref(r, dim % 3, idx, rv), kind)


@pytest.mark.parametrize("dim", [0, 2, -2])
def test_zeros_scatter_add(device, dim):
    """The gather's backward op: zeros with the values added at the indices (repeats accumulate), a new buffer."""
    ishape = list(SHAPE3)
    ishape[dim] = 7
    idx = np.random.default_rng(6).integers(0, SHAPE3[dim], size=ishape)
    v, rv = make(device, tuple(ishape), Float, "permuted", seed=7)
    ops = device.ops[0]
    out = Tensor(ops.zeros_scatter_add(SHAPE3, dim % 3, _ints(device, idx).primitive, v.primitive), device, Float)
    check(out, _scatter_ref(np.zeros(SHAPE3), dim % 3, idx, rv))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_zeros_select_add(device, dim):
    """The select's (and the embedding's) backward op: zeros with slices added at 1-D indices, repeats accumulating."""
    idx = np.array([1, 0, 1, 2, 1, 0])
    idx = idx[idx < SHAPE3[dim]]
    vshape = list(SHAPE3)
    vshape[dim] = len(idx)
    v, rv = make(device, tuple(vshape), Float, "permuted", seed=8)
    ref = np.zeros(SHAPE3)
    for j, i in enumerate(idx):
        dst = [slice(None)] * 3
        src = [slice(None)] * 3
        dst[dim], src[dim] = i, j
        ref[tuple(dst)] += rv[tuple(src)]
    ops = device.ops[0]
    out = Tensor(ops.zeros_select_add(SHAPE3, dim, _ints(device, idx).primitive, v.primitive), device, Float)
    check(out, ref)


def test_gather_scatter_errors(device):
    x, _ = make(device, (3, 4))
    raises(ShapeError, "gather", x.gather, 0, _ints(device, [0, 1]))
    raises(ShapeError, "gather", x.gather, 0, _ints(device, [[0, 1]]))
    raises_out_of_range(device, "gather", x.gather, 0, _ints(device, [[0, 1, 3, 0]]))
    raises(IndexError, "gather", x.gather, 2, _ints(device, [[0]]))
    raises(KindError, "gather", x.gather, 0, Tensor.from_data([[0.0] * 4], device))
    v, _ = make(device, (1, 4))
    raises(ShapeError, "scatter", x.scatter, 0, _ints(device, [[0, 1, 2, 0]]), make(device, (2, 4))[0])
    raises_out_of_range(device, "scatter", x.scatter, 0, _ints(device, [[0, 1, 3, 0]]), v)
    raises(KindError, "scatter", x.scatter, 0, _ints(device, [[0, 1, 2, 0]]), v.int())


# ---------------------------------------------------------------------- gather_nd / scatter_nd
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("lead", [(4,), (2, 3), ()])
def test_gather_nd(kd, k, lead):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, "permuted")
    rng = np.random.default_rng(k)
    idx = np.stack([rng.integers(0, SHAPE3[i], size=lead) for i in range(k)], axis=-1)
    out = x.gather_nd(_ints(dev, idx))
    exp = np.empty(lead + SHAPE3[k:], dtype=r.dtype)
    for pos in np.ndindex(*lead):
        exp[pos] = r[tuple(idx[pos])]
    check(out, exp, kind)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_scatter_nd_adds(kd, k):
    kind, dev = kd
    if kind is Bool:
        pytest.skip("scatter_nd adds values: numeric kinds only")
    x, r = make(dev, SHAPE3, kind, "flipped")
    idx = np.array([[2, 1, 4][:k], [0, 3, 0][:k], [2, 1, 4][:k]])  # a repeated coordinate accumulates
    v, rv = make(dev, (3,) + SHAPE3[k:], kind, seed=9)
    exp = r.astype(np.float64).copy()
    for j in range(3):
        exp[tuple(idx[j])] += rv[j]
    check(x.scatter_nd(_ints(dev, idx), v), exp, kind)


def test_nd_errors(device):
    x, _ = make(device, (3, 3))
    raises(ShapeError, "gather_nd", x.gather_nd, _ints(device, [[0, 1, 2]]))
    raises(ShapeError, "gather_nd", x.gather_nd, _ints(device, np.zeros((2, 0), dtype=np.int64)))
    # (0, 5) would alias the in-range flat position 5 = (1, 2) if components were not checked
    raises_out_of_range(device, "gather_nd", x.gather_nd, _ints(device, [[0, 5]]))
    raises_out_of_range(device, "gather_nd", x.gather_nd, _ints(device, [[1, -1]]))
    raises(KindError, "gather_nd", x.gather_nd, Tensor.from_data([[0.0, 1.0]], device))
    v, _ = make(device, (1,))
    raises_out_of_range(device, "scatter_nd", x.scatter_nd, _ints(device, [[0, 3]]), v)
    raises(ShapeError, "scatter_nd", x.scatter_nd, _ints(device, [[0, 1]]), make(device, (2,))[0])
    raises(KindError, "scatter_nd", x.scatter_nd, _ints(device, [[0, 1]]), v.int())


# ---------------------------------------------------------------------- masks
@pytest.mark.parametrize("mshape", [SHAPE3, (4, 1), (5,), ()])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_mask_where_and_fill(kd, mshape, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    m, rm = make(dev, mshape, Bool, "flipped" if mshape else "contiguous", seed=11)
    v, rv = make(dev, SHAPE3[1:], kind, "permuted", seed=12)
    check(x.mask_where(m, v), np.where(rm, rv, r), kind)
    val = {Float: -0.75, Int: 9, Bool: False}[kind]
    check(x.mask_fill(m, val), np.where(rm, val, r), kind)


def test_mask_errors(device):
    x, _ = make(device, (3, 4))
    m, _ = make(device, (3, 4), Bool)
    raises(KindError, "mask_where", x.mask_where, x, x)
    raises(KindError, "mask_fill", x.mask_fill, m.int(), 0.0)
    raises(ShapeError, "mask_fill", x.mask_fill, make(device, (2, 4), Bool)[0], 0.0)
    raises(ShapeError, "mask_fill", x.mask_fill, make(device, (2, 3, 4), Bool)[0], 0.0)
    raises(ShapeError, "mask_where", x.mask_where, m, make(device, (2, 3, 4))[0])
    raises(KindError, "mask_where", x.mask_where, m, x.int())
    raises(TypeError, "mask_where", x.mask_where, m, 1.0)
    raises(KindError, "mask_fill", x.int().mask_fill, m, 0.5)
    other = Tensor.from_data(np.ones((3, 4), dtype=bool), _other_device(device))
    raises(DeviceError, "mask_fill", x.mask_fill, other, 0.0)


# ---------------------------------------------------------------------- nonzero / argwhere
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 2), (0, 3)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_nonzero_argwhere(int_device, shape, layout):
    x, r = make(int_device, shape, Bool, layout, seed=13)
    cols = x.nonzero()
    assert len(cols) == len(shape)
    for c, e in zip(cols, np.nonzero(r)):
        check(c, e, Int)
        assert c.dtype is int_device.backend.int_dtype
    aw = x.argwhere()
    check(aw, np.argwhere(r).reshape(-1, len(shape)), Int)
    assert aw.dtype is int_device.backend.int_dtype
    none = Tensor.from_data(np.zeros(shape, dtype=bool), int_device)
    assert none.argwhere().shape == (0, len(shape))


def test_nonzero_errors(device):
    raises(KindError, "nonzero", Tensor.from_data([1.0, 0.0], device).nonzero)
    raises(KindError, "argwhere", Tensor.from_data([1, 0], device).argwhere)
    raises(ShapeError, "argwhere", Tensor.from_data(True, device).argwhere)


# ---------------------------------------------------------------------- unique
def _np_unique(r, dim, sorted_):
    """numpy.unique's four results; for ``sorted_=False`` reordered by first occurrence (by hand)."""
    vals, first, inv, counts = np.unique(r, axis=dim, return_index=True, return_inverse=True, return_counts=True)
    inv = inv.reshape(-1)
    if sorted_:
        return vals, first, inv, counts
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return np.take(vals, order, axis=0 if dim is None else dim), first[order], rank[inv], counts[order]


UNIQUE_CASES = [
    ([2, 1, 1, 3, 4, 3], None),
    ([[1, 0, 0], [1, 0, 0], [2, 3, 4]], 0),
    ([[1, 0, 0, 1], [1, 0, 0, 1], [2, 3, 4, 2]], 1),
    ([[[1, 2], [1, 2]], [[0, 5], [1, 2]], [[1, 2], [1, 2]]], -3),
    ([[5, 5], [5, 5]], None),
    ([7], None),
    ([], None),
]


@pytest.mark.parametrize(("values", "dim"), UNIQUE_CASES, ids=[str(i) for i in range(len(UNIQUE_CASES))])
@pytest.mark.parametrize("sorted_", [True, False])
def test_unique(device, values, dim, sorted_):
    r = np.asarray(values, dtype=np.float64)
    x = Tensor.from_data(r, device)
    got = x.unique(dim, sorted=sorted_)
    want = _np_unique(r, dim, sorted_)
    check(got[0], want[0].reshape(got[0].shape) if r.size == 0 else want[0], Float)
    for g, w in zip(got[1:], want[1:]):
        check(g, w.astype(np.int64), Int)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_unique_random_ints_and_bools(int_device, seed):
    rng = np.random.default_rng(seed)
    r = rng.integers(-3, 3, size=(6, 4))
    for dim in (None, 0, 1):
        for sorted_ in (True, False):
            got = Tensor.from_data(r, int_device).unique(dim, sorted=sorted_)
            for g, w in zip(got, _np_unique(r, dim, sorted_)):
                check(g, w, Int)
    b = r > 0
    got = Tensor.from_data(b, int_device).unique()
    check(got[0], np.unique(b), Bool)
    check(got[3], np.unique(b, return_counts=True)[1], Int)


def test_unique_errors_and_gradient(f64_device):
    from ember.autodiff import Autodiff

    raises(IndexError, "unique", Tensor.from_data([[1.0]], f64_device).unique, 2)
    raises(ShapeError, "unique", Tensor.from_data(1.0, f64_device).unique, 0)
    ad = Autodiff(f64_device.backend).device(f64_device.name)
    x = Tensor.from_data([3.0, 1.0, 3.0, 2.0], ad).require_grad()
    vals, *_ = x.unique()
    grads = (vals * Tensor.from_data([1.0, 10.0, 100.0], ad)).sum().backward()  # 1, 2, 3: first at 1, 3, 0
    check(x.grad(grads), [100.0, 1.0, 0.0, 10.0])


# ---------------------------------------------------------------------- t[...] and Python protocol
KEYS = [
    1,
    -1,
    (1, 2),
    (-1, slice(None, None, 2)),
    (Ellipsis, 0),
    (Ellipsis, None),
    (None, Ellipsis, slice(1, None)),
    slice(None, None, -1),
    (slice(None), slice(-1, 0, -2), None, -2),
    (slice(1, 1),),
    (0, None, slice(None), None, 3),
    (slice(None), [2, 0, -1]),
    ([0, 0, 2],),
    (1, Ellipsis, [4, 1]),
    (slice(None, None, -1), [[0, 1], [3, 3]]),
    (),
]


@pytest.mark.parametrize("key", KEYS, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_getitem(kd, key, layout):
    kind, dev = kd
    x, r = make(dev, SHAPE3, kind, layout)
    check(x[key], r[key], kind)


def test_getitem_index_tensor(device):
    x, r = make(device, SHAPE3, Float, "permuted")
    idx = np.array([[3, 0], [1, 1]])
    check(x[:, _ints(device, idx)], r[:, idx])
    check(x[..., np.array([4, 0])], r[..., [4, 0]])


def test_getitem_rank0_and_iter(device):
    s = Tensor.from_data(2.0, device)
    check(s[()], np.asarray(2.0))
    check(s[None], np.array([2.0]))
    check(s[...], np.asarray(2.0))
    x, r = make(device, (3, 2), Float, "flipped")
    assert len(x) == 3
    rows = list(x)
    assert len(rows) == 3
    for row, e in zip(rows, r):
        check(row, e)


def test_getitem_errors(device):
    x, _ = make(device, SHAPE3)
    raises(IndexError, "indexing", x.__getitem__, (0, 0, 0, 0))
    raises(IndexError, "indexing", x.__getitem__, 3)
    raises(IndexError, "indexing", x.__getitem__, (slice(None), -5))
    raises(IndexError, "indexing", x.__getitem__, (Ellipsis, Ellipsis))
    raises(IndexError, "indexing", x.__getitem__, (slice(None, None, 0),))
    raises(IndexError, "indexing", x.__getitem__, (slice(None), [0, 4]))
    raises_out_of_range(device, "indexing", x.__getitem__, (slice(None), _ints(device, [0, 4])))
    raises(TypeError, "indexing", x.__getitem__, True)
    raises(TypeError, "indexing", x.__getitem__, ([0], [1]))
    raises(TypeError, "indexing", x.__getitem__, make(device, SHAPE3, Bool)[0])
    raises(TypeError, "indexing", x.__getitem__, "a")
    raises(KindError, "indexing", x.__getitem__, Tensor.from_data([0.0], device))


def test_setitem_is_rejected(device):
    x, _ = make(device, (2, 2))
    with pytest.raises(TypeError) as info:
        x[0] = 1.0
    assert "immutable" in str(info.value) and "slice_assign" in str(info.value)


# ---------------------------------------------------------------------- gradients (composites)
def _i(x, values):
    return Tensor.from_data(np.asarray(values, dtype=np.int64), x.device, Int)


INDEX_GRADS = [
    ("getitem", 1, lambda x: x[1:, ::-2, None, [3, 0, 3]]),
    ("getitem_int_list", 1, lambda x: x[0, :, [1, 1]]),
    ("slice_neg_step", 1, lambda x: x.slice([(0, 3, -1), slice(None, None, -2)])),
    ("slice_assign", 2, lambda x, v: x.slice_assign([slice(0, 2), (1, 5, -2)], v[:2, :2])),
    ("slice_fill", 1, lambda x: x.slice_fill([1, slice(None, None, -2)], 2.0)),
    ("select", 1, lambda x: x.select(1, _i(x, [2, 0, 2]))),
    ("select_assign", 2, lambda x, v: x.select_assign(0, _i(x, [1, 1]), v[:2])),
    ("take", 1, lambda x: x.take(2, _i(x, [[0, 4], [4, 4]]))),
    ("gather", 1, lambda x: x.gather(1, _i(x, np.zeros((3, 2, 5), dtype=np.int64) + [[[0], [3]]]))),
    ("scatter", 2, lambda x, v: x.scatter(0, _i(x, np.ones((2, 4, 5), dtype=np.int64)), v[:2])),
    ("gather_nd", 1, lambda x: x.gather_nd(_i(x, [[0, 1], [2, 3], [0, 1]]))),
    ("scatter_nd", 2, lambda x, v: x.scatter_nd(_i(x, [[0, 1], [0, 1]]), v[0, :2])),
    ("mask_where", 2, lambda x, v: x.mask_where(x.greater_elem(0.0), v)),
    ("mask_fill", 1, lambda x: x.mask_fill(x.lower_elem(0.0), -1.0)),
]


@pytest.mark.parametrize(("name", "n", "fn"), INDEX_GRADS, ids=[g[0] for g in INDEX_GRADS])
def test_indexing_gradients(f64_device, name, n, fn):
    from ember.autodiff import Autodiff, gradcheck

    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(SHAPE3) for _ in range(n)]
    gradcheck(fn, xs, Autodiff(f64_device.backend).device(f64_device.name))


def test_autodiff_accepts_indices_of_its_inner_device(f64_device):
    from ember.autodiff import Autodiff

    ad = Autodiff(f64_device.backend).device(f64_device.name)
    r = np.arange(12.0).reshape(3, 4)
    x = Tensor.from_data(r, ad)
    inner_idx = _ints(f64_device, [2, 0])  # Int tensor on the plain inner device
    check(x.select(0, inner_idx), r[[2, 0]])
    check(x.gather_nd(_ints(ad, [[1, 3]])), r[[1], [3]])
    check(Tensor.from_data(r, f64_device).take(1, _ints(ad, [3])), r[:, [3]])
    m = Tensor.from_data(r > 5, f64_device)
    check(x.mask_fill(m, 0.0), np.where(r > 5, 0.0, r))
    other = ember.backend(f64_device.backend.name, float_dtype="float32").device()
    raises(DeviceError, "select", x.select, 0, _ints(other, [0]))
