"""Finite-difference checks of every backward rule of ``ember.autodiff`` on the backend under test.

Each case calls the backend primitive directly (``device.ops[0].<name>``) on float64 inputs,
under ``Autodiff(backend)`` for the gradients and on the plain backend for central differences,
so the rule table is checked op by op on every backend. Inputs stay away from kinks (``abs`` at
0, ties of ``max``) and domain edges (``log`` at 0). ``test_every_rule_has_a_case`` fails when a
rule has no case here.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ember import Float, Tensor
from ember.autodiff import COMPOSITE, RULES, gradcheck

rng = np.random.default_rng(1234)


def U(*shape: int, lo: float = -1.0, hi: float = 1.0) -> np.ndarray:
    return rng.uniform(lo, hi, shape)


def POS(*shape: int) -> np.ndarray:
    return rng.uniform(0.5, 2.0, shape)


def AWAY(*shape: int) -> np.ndarray:
    """Distinct values with |x| in [0.2, 1.5], random signs (no kinks, no ties)."""
    n = int(np.prod(shape)) if shape else 1
    mags = np.linspace(0.2, 1.5, n)
    rng.shuffle(mags)
    return (mags * rng.choice([-1.0, 1.0], n)).reshape(shape)


def _unwrap(a: Any) -> Any:
    if isinstance(a, Tensor):
        return a.primitive
    if isinstance(a, list):
        return [_unwrap(x) for x in a]
    if isinstance(a, tuple):  # lstm_stack's (w_x, w_h, bias) per layer
        return tuple(_unwrap(x) for x in a)
    return a


def _first(args: Any) -> Tensor:
    for a in args:
        if isinstance(a, Tensor):
            return a
        if isinstance(a, list) and a and isinstance(a[0], Tensor):
            return a[0]
    raise AssertionError("no tensor argument")


def P(name: str, *args: Any) -> Tensor:
    """Call the Float primitive ``name`` of the tensors' device; tuple results give the values."""
    t = _first(args)
    r = getattr(t.device.ops[0], name)(*[_unwrap(a) for a in args])
    if isinstance(r, tuple):
        r = r[0]
    return Tensor(r, t.device, Float)


def ints(x: Tensor, values: Any) -> Any:
    return Tensor.from_ints(values, x.device).primitive


def mask(x: Tensor, values: Any) -> Any:
    return Tensor.from_bool(values, x.device).primitive


def full_slices(shape: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(0, s, 1) for s in shape)


_MASK = rng.random((3, 4)) < 0.5
_GIDX = rng.integers(0, 4, (3, 5))
_SIDX = [2, 0, 2, 1]

