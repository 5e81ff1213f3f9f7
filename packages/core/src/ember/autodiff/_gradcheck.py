"""``gradcheck``: compare autodiff gradients with central finite differences.

A testing utility (the conformance suite checks every differentiable op with it); like
``torch.autograd.gradcheck``, use float64.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._kind import Float

__all__ = ["gradcheck"]


def gradcheck(fn: Callable[..., Any], inputs: Sequence[Any], device: Any, *, eps: float = 1e-6,
              atol: float = 1e-6, rtol: float = 1e-5, seed: int = 0) -> None:
    """Check the gradients of ``fn`` at ``inputs`` against central differences.

    ``fn(*tensors)`` returns a Float tensor; it must build any constant it needs on its inputs'
    device (``x.device``), because it is called both on the autodiff ``device`` (for the
    gradients) and on ``device.inner`` (for the finite differences). The scalar differentiated is
    ``sum(fn(*x) * w)`` with fixed random weights ``w``, so every output element is checked with a
    non-trivial incoming gradient.

    Args:
        fn: the function of Float tensors to check.
        inputs: numpy arrays (float64), one per argument of ``fn``.
        device: a device of an ``Autodiff`` backend, ideally with float64.
        eps: step of the central differences ``(f(x + eps) - f(x - eps)) / (2 eps)``.
        atol: absolute tolerance of the comparison (numpy.isclose).
        rtol: relative tolerance of the comparison (numpy.isclose).
        seed: seed of the weights ``w``.

    Raises:
        AssertionError: a gradient differs; the message names the input, the element, both values.
    """
    from ..tensor import Tensor

    rng = np.random.default_rng(seed)
    arrays = [np.asarray(a, dtype=np.float64) for a in inputs]
    xs = [Tensor.from_data(a, device, Float).require_grad() for a in arrays]
    out = fn(*xs)
    w = rng.standard_normal(out.shape)
    loss = (out * Tensor.from_data(w, device, Float)).sum()
    grads = loss.backward()
    inner = device.inner

    def f(arrs: list[np.ndarray]) -> float:
        r = fn(*[Tensor.from_data(a, inner, Float) for a in arrs])
        return float((np.asarray(r.to_numpy(), dtype=np.float64) * w).sum())

    for i, (x, a) in enumerate(zip(xs, arrays)):
        g = x.grad(grads)
        got = np.zeros_like(a) if g is None else np.asarray(g.to_numpy(), dtype=np.float64)
        if got.shape != a.shape:
            raise AssertionError(f"input {i}: gradient shape {list(got.shape)}, expected {list(a.shape)}")
        num = np.zeros_like(a)
        flat = num.reshape(-1)
        for j in range(a.size):
            arrs = [b.copy() for b in arrays]
            arrs[i].reshape(-1)[j] += eps
            fp = f(arrs)
            arrs[i].reshape(-1)[j] -= 2 * eps
            fm = f(arrs)
            flat[j] = (fp - fm) / (2 * eps)
        ok = np.isclose(got, num, atol=atol, rtol=rtol)
        if not ok.all():
            bad = tuple(int(k) for k in np.argwhere(~ok)[0])
            raise AssertionError(
                f"input {i}: {int((~ok).sum())} of {a.size} gradient elements differ from central "
                f"differences; first at {list(bad)}: autodiff {got[bad]!r}, numeric {num[bad]!r}\n"
                f"autodiff:\n{got}\nnumeric:\n{num}"
            )
