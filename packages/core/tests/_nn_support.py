"""Helpers of the ``test_nn_*`` files: backends to run on, tensors from numpy, and a comparison of an
Ember computation (forward + gradients under ``Autodiff``) against PyTorch in float64."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import ember
from ember import Tensor
from ember.autodiff import Autodiff


def available_backends() -> list[str]:
    names = []
    for n in ("numpy", "torch", "jax"):
        try:
            ember.backend(n)
        except Exception:  # a backend that does not load is skipped, not failed
            continue
        names.append(n)
    return names


BACKENDS = available_backends()


def ad_device(name: str) -> Any:
    return Autodiff(ember.backend(name)).device()


def plain_device(name: str) -> Any:
    return ember.backend(name).device()


def tensor(a: Any, dev: Any) -> Tensor:
    return Tensor.from_data(np.asarray(a, dtype=np.float32), dev)


def ints(a: Any, dev: Any) -> Tensor:
    return Tensor.from_data(np.asarray(a, dtype=np.int64), dev, ember.Int)


def to_np(t: Any) -> np.ndarray:
    if isinstance(t, (np.ndarray, list, tuple, float)):
        return np.asarray(t, dtype=np.float64)
    if hasattr(t, "detach") and hasattr(t, "numpy") and not isinstance(t, Tensor):  # torch
        return t.detach().double().numpy()
    return np.asarray(t.to_numpy(), dtype=np.float64)


def assert_close(actual: Any, expected: Any, rtol: float = 1e-5, atol_scale: float = 1e-5, what: str = "") -> None:
    """float32 results against a float64 reference: element-wise ``rtol`` plus an absolute slack of
    ``atol_scale`` times the largest reference magnitude (sums of many float32 terms)."""
    a, e = to_np(actual), to_np(expected)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != {e.shape}"
    scale = float(np.max(np.abs(e))) if e.size else 1.0
    np.testing.assert_allclose(a, e, rtol=rtol, atol=atol_scale * max(scale, 1e-3), err_msg=what)


def torch_t(a: Any, grad: bool = False) -> Any:
    import torch

    return torch.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


def check_grads(
    ember_out: Tensor,
    torch_out: Any,
    ember_leaves: Sequence[tuple[str, Tensor]],
    torch_leaves: Sequence[Any],
    transforms: Sequence[Callable[[np.ndarray], np.ndarray] | None] | None = None,
    seed: int = 0,
    rtol: float = 1e-5,
    atol_scale: float = 1e-5,
) -> None:
    """Compare the forward outputs, then the gradients of ``sum(out * R)`` (R random, the same on both
    sides) with respect to each leaf. ``transforms[i]`` maps torch's gradient to Ember's layout (e.g. a
    transpose for Linear weights)."""
    import torch

    assert_close(ember_out, torch_out, rtol, atol_scale, "forward")
    r = np.random.default_rng(seed).standard_normal(tuple(ember_out.shape))
    grads = (ember_out * tensor(r, ember_out.device)).sum().backward()
    (torch_out * torch.tensor(r)).sum().backward()
    for i, ((name, leaf), tl) in enumerate(zip(ember_leaves, torch_leaves)):
        g = leaf.grad(grads)
        assert g is not None, f"no gradient for {name}"
        expected = tl.grad.detach().numpy()
        if transforms is not None and transforms[i] is not None:
            expected = transforms[i](expected)  # type: ignore[misc]
        assert_close(g, expected, rtol, atol_scale, f"grad of {name}")


def param_np(p: Any) -> np.ndarray:
    return np.asarray(p.val().to_numpy(), dtype=np.float64)