# name -> list of (inputs, fn)
CASES: dict[str, list[tuple[list[np.ndarray], Any]]] = {
    # ---- arithmetic (broadcasting both ways, scalar second operand)
    "add": [([U(3, 4), U(4)], lambda a, b: P("add", a, b)),
            ([U(3, 1), U(1, 4)], lambda a, b: P("add", a, b)),
            ([U(2, 3)], lambda a: P("add", a, 2.5))],
    "sub": [([U(3, 4), U(3, 1)], lambda a, b: P("sub", a, b)),
            ([U(2, 3)], lambda a: P("sub", a, 1.5))],
    "mul": [([U(2, 3, 4), U(3, 1)], lambda a, b: P("mul", a, b)),
            ([U(2, 3)], lambda a: P("mul", a, -3.0))],
    "div": [([U(3, 4), POS(4)], lambda a, b: P("div", a, b)),
            ([U(2, 3)], lambda a: P("div", a, 0.7))],
    "remainder": [([U(3, 4, lo=0.1, hi=0.9) + 2.0, np.full((4,), 0.7) + U(4, lo=0, hi=0.05)],
                   lambda a, b: P("remainder", a, b))],
    "fmod": [([U(3, 4, lo=0.1, hi=0.9) + 2.0, np.full((4,), 0.7) + U(4, lo=0, hi=0.05)],
              lambda a, b: P("fmod", a, b))],
    "powf": [([POS(3, 4), U(3, 4)], lambda a, b: P("powf", a, b)),
             ([POS(2, 3)], lambda a: P("powf", a, 2.5)),
             ([U(2, 3)], lambda a: P("powf", a, 3.0))],
    "powi": [([U(2, 3)], lambda a: P("powi", a, 3)),
             ([POS(2, 3)], lambda a: P("powi", a, ints(a, [[2, -1, 3], [0, 1, -2]])))],
    "maximum": [([AWAY(3, 4), AWAY(4)], lambda a, b: P("maximum", a, b)),
                ([AWAY(2, 3)], lambda a: P("maximum", a, 0.05))],
    "minimum": [([AWAY(3, 4), AWAY(3, 1)], lambda a, b: P("minimum", a, b)),
                ([AWAY(2, 3)], lambda a: P("minimum", a, 0.05))],
    "atan2": [([U(3, 4), AWAY(4)], lambda a, b: P("atan2", a, b)),
              ([U(2, 3)], lambda a: P("atan2", a, 0.5))],
    "matmul": [([U(3, 4), U(4, 2)], lambda a, b: P("matmul", a, b)),
               ([U(2, 3, 4), U(4, 5)], lambda a, b: P("matmul", a, b)),
               ([U(2, 1, 3, 4), U(3, 4, 2)], lambda a, b: P("matmul", a, b))],
    "neg": [([U(2, 3)], lambda a: P("neg", a))],
    "abs": [([AWAY(2, 3)], lambda a: P("abs", a))],
    "sign": [([AWAY(2, 3)], lambda a: P("sign", a))],
    "clamp": [([AWAY(3, 4)], lambda a: P("clamp", a, -0.5, 0.55)),
              ([AWAY(3, 4)], lambda a: P("clamp", a, -0.55, None)),
              ([AWAY(3, 4)], lambda a: P("clamp", a, None, 0.45))],
    "floor": [([AWAY(2, 3) * 3], lambda a: P("floor", a))],
    "ceil": [([AWAY(2, 3) * 3], lambda a: P("ceil", a))],
    "round": [([AWAY(2, 3) * 3 + 0.1], lambda a: P("round", a))],
    "trunc": [([AWAY(2, 3) * 3], lambda a: P("trunc", a))],
    # ---- float math
    "exp": [([U(2, 3)], lambda a: P("exp", a))],
    "log": [([POS(2, 3)], lambda a: P("log", a))],
    "log1p": [([U(2, 3, lo=-0.5, hi=1.0)], lambda a: P("log1p", a))],
    "sqrt": [([POS(2, 3)], lambda a: P("sqrt", a))],
    "square": [([U(2, 3)], lambda a: P("square", a))],
    "recip": [([POS(2, 3)], lambda a: P("recip", a))],
    "sin": [([U(2, 3)], lambda a: P("sin", a))],
    "cos": [([U(2, 3)], lambda a: P("cos", a))],
    "tan": [([U(2, 3)], lambda a: P("tan", a))],
    "sinh": [([U(2, 3)], lambda a: P("sinh", a))],
    "cosh": [([U(2, 3)], lambda a: P("cosh", a))],
    "tanh": [([U(2, 3)], lambda a: P("tanh", a))],
    "asin": [([U(2, 3, lo=-0.8, hi=0.8)], lambda a: P("asin", a))],
    "acos": [([U(2, 3, lo=-0.8, hi=0.8)], lambda a: P("acos", a))],
    "atan": [([U(2, 3, lo=-2, hi=2)], lambda a: P("atan", a))],
    "asinh": [([U(2, 3, lo=-2, hi=2)], lambda a: P("asinh", a))],
    "acosh": [([U(2, 3, lo=1.2, hi=3.0)], lambda a: P("acosh", a))],
    "atanh": [([U(2, 3, lo=-0.8, hi=0.8)], lambda a: P("atanh", a))],
    "erf": [([U(2, 3, lo=-2, hi=2)], lambda a: P("erf", a))],
    # ---- activations
    "relu": [([AWAY(3, 4)], lambda a: P("relu", a))],
    "sigmoid": [([U(3, 4, lo=-3, hi=3)], lambda a: P("sigmoid", a))],
    "log_sigmoid": [([U(3, 4, lo=-3, hi=3)], lambda a: P("log_sigmoid", a))],
    "gelu": [([U(3, 4, lo=-3, hi=3)], lambda a: P("gelu", a)),
             ([U(3, 4, lo=-3, hi=3)], lambda a: P("gelu", a, True))],
    "softmax": [([U(3, 4, lo=-2, hi=2)], lambda a: P("softmax", a, 1)),
                ([U(3, 4, lo=-2, hi=2)], lambda a: P("softmax", a, 0))],
    "log_softmax": [([U(3, 4, lo=-2, hi=2)], lambda a: P("log_softmax", a, 1)),
                    ([U(2, 3, 2, lo=-2, hi=2)], lambda a: P("log_softmax", a, 1))],
    # ---- reductions and statistics
    "sum": [([U(2, 3)], lambda a: P("sum", a)), ([U(4)], lambda a: P("sum", a))],
    "sum_dim": [([U(2, 3, 2)], lambda a: P("sum_dim", a, 1))],
    "mean": [([U(2, 3)], lambda a: P("mean", a))],
    "mean_dim": [([U(2, 3, 2)], lambda a: P("mean_dim", a, 2))],
    "prod": [([U(2, 3, lo=0.5, hi=1.5)], lambda a: P("prod", a)),
             ([np.array([[0.5, 0.0, 1.5], [2.0, -1.0, 0.7]])], lambda a: P("prod", a)),
             ([np.array([0.0, 0.0, 1.5])], lambda a: P("prod", a))],
    "prod_dim": [([U(2, 3, lo=0.5, hi=1.5)], lambda a: P("prod_dim", a, 1)),
                 ([np.array([[0.5, 0.0, 1.5], [2.0, -1.0, 0.7]])], lambda a: P("prod_dim", a, 1))],
    "max": [([AWAY(3, 4)], lambda a: P("max", a))],
    "min": [([AWAY(3, 4)], lambda a: P("min", a))],
    "max_dim": [([AWAY(3, 4)], lambda a: P("max_dim", a, 1)), ([AWAY(3, 4)], lambda a: P("max_dim", a, 0))],
    "min_dim": [([AWAY(3, 4)], lambda a: P("min_dim", a, 1))],
    "max_dim_with_indices": [([AWAY(3, 4)], lambda a: P("max_dim_with_indices", a, 1))],
    "min_dim_with_indices": [([AWAY(3, 4)], lambda a: P("min_dim_with_indices", a, 0))],
    "max_abs": [([AWAY(3, 4)], lambda a: P("max_abs", a))],
    "max_abs_dim": [([AWAY(3, 4)], lambda a: P("max_abs_dim", a, 1))],
    "median": [([AWAY(3, 5)], lambda a: P("median", a, 1)), ([AWAY(4, 3)], lambda a: P("median", a, 0))],
    "var": [([U(3, 4)], lambda a: P("var", a, 1, 1)), ([U(3, 4)], lambda a: P("var", a, 0, 0))],
    "var_mean": [([U(3, 4)], lambda a: P("add", P("var_mean", a, 1, 1),
                                          Tensor(a.device.ops[0].var_mean(a.primitive, 1, 1)[1], a.device, Float)))],
    "cov": [([U(3, 5)], lambda a: P("cov", a, 1, 1)), ([U(4, 2)], lambda a: P("cov", a, 0, 0))],
    "cross": [([U(2, 3), U(2, 3)], lambda a, b: P("cross", a, b, 1)),
              ([U(3, 2), U(3, 1)], lambda a, b: P("cross", a, b, 0))],
    # ---- scans and sorting
    "cumsum": [([U(3, 4)], lambda a: P("cumsum", a, 1)), ([U(3, 4)], lambda a: P("cumsum", a, 0))],
    "cumprod": [([U(3, 4, lo=0.5, hi=1.5)], lambda a: P("cumprod", a, 1)),
                ([np.array([[0.5, 0.0, 1.5, 2.0], [0.7, -1.2, 0.0, 0.0]])], lambda a: P("cumprod", a, 1)),
                ([np.array([[0.5, 0.0], [0.0, 1.5], [2.0, 3.0]])], lambda a: P("cumprod", a, 0))],
    "cummax": [([AWAY(3, 5)], lambda a: P("cummax", a, 1))],
    "cummin": [([AWAY(3, 5)], lambda a: P("cummin", a, 0))],
    "sort": [([AWAY(3, 4)], lambda a: P("sort", a, 1, False)), ([AWAY(3, 4)], lambda a: P("sort", a, 0, True))],
    "sort_with_indices": [([AWAY(3, 4)], lambda a: P("sort_with_indices", a, 1, True))],
    "topk": [([AWAY(3, 5)], lambda a: P("topk", a, 1, 2)), ([AWAY(4, 2)], lambda a: P("topk", a, 0, 3))],
    # ---- shape and indexing
    "reshape": [([U(2, 6)], lambda a: P("reshape", a, (3, 2, 2)))],
    "permute": [([U(2, 3, 4)], lambda a: P("permute", a, (2, 0, 1)))],
    "expand": [([U(3, 1)], lambda a: P("expand", a, (2, 3, 4)))],
    "flip": [([U(3, 4)], lambda a: P("flip", a, (1,))), ([U(2, 3)], lambda a: P("flip", a, (0, 1)))],
    "slice": [([U(4, 5)], lambda a: P("slice", a, (slice(1, 3, 1), slice(0, 5, 2))))],
    "slice_assign": [([U(4, 5), U(2, 3)], lambda a, v: P("slice_assign", a, (slice(1, 3, 1), slice(0, 5, 2)), v))],
    "pad": [([U(2, 3)], lambda a: P("pad", a, ((1, 0), (2, 1)), 0.5))],
    "cat": [([U(2, 3), U(1, 3), U(4, 3)], lambda a, b, c: P("cat", [a, b, c], 0)),
            ([U(2, 1), U(2, 3)], lambda a, b: P("cat", [a, b], 1))],
    "stack": [([U(2, 3), U(2, 3)], lambda a, b: P("stack", [a, b], 1))],
    "repeat_dim": [([U(2, 3)], lambda a: P("repeat_dim", a, 1, 3)), ([U(2, 3)], lambda a: P("repeat_dim", a, 0, 2))],
    "unfold": [([U(2, 7)], lambda a: P("unfold", a, 1, 3, 2)), ([U(5, 2)], lambda a: P("unfold", a, 0, 2, 1))],
    "gather": [([U(3, 4)], lambda a: P("gather", a, 1, ints(a, _GIDX)))],
    "scatter_add": [([U(3, 4), U(3, 5)], lambda a, v: P("scatter_add", a, 1, ints(a, _GIDX), v))],
    "select": [([U(3, 4)], lambda a: P("select", a, 1, ints(a, _SIDX)))],
    "select_add": [([U(3, 4), U(3, 4)], lambda a, v: P("select_add", a, 1, ints(a, _SIDX), v))],
    "zeros_scatter_add": [([U(3, 5)], lambda v: P("zeros_scatter_add", (3, 4), 1, ints(v, _GIDX), v))],
    "zeros_select_add": [([U(3, 4)], lambda v: P("zeros_select_add", (3, 5), 1, ints(v, _SIDX), v))],
    "mask_fill": [([U(3, 4)], lambda a: P("mask_fill", a, mask(a, _MASK), 0.25))],
    "mask_where": [([U(3, 4), U(3, 4)], lambda a, v: P("mask_where", a, mask(a, _MASK), v)),
                   ([U(3, 4), U(4)], lambda a, v: P("mask_where", a, mask(a, _MASK), v))],
    # ---- module ops (rules in ember.autodiff._rules_module; 1-D forms are composites)
    "conv2d": [([U(2, 3, 5, 4), U(4, 3, 3, 2), U(4)],
                lambda x, w, b: P("conv2d", x, w, b, (1, 1), (1, 0), (1, 1), 1)),
               ([U(1, 4, 6, 5), U(2, 2, 2, 3)],
                lambda x, w: P("conv2d", x, w, None, (2, 1), (0, 1), (1, 2), 2))],
    "conv3d": [([U(1, 2, 4, 3, 3), U(3, 2, 2, 2, 2), U(3)],
                lambda x, w, b: P("conv3d", x, w, b, (1, 1, 1), (1, 0, 0), (1, 1, 1), 1))],
    "conv1d": [([U(2, 2, 7), U(3, 2, 3), U(3)], lambda x, w, b: P("conv1d", x, w, b, (2,), (1,), (1,), 1))],
    "conv_transpose2d": [([U(1, 2, 3, 3), U(2, 3, 2, 2), U(3)],
                          lambda x, w, b: P("conv_transpose2d", x, w, b, (2, 1), (0, 1), (1, 0), (1, 1), 1))],
    "conv_transpose3d": [([U(1, 2, 2, 2, 3), U(2, 2, 2, 1, 2), U(2)],
                          lambda x, w, b: P("conv_transpose3d", x, w, b, (1, 2, 1), (0, 0, 1), (0, 1, 0),
                                            (1, 1, 1), 1))],
    "conv_transpose1d": [([U(2, 2, 4), U(2, 3, 3), U(3)],
                          lambda x, w, b: P("conv_transpose1d", x, w, b, (2,), (1,), (1,), (1,), 1))],
    "unfold4d": [([U(1, 2, 4, 4)], lambda x: P("unfold4d", x, (2, 2), (1, 2), (1, 0), (1, 1)))],
    "max_pool2d_with_indices": [([AWAY(2, 2, 4, 5)],
                                 lambda x: P("max_pool2d_with_indices", x, (2, 2), (2, 1), (1, 0), (1, 1), False))],
    "max_pool2d": [([AWAY(1, 2, 5, 5)], lambda x: P("max_pool2d", x, (3, 2), (2, 2), (1, 1), (1, 1), True))],
    "max_pool1d": [([AWAY(2, 2, 7)], lambda x: P("max_pool1d", x, (3,), (2,), (1,), (1,), False))],
    "max_pool1d_with_indices": [([AWAY(1, 2, 6)], lambda x: P("max_pool1d_with_indices", x, (2,), (2,), (0,), (1,),
                                                               False))],
    "avg_pool2d": [([U(2, 2, 4, 5)], lambda x: P("avg_pool2d", x, (2, 3), (2, 1), (1, 1), True, False)),
                   ([U(1, 2, 5, 5)], lambda x: P("avg_pool2d", x, (2, 2), (2, 2), (1, 0), False, True))],
    "avg_pool1d": [([U(2, 2, 7)], lambda x: P("avg_pool1d", x, (3,), (2,), (1,), False, False))],
    "adaptive_avg_pool2d": [([U(1, 2, 5, 7)], lambda x: P("adaptive_avg_pool2d", x, (3, 2)))],
    "adaptive_avg_pool1d": [([U(2, 2, 7)], lambda x: P("adaptive_avg_pool1d", x, (3,)))],
    "embedding": [([U(5, 3)], lambda w: P("embedding", w, ints(w, [[0, 4, 0], [2, 2, 1]])))],
    "interpolate": [([U(1, 2, 3, 4)], lambda x: P("interpolate", x, (5, 3), "bilinear", False)),
                    ([U(1, 1, 3, 3)], lambda x: P("interpolate", x, (4, 5), "bicubic", True)),
                    ([U(1, 2, 2, 3)], lambda x: P("interpolate", x, (4, 5), "nearest", False))],
    # ---- normalization (x, gamma and beta all differentiable; the statistics are untracked)
    "batch_norm": [([U(3, 2, 2, 3), U(2), U(2)], lambda x, g, b: P("batch_norm", x, g, b, 1e-3))],
    "layer_norm": [([U(2, 3, 4), U(4), U(4)], lambda x, g, b: P("layer_norm", x, g, b, 1e-3))],
    "group_norm": [([U(2, 4, 3), U(4), U(4)], lambda x, g, b: P("group_norm", x, g, b, 2, 1e-3))],
    "rms_norm": [([U(2, 3, 4), U(4)], lambda x, g: P("rms_norm", x, g, 1e-3))],
    # ---- recurrent (the output sequence here; test_module_rnn checks h_n and c_n too)
    "lstm": [([U(2, 3, 2), U(2, 3), U(2, 3), U(2, 12), U(3, 12), U(12)],
              lambda x, h, c, wx, wh, b: P("lstm", x, h, c, wx, wh, b, False))],
    "lstm_stack": [([U(2, 3, 2), U(2, 2, 3), U(2, 2, 3), U(2, 12), U(3, 12), U(12), U(3, 12), U(3, 12), U(12)],
                    lambda x, h, c, wx0, wh0, b0, wx1, wh1, b1: P("lstm_stack", x, h, c,
                                                                  [(wx0, wh0, b0), (wx1, wh1, b1)], False))],
    # ---- attention (q, k and v differentiable; the residual stays in the node)
    "attention": [([U(2, 2, 3, 4), U(2, 2, 5, 4), U(2, 2, 5, 3)],
                   lambda q, k, v: P("attention", q, k, v, None, None, 0.5, -1e4, False)),
                  ([U(1, 2, 3, 2), U(1, 2, 4, 2), U(1, 2, 4, 2)],
                   lambda q, k, v: P("attention", q, k, v, None, None, 0.7, -1e4, True))],
    # ---- casts and moves (float to float keeps the graph)
    "cast": [([U(2, 3)], lambda a: P("cast", a, a.dtype))],
    "to_device": [([U(2, 3)], lambda a: P("to_device", a, a.device.handle))],
}

