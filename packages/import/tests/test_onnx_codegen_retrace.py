"""ModelGen's second trace (``codegen/_retrace.py``): a model with dynamic dims is generated again with other
sizes for them, and a converter whose host arithmetic turned a dim into a constant of the traced size is refused
instead of writing code that is silently wrong at every other size."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ember
from _codegen_support import generate_numpy
from ember import Tensor
from ember_import.onnx import ModelGenError, _registry, load_model
from ember_import.onnx.codegen._retrace import has_dynamic_dims

DOMAIN = "test.retrace"


def _model(batch: Any) -> onnx.ModelProto:
    """``y = Scale(x)`` of the test domain, ``x: float32[batch, 3]``."""
    node = helper.make_node("Scale", ["x"], ["y"], domain=DOMAIN)
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)])


@pytest.fixture
def scale_op(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[Tensor], Any]], list[int]]:
    """Registers ``Scale`` (domain ``test.retrace``) as ``x * factor(x)`` for the test; returns the list of the
    batch sizes the converter saw (one entry per run or trace)."""

    def install(factor: Callable[[Tensor], Any]) -> list[int]:
        seen: list[int] = []

        def scale(ctx: Any, node: Any, x: Tensor) -> Tensor:
            seen.append(int(x.shape[0]))
            return x * factor(x)

        _registry.lookup("Relu", "", 18)  # the built-in converters first (the table loads once)
        monkeypatch.setitem(_registry._TABLE, (DOMAIN, "Scale"), [_registry.Converter(scale, "Scale", DOMAIN, 1, ())])
        return seen

    return install


def _dev() -> Any:
    return ember.backend("numpy").device()


def _run(net: Any, batch: int, dev: Any) -> np.ndarray:
    """``net`` (a generated or runtime module) on :func:`_x` of ``batch`` rows."""
    return np.asarray(net(Tensor.from_data(_x(batch), dev)).to_data().to_numpy())


def _x(batch: int) -> np.ndarray:
    return np.random.default_rng(batch).standard_normal((batch, 3)).astype(np.float32)


def test_float_on_the_left_of_a_dim_is_refused(scale_op: Any, tmp_path: Path) -> None:
    # ``2.5 * dim``: float.__mul__ takes the int subclass and returns 2.5 * <the traced size>, a plain float
    seen = scale_op(lambda x: 2.5 * x.shape[0])
    model = _model("batch")
    rt = load_model(model, _dev())  # the runtime is right at any batch: the converter reads the real size
    for b in (1, 4):
        np.testing.assert_allclose(_run(rt, b, _dev()), _x(b) * 2.5 * b, rtol=1e-6)
    with pytest.raises(ModelGenError, match="specialised on a traced size") as ei:
        generate_numpy(model, tmp_path, "left", "retrace")
    msg = str(ei.value)
    assert "load_model" in msg
    assert "5.0" in msg and "17.5" in msg  # the constant at the first trace's size 2, and at the second's 7
    assert "Scale node" in msg  # the node whose output the line computes
    assert not (tmp_path / "left").exists()  # nothing written
    assert sorted(set(seen) - {1, 4}) == [2, 7]  # traced at both sets of sizes


def test_dim_on_the_left_generates_code_right_at_every_batch(scale_op: Any, tmp_path: Path) -> None:
    # ``dim * 2.5``: the Sym keeps the expression, so the code computes the factor from the input's batch
    scale_op(lambda x: x.shape[0] * 2.5)
    net, dev, src = generate_numpy(_model("batch"), tmp_path, "right", "retrace")
    for b in (1, 2, 5, 9):
        np.testing.assert_allclose(_run(net, b, dev), _x(b).astype(np.float64) * 2.5 * b, rtol=1e-6)


def test_static_model_is_traced_once(scale_op: Any, tmp_path: Path) -> None:
    # no dynamic dim: no size can leak, so no second trace (a fixed batch of 4 is a constant of the code)
    seen = scale_op(lambda x: 2.5 * x.shape[0])
    model = _model(4)
    assert not has_dynamic_dims(load_model(model, _dev()).program.graph)
    seen.clear()
    net, dev, _ = generate_numpy(model, tmp_path, "static", "retrace")
    assert seen == [4]  # traced once
    np.testing.assert_allclose(_run(net, 4, dev), _x(4) * 10.0, rtol=1e-6)


def test_refusal_at_the_other_sizes_is_a_refusal(scale_op: Any, tmp_path: Path) -> None:
    # a converter whose host planning takes another (unsupported) path at other sizes: the first trace's code
    # would hold only the traced size's path, so generation is refused, saying why
    def factor(x: Tensor) -> Any:
        if x.shape[0] > 5:
            raise ModelGenError("Scale: large batches take a path generated code cannot write")
        return 2.0

    scale_op(factor)
    with pytest.raises(ModelGenError, match="traced again with other sizes.*large batches"):
        generate_numpy(_model("batch"), tmp_path, "other", "retrace")
    assert not (tmp_path / "other").exists()
