"""Inductor compiles the captured graph directly (``torch._inductor.compile``, no TorchDynamo; issue 32): no
``torch.compile`` call for a default-backend step, and a new combination of argument strides (a transposed batch)
compiles once more instead of failing inductor's stride check, with results equal to the eager step's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember_torch
from ember import Tensor
from ember.optim import AdamConfig, SgdConfig
from test_compile import DEV, Batch, lr_tensor, mlp, params_np, train_step, weights, xor_batch

torch = pytest.importorskip("torch")

from ember_torch import _capture_inductor  # noqa: E402


def test_default_backend_runs_without_torch_compile(monkeypatch: Any) -> None:
    """A ``mode="default"`` step never calls ``torch.compile`` (TorchDynamo): inductor gets the captured graph and
    the call's tensors; the graph it returns runs every call."""
    calls: list[tuple[int, dict[str, Any]]] = []

    def refuse(*a: Any, **kw: Any) -> Any:
        raise AssertionError("torch.compile was called")

    def spy(gm: Any, example_inputs: list[Any], options: dict[str, Any]) -> Any:
        assert all(isinstance(t, torch.Tensor) for t in example_inputs)
        calls.append((len(example_inputs), options))
        return gm

    monkeypatch.setattr(torch, "compile", refuse)
    monkeypatch.setattr(_capture_inductor, "compile_graph", spy)
    step = ember_torch.compile(train_step, mode="default")
    model, optim, batch = mlp(weights()), SgdConfig().init(), xor_batch()
    for _ in range(3):
        model, _loss = step(model, optim, batch, lr_tensor(0.1))
    gm = step.graph(model, optim, batch, lr_tensor(0.1))
    assert len(calls) == 1 and calls[0][0] == len(gm.graph.find_nodes(op="placeholder"))


def _transposed(batch: Batch) -> Batch:
    """The same batch with ``x`` as a column-major view (strides (1, n) instead of (2, 1))."""
    x = batch.x.to_numpy()
    return Batch(Tensor.from_data(np.ascontiguousarray(x.T), DEV).transpose(), batch.y)


def test_new_strides_compile_again_and_equal_eager() -> None:
    """Inductor's code asserts its arguments' strides; a transposed batch after a row-major one compiles a second
    variant (not an error), a row-major batch again reuses the first, and every step equals the eager step (Adam:
    its moments are written in place, so a failed first attempt must have written nothing)."""
    step = ember_torch.compile(train_step, mode="default")
    ws, batch = weights(), xor_batch()
    m_c, m_e = mlp(ws), mlp(ws)
    o_c, o_e = AdamConfig().init().init_states(m_c), AdamConfig().init().init_states(m_e)
    batches = [batch, _transposed(batch), batch, _transposed(batch)]
    for b in batches:
        m_c, lc = step(m_c, o_c, b, lr_tensor(0.1))
        m_e, le = train_step(m_e, o_e, b, 0.1)
        np.testing.assert_allclose(lc.into_scalar(), le.into_scalar(), rtol=1e-10)
    for a, b in zip(params_np(m_c), params_np(m_e), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    (entry,) = step._cache.values()
    assert isinstance(entry.run, _capture_inductor.InductorRun) and entry.run.compiles == 2


def test_stride_variants_are_bounded(monkeypatch: Any) -> None:
    """Each new combination of strides compiles once (a stand-in compiler that, as inductor's code, asserts the
    strides it was compiled for); past ``VARIANTS_MAX`` combinations a call replays the captured graph, with one
    RuntimeWarning, and gives the same results."""
    compiled: list[tuple[Any, ...]] = []

    def fake(gm: Any, example_inputs: list[Any], options: dict[str, Any]) -> Any:
        want = tuple(t.stride() for t in example_inputs)
        compiled.append(want)

        def run(*args: Any) -> Any:
            got = tuple(t.stride() for t in args)
            if got != want:
                raise AssertionError(f"expected size 2==2, stride {got}=={want} at dim=0")
            return gm(*args)

        return run

    monkeypatch.setattr(_capture_inductor, "compile_graph", fake)
    monkeypatch.setattr(_capture_inductor, "VARIANTS_MAX", 2)
    f = ember_torch.compile(lambda x: x * 2.0 + 1.0, mode="default")
    base = np.arange(24, dtype=np.float64).reshape(2, 3, 4)
    views = [Tensor.from_data(np.ascontiguousarray(base.transpose(p)), DEV).permute(list(np.argsort(p)))
             for p in [(0, 1, 2), (2, 1, 0), (1, 0, 2), (0, 2, 1)]]
    for v in views[:2] + views[:2]:
        np.testing.assert_allclose(f(v).to_numpy(), base * 2.0 + 1.0)
    assert len(compiled) == 2
    with pytest.warns(RuntimeWarning, match="combinations of strides") as rec:
        for v in views[2:] + views[2:]:
            np.testing.assert_allclose(f(v).to_numpy(), base * 2.0 + 1.0)
    assert len(rec) == 1 and len(compiled) == 2
    for v in views[:2]:  # the compiled variants still serve their strides
        np.testing.assert_allclose(f(v).to_numpy(), base * 2.0 + 1.0)
    assert len(compiled) == 2


@pytest.mark.parametrize("mode", [None, "default"])
def test_a_failed_inductor_compile_is_a_refusal(monkeypatch: Any, mode: Any) -> None:
    """Any error while inductor compiles (here a plain RuntimeError, as the C++ or Triton compiler may raise) is a
    refusal of torch's compiler: with the device's default mode the step replays its captured graph with a
    RuntimeWarning (the eager step's results), with a mode asked for it is a BackendError naming the reason."""
    from ember import BackendError
    from ember_torch import _compile

    def broken(gm: Any, example_inputs: Any, options: Any) -> Any:
        raise RuntimeError("triton: out of shared memory")

    monkeypatch.setattr(_capture_inductor, "compile_graph", broken)
    monkeypatch.setattr(_compile, "default_mode", lambda leaves: "default")  # what a CUDA step gets
    step = ember_torch.compile(train_step, mode=mode)
    model, optim, batch = mlp(weights()), SgdConfig().init(), xor_batch()
    if mode is not None:
        with pytest.raises(BackendError, match=r"(?s)refused the captured step.*out of shared memory"):
            step(model, optim, batch, lr_tensor(0.1))
        return
    with pytest.warns(RuntimeWarning, match=r"(?s)refused the captured step.*out of shared memory.*CompileFailed"):
        got, loss = step(model, optim, batch, lr_tensor(0.1))
    want, want_loss = train_step(mlp(weights()), SgdConfig().init(), batch, 0.1)
    np.testing.assert_allclose(loss.into_scalar(), want_loss.into_scalar(), rtol=1e-12)
    for a, b in zip(params_np(got), params_np(want), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