#: differentiable composites of the contract (their own cases check the chain of rules)
_COMPOSITES = {
    "cov", "cross", "max_abs", "max_abs_dim", "conv1d", "conv_transpose1d", "unfold4d", "max_pool1d",
    "max_pool1d_with_indices", "max_pool2d", "avg_pool1d", "adaptive_avg_pool1d",
}
#: ops differentiable under Autodiff (rules plus differentiable composites and methods)
DIFFERENTIABLE = set(RULES) | {"sort", "var_mean", "cast", "to_device"} | (set(COMPOSITE) & _COMPOSITES)

_IDS = [f"{name}-{i}" for name, cases in CASES.items() for i in range(len(cases))]
_PARAMS = [(name, i) for name, cases in CASES.items() for i in range(len(cases))]


@pytest.mark.parametrize(("name", "i"), _PARAMS, ids=_IDS)
def test_autodiff_gradcheck(ad_device: Any, name: str, i: int) -> None:
    inputs, fn = CASES[name][i]
    gradcheck(fn, inputs, ad_device, eps=1e-6, atol=1e-6, rtol=1e-5)


def test_autodiff_every_rule_has_a_case() -> None:
    missing = sorted(DIFFERENTIABLE - set(CASES))
    assert not missing, f"differentiable ops without a gradient check: {missing}"
    stale = sorted(set(CASES) - DIFFERENTIABLE)
    assert not stale, f"cases for ops that are not differentiable primitives: {stale}"


