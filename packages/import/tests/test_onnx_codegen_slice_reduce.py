"""ModelGen on ``Slice`` bounds and ``Reduce*`` axes read from the data (issue 30).

``Slice``'s ``starts``/``ends``/``axes``/``steps`` and a reduction's ``axes`` are graph inputs here: the generated
``forward`` reads them when it runs and plans with ONNX's rules there (the host rule
:func:`ember_import.onnx.rules.slice_ranges`; a reduction of an empty input is its identity whatever the axes).
One generated file must give the reference answer for *several different* values of those inputs, out-of-range
bounds, ``INT64`` extremes, negative steps, empty axes and a reduction over an empty dim among them (the trace's
own stand-in values differ from all of them). References: numpy float64 with ONNX's clamping written out
independently (onnx/docs/Operators.md, ``Slice`` 13) or onnxruntime.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from _codegen_support import generate_numpy, one_node_model  # noqa: E402
from ember_import.onnx import ModelGen, ModelGenError, OnnxImportError, converter, load_model  # noqa: E402

h = onnx.helper
TP = onnx.TensorProto
I64_MAX = int(np.iinfo(np.int64).max)
I64_MIN = int(np.iinfo(np.int64).min)


_model = one_node_model


def _outputs(net: Any, model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The generated module's output and load_model's on ``feeds`` (numpy backend)."""
    dev = ember.backend("numpy").device()
    args = [Tensor.from_data(v, dev, dtype=str(v.dtype)) for v in feeds.values()]
    runtime = load_model(model, dev)
    return [np.asarray(m(*args).to_data().to_numpy()) for m in (net, runtime)]


def _check(net: Any, model: Any, feeds: dict[str, np.ndarray], want: np.ndarray) -> None:
    for got in _outputs(net, model, feeds):
        assert got.shape == want.shape, (got.shape, want.shape, {k: v.tolist() for k, v in feeds.items() if v.size < 9})
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-6)


# ---------------------------------------------------------------------------------------------- Slice
def _slice_ref(x: np.ndarray, starts: list[int], ends: list[int], axes: list[int], steps: list[int]) -> np.ndarray:
    """``Slice`` 13 in numpy, the clamping as Operators.md words it: negative bounds count from the end, then both
    are clamped into ``[0, n]`` for a positive step; for a negative one the start into ``[0, n - 1]`` and the end
    into ``[-1, n - 1]``; the indices are ``range(start, end, step)``."""
    for s, e, a, st in zip(starts, ends, axes, steps):
        n = x.shape[a]
        s, e = (s + n if s < 0 else s), (e + n if e < 0 else e)
        if st > 0:
            s, e = min(max(s, 0), n), min(max(e, 0), n)
        else:
            s, e = min(max(s, 0), n - 1), min(max(e, -1), n - 1)
        x = np.take(x, np.arange(s, e, st, dtype=np.int64), axis=a)
    return x


