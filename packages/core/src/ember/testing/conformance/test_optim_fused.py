"""Fused optimizer updates (``fused_adam``, ``fused_sgd``, ``fused_rmsprop``, ``fused_lion`` of
:mod:`ember.backend._ops_optim`).

Each update of a list of tensors (a matrix, a vector, a rank-0 tensor, an empty one and one longer than a numpy
chunk) is compared with the textbook formulas in float64 (``torch.optim``'s form: bias-corrected moments, not the
contract's Burn form), on every float dtype, for the backend's kernels and for the contract's composite defaults.
The buffer rule: parameters and gradients are never written (the states may be); scalars given as ``[1]``
primitives (a compiled step's) give the values of Python floats.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ember.backend._ops_optim import OptimOps
from ember.testing import assert_close

from ._module_helpers import ftensor, held

SHAPES = [(3, 4), (5,), (), (0, 2), (70000,)]  # 70000: over numpy's chunk and torch's in-place minimum
LR = 0.03


def _arrays(seed: int, lo: float, hi: float, sign: list[np.ndarray] | None = None) -> list[np.ndarray]:
    """One float64 array per shape of :data:`SHAPES`, magnitudes in ``[lo, hi)``, random signs (or ``sign``'s)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, shape in enumerate(SHAPES):
        mag = rng.uniform(lo, hi, shape)
        s = rng.choice([-1.0, 1.0], shape) if sign is None else np.sign(sign[i])
        out.append(mag * s)
    return out


class Case:
    """The inputs of one update as primitives on ``device`` and the float64 values they hold."""

    def __init__(self, device: Any, **arrays: list[np.ndarray]) -> None:
        self.B = device.backend
        self.tensors = {k: [ftensor(a, device) for a in v] for k, v in arrays.items()}
        # copies: a float64 numpy tensor's to_numpy() is its buffer, which the update may write
        self.values = {k: [held(t).copy() for t in v] for k, v in self.tensors.items()}

    def prims(self, key: str) -> list[Any]:
        return [t.primitive for t in self.tensors[key]]

    def check(self, got: list[Any], want: list[np.ndarray], what: str) -> None:
        assert len(got) == len(want), what
        for p, w, like in zip(got, want, self.tensors["params"]):
            t = type(like)(p, like.device)
            assert t.dtype == like.dtype, f"{what}: dtype"
            assert_close(t, w)


def _impl(B: Any, name: str, composite: bool) -> Any:
    return getattr(OptimOps, name).__get__(B) if composite else getattr(B, name)


def _scalar(B: Any, value: float | None, device: Any, as_tensor: bool) -> Any:
    if value is None or not as_tensor:
        return value
    return ftensor(np.array([value]), device).primitive


# ------------------------------------------------------------------------------------------------ Adam / AdamW
@pytest.mark.parametrize("composite", [False, True], ids=["backend", "composite"])
@pytest.mark.parametrize("amsgrad,penalty,weight_decay", [(False, 0.0, 0.0), (True, 0.1, 0.0), (False, 0.0, 0.2)])
def test_fused_adam(float_device: Any, composite: bool, amsgrad: bool, penalty: float, weight_decay: float) -> None:
    b1, b2, eps, t = 0.9, 0.99, 1e-3, 3
    c = Case(float_device, params=_arrays(1, 0.1, 1.0), grads=_arrays(2, 0.1, 1.0), m=_arrays(3, 0.0, 0.5),
             v=[a * a for a in _arrays(4, 0.1, 1.0)], vm=[a * a for a in _arrays(5, 0.1, 1.0)])
    bc1, bc2 = 1 - b1**t, 1 - b2**t
    decay = None if weight_decay == 0.0 else 1 - LR * weight_decay
    fn = _impl(c.B, "fused_adam", composite)
    ps, ms, vs, vms = fn(c.prims("params"), c.prims("grads"), c.prims("m"), c.prims("v"),
                         c.prims("vm") if amsgrad else None, LR, b1, b2, math.sqrt(bc2) / bc1, eps * math.sqrt(bc2),
                         penalty, decay)
    want_p, want_m, want_v, want_vm = [], [], [], []
    for p, g, m, v, vm in zip(*(c.values[k] for k in ("params", "grads", "m", "v", "vm"))):
        g = g + penalty * p
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        vm = np.maximum(vm, v)
        denom = np.sqrt((vm if amsgrad else v) / bc2) + eps
        want_p.append(p * (1 - LR * weight_decay) - LR * (m / bc1) / denom)
        want_m.append(m)
        want_v.append(v)
        want_vm.append(vm)
    c.check(ps, want_p, "params")
    c.check(ms, want_m, "moment_1")
    c.check(vs, want_v, "moment_2")
    if amsgrad:
        c.check(vms, want_vm, "max_moment_2")
    else:
        assert vms is None


# ------------------------------------------------------------------------------------------------ SGD
@pytest.mark.parametrize("composite", [False, True], ids=["backend", "composite"])
@pytest.mark.parametrize("momentum,dampening,nesterov,first,penalty", [
    (None, 0.0, False, False, 0.0), (None, 0.0, False, False, 0.05), (0.9, 0.1, False, False, 0.0),
    (0.9, 0.0, True, False, 0.05), (0.8, 0.1, False, True, 0.0), (0.8, 0.0, True, True, 0.0),
])
def test_fused_sgd(float_device: Any, composite: bool, momentum: float | None, dampening: float, nesterov: bool,
                   first: bool, penalty: float) -> None:
    c = Case(float_device, params=_arrays(1, 0.1, 1.0), grads=_arrays(2, 0.1, 1.0), vel=_arrays(3, 0.0, 0.5))
    fn = _impl(c.B, "fused_sgd", composite)
    ps, vel = fn(c.prims("params"), c.prims("grads"), None if momentum is None else c.prims("vel"), LR, penalty,
                 momentum or 0.0, dampening, nesterov, first)
    want_p, want_v = [], []
    for p, g, v in zip(*(c.values[k] for k in ("params", "grads", "vel"))):
        g = g + penalty * p
        d = g
        if momentum is not None:
            v = g if first else momentum * v + (1 - dampening) * g
            d = g + momentum * v if nesterov else v
        want_p.append(p - LR * d)
        want_v.append(v)
    c.check(ps, want_p, "params")
    if momentum is None:
        assert vel is None
    else:
        c.check(vel, want_v, "velocity")


# ------------------------------------------------------------------------------------------------ RMSProp
@pytest.mark.parametrize("composite", [False, True], ids=["backend", "composite"])
@pytest.mark.parametrize("centered,momentum,penalty", [(False, 0.0, 0.0), (True, 0.0, 0.1), (False, 0.9, 0.0),
                                                        (True, 0.5, 0.0)])
def test_fused_rmsprop(float_device: Any, composite: bool, centered: bool, momentum: float, penalty: float) -> None:
    alpha, eps = 0.9, 1e-2
    c = Case(float_device, params=_arrays(1, 0.1, 1.0), grads=_arrays(2, 0.1, 1.0),
             s=[a * a for a in _arrays(3, 1.0, 2.0)], a=_arrays(4, 0.0, 0.2), buf=_arrays(5, 0.0, 0.5))
    fn = _impl(c.B, "fused_rmsprop", composite)
    ps, ss, avs, bufs = fn(c.prims("params"), c.prims("grads"), c.prims("s"), c.prims("a") if centered else None,
                           c.prims("buf") if momentum else None, LR, alpha, eps, momentum, penalty)
    want: dict[str, list[np.ndarray]] = {"p": [], "s": [], "a": [], "buf": []}
    for p, g, s, a, buf in zip(*(c.values[k] for k in ("params", "grads", "s", "a", "buf"))):
        g = g + penalty * p
        s = alpha * s + (1 - alpha) * g * g
        a = alpha * a + (1 - alpha) * g
        d = g / (np.sqrt(s - a * a if centered else s) + eps)
        buf = momentum * buf + d
        want["p"].append(p - LR * (buf if momentum else d))
        want["s"].append(s)
        want["a"].append(a)
        want["buf"].append(buf)
    c.check(ps, want["p"], "params")
    c.check(ss, want["s"], "square_avg")
    if centered:
        c.check(avs, want["a"], "grad_avg")
    if momentum:
        c.check(bufs, want["buf"], "momentum")
    assert (avs is None) is (not centered) and (bufs is None) is (not momentum)


# ------------------------------------------------------------------------------------------------ Lion
@pytest.mark.parametrize("composite", [False, True], ids=["backend", "composite"])
@pytest.mark.parametrize("weight_decay", [0.0, 0.5])
def test_fused_lion(float_device: Any, composite: bool, weight_decay: float) -> None:
    b1, b2 = 0.9, 0.99
    grads = _arrays(2, 0.1, 1.0)
    # the momentum has the gradient's sign: sign(b1 m + (1 - b1) g) is never near its jump
    c = Case(float_device, params=_arrays(1, 0.1, 1.0), grads=grads, m=_arrays(3, 0.1, 0.5, sign=grads))
    decay = None if weight_decay == 0.0 else 1 - LR * weight_decay
    ps, ms = _impl(c.B, "fused_lion", composite)(c.prims("params"), c.prims("grads"), c.prims("m"), LR, b1, b2,
                                                 decay)
    want_p, want_m = [], []
    for p, g, m in zip(*(c.values[k] for k in ("params", "grads", "m"))):
        want_p.append(p * (1 - LR * weight_decay) - LR * np.sign(b1 * m + (1 - b1) * g))
        want_m.append(b2 * m + (1 - b2) * g)
    c.check(ps, want_p, "params")
    c.check(ms, want_m, "momentum")


# ------------------------------------------------------------------------------------------------ buffer rule
def _calls(c: Case, lr: Any, factor: Any) -> dict[str, Any]:
    """One call of each update on ``c`` (AMSGrad, momentum, centered: every state list in use)."""
    B = c.B
    return {
        "adam": lambda: B.fused_adam(c.prims("params"), c.prims("grads"), c.prims("m"), c.prims("v"), c.prims("vm"),
                                     lr, 0.9, 0.99, factor, factor, 0.1, None),
        "sgd": lambda: B.fused_sgd(c.prims("params"), c.prims("grads"), c.prims("m"), lr, 0.1, 0.9, 0.0, True,
                                   False),
        "rmsprop": lambda: B.fused_rmsprop(c.prims("params"), c.prims("grads"), c.prims("v"), c.prims("m"),
                                           c.prims("vm"), lr, 0.9, 1e-2, 0.9, 0.1),
        "lion": lambda: B.fused_lion(c.prims("params"), c.prims("grads"), c.prims("m"), lr, 0.9, 0.99, factor),
    }


@pytest.mark.parametrize("rule", ["adam", "sgd", "rmsprop", "lion"])
def test_fused_updates_never_write_parameters_or_gradients(device: Any, rule: str) -> None:
    c = Case(device, params=_arrays(1, 0.1, 1.0), grads=_arrays(2, 0.1, 1.0), m=_arrays(3, 0.0, 0.5),
             v=[a * a + 4.0 for a in _arrays(4, 0.1, 1.0)], vm=[a * a for a in _arrays(5, 0.1, 1.0)])
    out = _calls(c, LR, 0.5)[rule]()
    for key in ("params", "grads"):
        for t, before in zip(c.tensors[key], c.values[key]):
            np.testing.assert_array_equal(held(t), before, err_msg=f"{rule} wrote its {key}")
    new_params = out[0]
    for p, old in zip(new_params, c.prims("params")):
        assert p is not old, f"{rule}: a new parameter must be a new primitive"


@pytest.mark.parametrize("rule", ["adam", "sgd", "rmsprop", "lion"])
def test_fused_updates_take_scalars_as_1_element_primitives(device: Any, rule: str) -> None:
    # a compiled step passes lr and the bias terms as [1] primitives: same values as Python floats
    def run(as_tensor: bool) -> list[np.ndarray]:
        c = Case(device, params=_arrays(1, 0.1, 1.0), grads=_arrays(2, 0.1, 1.0), m=_arrays(3, 0.0, 0.5),
                 v=[a * a + 4.0 for a in _arrays(4, 0.1, 1.0)], vm=[a * a for a in _arrays(5, 0.1, 1.0)])
        out = _calls(c, _scalar(c.B, LR, device, as_tensor), _scalar(c.B, 0.5, device, as_tensor))[rule]()
        return [held(type(t)(p, device)).reshape(t.shape) for p, t in zip(out[0], c.tensors["params"])]

    for got, want in zip(run(True), run(False)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
