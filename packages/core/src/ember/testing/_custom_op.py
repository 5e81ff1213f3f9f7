"""``check_custom_op``: a custom op's kernel and backward on one backend against its default (issue 34)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._kind import Float
from ._assert import tolerance_for

__all__ = ["check_custom_op"]

#: finite differences are run on at most this many elements per input (the first ones, in order)
FD_ELEMENTS = 64


def _arrays(op: Any, inputs: Sequence[Any], rng: np.random.Generator) -> list[np.ndarray]:
    if len(inputs) != len(op.inputs):
        raise ValueError(f"check_custom_op: {op.name!r} takes {len(op.inputs)} tensor inputs, got {len(inputs)}.")
    out = []
    for i, (a, k) in enumerate(zip(inputs, op.inputs)):
        if isinstance(a, tuple) and all(isinstance(d, int) for d in a):
            if k is not Float:
                raise ValueError(f"check_custom_op: input {i} is {k.name}: give its values (an array), not a shape.")
            out.append(rng.standard_normal(a))
        else:
            out.append(np.asarray(a, dtype=np.float64 if k is Float else None))
    return out


def _compare(what: str, got: Any, want: np.ndarray, atol: float, rtol: float) -> float:
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"{what}: shape {list(got.shape)}, expected {list(want.shape)}")
    ok = np.isclose(got, want, atol=atol, rtol=rtol)
    if not ok.all():
        bad = tuple(int(k) for k in np.argwhere(~ok)[0])
        raise AssertionError(f"{what}: {int((~ok).sum())} of {want.size} elements differ (atol={atol}, rtol={rtol}); "
                             f"first at {list(bad)}: got {got[bad]!r}, expected {want[bad]!r}")
    return float(np.abs(got - want).max()) if want.size else 0.0


def check_custom_op(op: Any, *inputs: Any, backend: str = "numpy", static: dict[str, Any] | None = None,
                    float_dtype: str | None = None, grad: bool = True, seed: int = 0, atol: float | None = None,
                    rtol: float | None = None, eps: float = 1e-6) -> dict[str, float]:
    """Check a custom op on ``backend`` against its default, run on numpy in float64.

    ``inputs`` are shapes (random standard-normal Float inputs) or arrays, one per tensor input of ``op``. Checked:

    - the forward on ``backend`` (its kernel if it has one, else the default) against the default on numpy float64;
    - with ``grad``, the gradients under ``Autodiff(backend)`` (the op's backward rule, or the derived one) of
      ``sum(op(x) * w)`` with random ``w``, against the default's derived gradients on numpy float64, which are
      themselves checked against central finite differences (on the first :data:`FD_ELEMENTS` elements of each
      Float input).

    Args:
        op: a :class:`~ember.extension.CustomOp` with a default.
        inputs: one shape or array per tensor input.
        backend: the installed backend to check (``"numpy"``, ``"torch"``, ``"jax"``, a third party's).
        static: the op's static arguments.
        float_dtype: the backend's float dtype (default: the backend's own).
        grad: also check the gradients.
        seed: seed of the random inputs and of ``w``.
        atol: absolute tolerance (default: 10x the conformance suite's for the dtype).
        rtol: relative tolerance (same).
        eps: step of the finite differences.

    Returns:
        the largest absolute error of each comparison: ``{"forward": ..., "grad 0": ..., ...}``.

    Raises:
        AssertionError: a value differs; the message names the comparison, the element and both values.
        ValueError: the op has no default, or the inputs do not match its signature.
    """
    import ember

    from ..autodiff import Autodiff
    from ..tensor import Tensor

    if op.default is None:
        raise ValueError(f"check_custom_op: {op.name!r} has no default to check its kernels against.")
    static = dict(static or {})
    rng = np.random.default_rng(seed)
    arrays = _arrays(op, inputs, rng)
    B = ember.backend(backend, **({"float_dtype": float_dtype} if float_dtype else {}))
    t_atol, t_rtol = (10 * t for t in tolerance_for(B.float_dtype))
    atol = t_atol if atol is None else atol
    rtol = t_rtol if rtol is None else rtol
    ref_b = ember.backend("numpy", float_dtype="float64")
    ref_dev, dev = ref_b.device(), B.device()

    def tensors(device: Any, arrs: Sequence[np.ndarray]) -> list[Any]:
        return [Tensor.from_data(a, device, k) for a, k in zip(arrs, op.inputs)]

    ref = np.asarray(op.default(*tensors(ref_dev, arrays), **static).to_numpy(), dtype=np.float64)
    report = {"forward": _compare(f"{op.name} forward on {backend}", op(*tensors(dev, arrays), **static).to_numpy(),
                                  ref, atol, rtol)}
    if not grad:
        return report
    w = rng.standard_normal(ref.shape)

    def grads(device: Any, fn: Any) -> list[Any]:
        xs = tensors(device, arrays)
        xs = [x.require_grad() if k is Float else x for x, k in zip(xs, op.inputs)]
        g = fn(*xs, **static).mul(Tensor.from_data(w, device, Float)).sum().backward()
        return [None if k is not Float else x.grad(g) for x, k in zip(xs, op.inputs)]

    want = grads(Autodiff(ref_b).device(), op.default)
    got = grads(Autodiff(B).device(), op)

    def loss(arrs: list[np.ndarray]) -> float:
        y = op.default(*tensors(ref_dev, arrs), **static).to_numpy()
        return float((np.asarray(y, dtype=np.float64) * w).sum())

    for i, (g, r, k) in enumerate(zip(got, want, op.inputs)):
        if k is not Float:
            continue
        r_np = np.zeros_like(arrays[i]) if r is None else np.asarray(r.to_numpy(), dtype=np.float64)
        n = min(arrays[i].size, FD_ELEMENTS)
        num = np.empty(n)
        for j in range(n):
            arrs = [a.copy() for a in arrays]
            arrs[i].reshape(-1)[j] += eps
            fp = loss(arrs)
            arrs[i].reshape(-1)[j] -= 2 * eps
            num[j] = (fp - loss(arrs)) / (2 * eps)
        _compare(f"{op.name} default's gradient {i} against finite differences", r_np.reshape(-1)[:n], num,
                 1e-5, 1e-4)
        g_np = np.zeros_like(arrays[i]) if g is None else g.to_numpy()
        report[f"grad {i}"] = _compare(f"{op.name} gradient {i} on Autodiff({backend})", g_np, r_np, atol, rtol)
    return report