def _ort(model: Any, feeds: dict[str, np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


XS = np.random.default_rng(0).standard_normal((5, 6, 7)).astype(np.float32)
BOUNDS = [  # (starts, ends, axes, steps)
    ([0, 1], [3, 5], [0, 1], [1, 2]),
    ([-3, -1], [-1, -7], [2, 1], [1, -1]),  # negative bounds; a negative step to the beginning
    ([-100, 100], [100, -100], [0, -1], [1, -1]),  # out of range both ways
    ([0, I64_MAX], [I64_MAX, I64_MIN], [1, 2], [2, -3]),  # INT64 extremes: to the end / to the beginning
    ([-100, 2], [I64_MIN, 0], [0, 2], [-1, 1]),  # a start below -n with a negative step clamps to 0: x[0] kept
    ([4, 0], [1, 6], [0, 1], [1, 1]),  # start after end: empty
    ([6, 2], [I64_MIN, I64_MAX], [-3, -1], [-2, 3]),  # a start past the end with a negative step: from n - 1
    ([1, 1], [7, 1], [2, 0], [I64_MAX, -1]),  # a huge step: one element; start == end with a negative step: empty
]


def _slice_model(with_axes: bool = True, with_steps: bool = True, count: int = 2, x_shape: Any = (5, 6, 7)) -> Any:
    names = ["x", "starts", "ends"] + ["axes"] * with_axes + ["steps"] * with_steps
    ins = [("x", TP.FLOAT, list(x_shape))] + [(n, TP.INT64, [count]) for n in names[1:]]
    return _model(h.make_node("Slice", names, ["y"]), ins, ("y", TP.FLOAT, len(x_shape)), opset=13)


def test_slice_bounds_axes_and_steps_read_when_forward_runs(tmp_path: Path) -> None:
    model = _slice_model()
    net, _, src = generate_numpy(model, tmp_path, "slice_all", "_generated_sr")
    assert "rules.slice_ranges(" in src and "[5, 6, 7]" in src and ".slice(ranges)" in src  # planned when forward runs
    for starts, ends, axes, steps in BOUNDS:
        feeds = {
            k: np.array(v, np.int64) for k, v in zip(("starts", "ends", "axes", "steps"), (starts, ends, axes, steps))
        }
        want = _slice_ref(XS, starts, ends, axes, steps)
        np.testing.assert_array_equal(_ort(model, {"x": XS, **feeds}), want)  # the reference is onnxruntime's
        _check(net, model, {"x": XS, **feeds}, want)


def test_slice_of_every_axis_with_negative_steps(tmp_path: Path) -> None:
    # as ONNX's test_slice_neg_steps: three axes, every step negative (the trace's stand-ins must be valid too)
    model = _slice_model(count=3)
    net, _, _ = generate_numpy(model, tmp_path, "slice_neg", "_generated_sr")
    for starts, ends, axes, steps in (
        ([5, 10, 4], [0, 0, 1], [0, 1, 2], [-1, -3, -2]),
        ([I64_MAX, -1, -1], [I64_MIN, -7, -8], [2, 0, 1], [-1, -2, -5]),
        ([0, 2, 3], [1, 0, 0], [1, 2, 0], [1, -1, -1]),
    ):
        feeds = {
            k: np.array(v, np.int64) for k, v in zip(("starts", "ends", "axes", "steps"), (starts, ends, axes, steps))
        }
        _check(net, model, {"x": XS, **feeds}, _slice_ref(XS, starts, ends, axes, steps))


def test_slice_without_axes_and_steps_inputs(tmp_path: Path) -> None:
    # the default axes are 0 .. len(starts) - 1, the default steps 1
    model = _slice_model(with_axes=False, with_steps=False)
    net, _, _ = generate_numpy(model, tmp_path, "slice_default", "_generated_sr")
    for starts, ends in (([0, 1], [3, 5]), ([-2, -100], [I64_MAX, -1]), ([3, 4], [2, 4])):
        feeds = {"starts": np.array(starts, np.int64), "ends": np.array(ends, np.int64)}
        _check(net, model, {"x": XS, **feeds}, _slice_ref(XS, starts, ends, [0, 1], [1, 1]))


def test_slice_of_a_dynamic_batch_with_bounds_from_the_data(tmp_path: Path) -> None:
    # the rule gets the symbolic batch size, so the same code slices every batch
    model = _slice_model(x_shape=("batch", 6, 7))
    net, _, src = generate_numpy(model, tmp_path, "slice_batch", "_generated_sr")
    assert "rules.slice_ranges(" in src and "[batch, 6, 7]" in src
    rng = np.random.default_rng(5)
    for b in (1, 4, 9):
        x = rng.standard_normal((b, 6, 7)).astype(np.float32)
        for starts, ends, axes, steps in BOUNDS[:5]:
            feeds = {
                k: np.array(v, np.int64)
                for k, v in zip(("starts", "ends", "axes", "steps"), (starts, ends, axes, steps))
            }
            _check(net, model, {"x": x, **feeds}, _slice_ref(x, starts, ends, axes, steps))


def _const_slice_model(bounds: dict[str, list[int]]) -> Any:
    """``y = Slice(x, *bounds)`` of ``x: float32[batch, 6, 7]`` with the bounds as initializers (in ``bounds``'
    order: starts, ends, axes[, steps])."""
    consts = [onnx.numpy_helper.from_array(np.array(v, np.int64), n) for n, v in bounds.items()]
    node = h.make_node("Slice", ["x", *bounds], ["y"])
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, ["batch", 6, 7])],
        [h.make_tensor_value_info("y", TP.FLOAT, [None, None, None])],
        initializer=consts,
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 13)])


