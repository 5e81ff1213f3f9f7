"""Backward primitives of the activations (:mod:`ember.backend._ops_activation_grad`).

Each is compared on every float dtype with the derivative in float64 numpy (written from the activation's
definition, central differences for the tanh form of GELU), for the backend's kernel and the contract's
composite. The ``Autodiff`` rules that call them are checked by finite differences in ``test_autodiff_rules``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ember import Tensor
from ember.backend._ops_activation_grad import ActivationGradOps
from ember.testing import assert_close

from ._module_helpers import ftensor, held

rng = np.random.default_rng(5)
_erf = np.vectorize(math.erf)


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _softmax(x: np.ndarray, dim: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _case(name: str, x: np.ndarray, g: np.ndarray, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """``(the saved operand the primitive takes: y or x, the expected input gradient)`` in float64."""
    if name == "relu":
        return np.maximum(x, 0.0), g * (x > 0)
    if name == "sigmoid":
        s = 1.0 / (1.0 + np.exp(-x))
        return s, g * s * (1.0 - s)
    if name == "tanh":
        t = np.tanh(x)
        return t, g * (1.0 - t * t)
    if name == "gelu":
        return x, g * (0.5 * (1.0 + _erf(x / math.sqrt(2.0))) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi))
    if name == "gelu_tanh":
        h = 1e-6
        return x, g * (_gelu_tanh(x + h) - _gelu_tanh(x - h)) / (2 * h)
    if name == "softmax":
        y = _softmax(x, dim)
        return y, y * (g - (g * y).sum(axis=dim, keepdims=True))
    y = np.log(_softmax(x, dim))  # log_softmax
    return y, g - np.exp(y) * g.sum(axis=dim, keepdims=True)


def _call(fn: Any, name: str, g: Any, saved: Any, dim: int) -> Any:
    if name.startswith("gelu"):
        return fn(g, saved, name == "gelu_tanh")
    if name in ("softmax", "log_softmax"):
        return fn(g, saved, dim)
    return fn(g, saved)


NAMES = ["relu", "sigmoid", "tanh", "gelu", "gelu_tanh", "softmax", "log_softmax"]


@pytest.mark.parametrize("composite", [False, True], ids=["backend", "composite"])
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("name", NAMES)
def test_activation_backward(float_device: Any, name: str, dim: int, composite: bool) -> None:
    B = float_device.backend
    # |x| >= 0.05: relu's kink is never at a sample
    x = rng.uniform(0.05, 2.5, (3, 5)) * rng.choice([-1.0, 1.0], (3, 5))
    g = ftensor(rng.normal(0.0, 1.0, (3, 5)), float_device)
    xt = ftensor(x, float_device)
    saved, want = _case(name, held(xt), held(g), dim)
    op = name.split("_tanh")[0] + "_backward"
    fn = getattr(ActivationGradOps, op).__get__(B) if composite else getattr(B, op)
    got = Tensor(_call(fn, name, g.primitive, ftensor(saved, float_device).primitive, dim), float_device)
    assert got.dtype == xt.dtype
    assert_close(got, want)