def test_autodiff_gradcheck_detects_a_wrong_rule(ad_device: Any) -> None:
    # the checker itself must fail on a wrong derivative: sin's values with cos's gradient
    def wrong(a: Tensor) -> Tensor:
        s = P("sin", a)
        return P("add", P("sub", s, P("detach", s)), P("detach", P("cos", a)))

    with pytest.raises(AssertionError, match="differ from central differences"):
        gradcheck(wrong, [U(2, 3)], ad_device)


def test_autodiff_rounding_gives_zero_gradient(ad_device: Any) -> None:
    x = Tensor.from_floats([[0.3, -1.7, 2.5]], ad_device).require_grad()
    g = x.grad(P("add", P("floor", x), P("round", x)).sum().backward())
    assert g is not None
    np.testing.assert_array_equal(g.to_numpy(), np.zeros((1, 3)))


def test_autodiff_prod_with_zero_is_exact(ad_device: Any) -> None:
    # d prod / dx_i = product of the others, also at a zero
    x = Tensor.from_floats([2.0, 0.0, 3.0, 5.0], ad_device).require_grad()
    g = x.grad(P("prod", x).backward())
    np.testing.assert_allclose(g.to_numpy(), [0.0, 30.0, 0.0, 0.0])
    y = Tensor.from_floats([2.0, 0.0, 3.0, 0.0], ad_device).require_grad()
    np.testing.assert_allclose(y.grad(P("prod", y).backward()).to_numpy(), [0.0, 0.0, 0.0, 0.0])


def test_autodiff_max_sends_gradient_to_argmax(ad_device: Any) -> None:
    x = Tensor.from_floats([[1.0, 5.0, 2.0], [7.0, 0.0, 7.0]], ad_device).require_grad()
    g = x.grad(P("max_dim", x, 1).backward())
    # ties: the first maximum (argmax) takes the gradient
    np.testing.assert_array_equal(g.to_numpy(), [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])


def test_autodiff_softmax_gradient_formula(ad_device: Any) -> None:
    # d softmax_i / d x_j = s_i (delta_ij - s_j); with upstream e_0: s_0 (delta_0j - s_j)
    xv = np.array([0.5, -1.0, 2.0])
    x = Tensor.from_floats(xv, ad_device).require_grad()
    s = P("softmax", x, 0)
    first = P("slice", s, (slice(0, 1, 1),))
    g = x.grad(first.backward()).to_numpy()
    sv = np.exp(xv) / np.exp(xv).sum()
    np.testing.assert_allclose(g, sv[0] * ((np.arange(3) == 0) - sv), rtol=1e-12)
    assert math.isclose(float(g.sum()), 0.0, abs_tol=1e-15)