def test_slice_with_constant_bounds_stays_python_indexing(tmp_path: Path) -> None:
    # bounds that are initializers fold: no rule call in forward, the slice written as indexing
    model = _const_slice_model({"starts": [1, -3], "ends": [I64_MAX, -1], "axes": [1, 2]})
    net, _, src = generate_numpy(model, tmp_path, "slice_const", "_generated_sr")
    assert "rules" not in src and "x[:, 1:, 4:6]" in src
    for b in (2, 3):
        x = np.random.default_rng(b).standard_normal((b, 6, 7)).astype(np.float32)
        _check(net, model, {"x": x}, x[:, 1:, 4:6])


def test_slice_with_a_constant_negative_step_names_the_whole_dims_none(tmp_path: Path) -> None:
    # torch.flip's export: a backward walk of one dim, the others whole
    model = _const_slice_model({"starts": [-1], "ends": [I64_MIN], "axes": [1], "steps": [-1]})
    net, _, src = generate_numpy(model, tmp_path, "slice_flip", "_generated_sr")
    assert "x.slice([None, (0, 6, -1)])" in src
    for b in (1, 3):
        x = np.random.default_rng(b).standard_normal((b, 6, 7)).astype(np.float32)
        _check(net, model, {"x": x}, x[:, ::-1])


def test_slice_step_of_zero_read_when_forward_runs_is_an_error(tmp_path: Path) -> None:
    model = _slice_model()
    net, dev, _ = generate_numpy(model, tmp_path, "slice_zero", "_generated_sr")
    args = [
        Tensor.from_data(v, dev, dtype=str(v.dtype))
        for v in (XS, *(np.array(v, np.int64) for v in ([0, 0], [2, 2], [0, 1], [1, 0])))
    ]
    with pytest.raises(OnnxImportError, match="a step of 0 on axis 1"):
        net(*args)
    args[3] = Tensor.from_data(np.array([1, 1], np.int64), dev)  # axes [1, 1]
    with pytest.raises(OnnxImportError, match="repeat axis 1"):
        net(*args)


# ---------------------------------------------------------------------------------------------- reductions
def _reduce_ref(op: str, x: np.ndarray, axes: list[int] | None, keepdims: bool) -> np.ndarray:
    """ONNX's reductions in float64 with their empty-set values written out: sum 0, product 1, max -inf (the
    type's lowest for ints), min +inf, log-sums -inf, mean NaN."""
    ax = tuple(range(x.ndim)) if axes is None else tuple(a % x.ndim for a in axes)
    v = x.astype(np.float64)
    empty = any(x.shape[a] == 0 for a in ax)
    if op in ("ReduceMax", "ReduceMin"):
        if x.dtype.kind == "i":
            bound = np.iinfo(x.dtype).min if op == "ReduceMax" else np.iinfo(x.dtype).max
            out = (np.max if op == "ReduceMax" else np.min)(x, axis=ax, keepdims=keepdims, initial=bound)
            return out.astype(x.dtype)
        init = -np.inf if op == "ReduceMax" else np.inf
        y = (np.max if op == "ReduceMax" else np.min)(v, axis=ax, keepdims=keepdims, initial=init)
    elif op == "ReduceSum":
        y = v.sum(axis=ax, keepdims=keepdims)
    elif op == "ReduceProd":
        y = v.prod(axis=ax, keepdims=keepdims)
    elif op == "ReduceL1":
        y = np.abs(v).sum(axis=ax, keepdims=keepdims)
    elif op == "ReduceL2":
        y = np.sqrt((v * v).sum(axis=ax, keepdims=keepdims))
    elif op == "ReduceSumSquare":
        y = (v * v).sum(axis=ax, keepdims=keepdims)
    elif op == "ReduceLogSum":
        with np.errstate(divide="ignore"):
            y = np.log(v.sum(axis=ax, keepdims=keepdims))
    elif op == "ReduceLogSumExp":
        with np.errstate(divide="ignore"):
            y = np.log(np.exp(v).sum(axis=ax, keepdims=keepdims))
    elif op == "ReduceMean":
        shape = np.sum(v, axis=ax, keepdims=keepdims).shape
        y = np.full(shape, np.nan) if empty else v.mean(axis=ax, keepdims=keepdims)
    else:
        raise AssertionError(op)
    return y.astype(x.dtype)


REDUCTIONS = [
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceSumSquare",
    "ReduceMean",
]
EMPTY = np.zeros((2, 0, 3), np.float32)


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduction_of_an_empty_input_with_axes_read_when_forward_runs(op: str, keepdims: int, tmp_path: Path) -> None:
    # axes that hit the empty dim give ONNX's identity; axes that miss it give an empty result of the right shape
    node = h.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims)
    model = _model(node, [("x", TP.FLOAT, [2, 0, 3]), ("axes", TP.INT64, [2])], ("y", TP.FLOAT, 3 if keepdims else 1))
    net, _, src = generate_numpy(model, tmp_path, f"{op}_{keepdims}", "_generated_sr")
    assert "axes.tolist()" in src  # the axes are read when forward runs, not the trace's stand-ins as constants
    for axes in ([1, 0], [-2, 2], [0, 2], [-1, -3], [2, 1]):
        _check(net, model, {"x": EMPTY, "axes": np.array(axes, np.int64)}, _reduce_ref(op, EMPTY, axes, bool(keepdims)))


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin", "ReduceSum", "ReduceProd"])
def test_int_reduction_of_an_empty_input_gives_the_types_bounds(op: str, tmp_path: Path) -> None:
    x = np.zeros((3, 0), np.int32)
    node = h.make_node(op, ["x", "axes"], ["y"], keepdims=1)
    model = _model(node, [("x", TP.INT32, [3, 0]), ("axes", TP.INT64, [1])], ("y", TP.INT32, 2))
    net, _, _ = generate_numpy(model, tmp_path, f"int_{op}", "_generated_sr")
    for axes in ([1], [-1], [0], [-2]):
        _check(net, model, {"x": x, "axes": np.array(axes, np.int64)}, _reduce_ref(op, x, axes, True))


@pytest.mark.parametrize("op", ["ReduceMax", "ReduceMin"])
def test_bool_reduction_of_an_empty_input(op: str, tmp_path: Path) -> None:
    # ReduceMax/Min of bools (opset 20): any/all, so an empty set gives False/True
    x = np.zeros((0, 2), np.bool_)
    node = h.make_node(op, ["x", "axes"], ["y"], keepdims=0)
    model = _model(node, [("x", TP.BOOL, [0, 2]), ("axes", TP.INT64, [1])], ("y", TP.BOOL, 1), opset=20)
    net, _, _ = generate_numpy(model, tmp_path, f"bool_{op}", "_generated_sr")
    for axes, want in (([0], [op == "ReduceMin"] * 2), ([-2], [op == "ReduceMin"] * 2), ([1], []), ([-1], [])):
        _check(net, model, {"x": x, "axes": np.array(axes, np.int64)}, np.array(want, np.bool_))


@pytest.mark.parametrize("noop", [0, 1])
@pytest.mark.parametrize("shape", [[2, 3, 4], [2, 0, 4]])
def test_empty_axes_input_with_and_without_noop_with_empty_axes(noop: int, shape: list[int], tmp_path: Path) -> None:
    # no axes: every axis is reduced, or (noop_with_empty_axes=1) the input comes back unchanged
    node = h.make_node("ReduceMax", ["x", "axes"], ["y"], keepdims=1, noop_with_empty_axes=noop)
    model = _model(node, [("x", TP.FLOAT, shape), ("axes", TP.INT64, [0])], ("y", TP.FLOAT, 3))
    net, _, _ = generate_numpy(model, tmp_path, f"noop_{noop}_{shape[1]}", "_generated_sr")
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = rng.standard_normal(shape).astype(np.float32)
        want = x if noop else _reduce_ref("ReduceMax", x, None, True)
        _check(net, model, {"x": x, "axes": np.zeros([0], np.int64)}, want)


# ---------------------------------------------------------------------------------------------- refusal
@converter("BranchOnData", domain="test.ember.slice_reduce", static=(1,))
def _branch_on_data(ctx: Any, node: Any, x: Tensor, k: Tensor) -> Tensor:
    """A converter that picks a computation by a value read from the data (what generated code cannot keep)."""
    return x.neg() if ctx.ints(k)[0] > 0 else x.abs()


def test_a_converter_branching_on_a_value_read_from_the_data_is_refused(tmp_path: Path) -> None:
    node = h.make_node("BranchOnData", ["x", "k"], ["y"], domain="test.ember.slice_reduce")
    graph = h.make_graph(
        [node],
        "g",
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3]), h.make_tensor_value_info("k", TP.INT64, [1])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, 3])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18), h.make_opsetid("test.ember.slice_reduce", 1)])
    onnx.save(model, tmp_path / "branch.onnx")
    with pytest.raises(ModelGenError, match="branches on a value read from the data"):
        ModelGen().input(tmp_path / "branch.onnx").out_dir(tmp_path / "branch").run()
