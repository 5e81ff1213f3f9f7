"""``ember.tensor.activation``: activation functions on Float tensors (Burn's
``burn::tensor::activation``, with PyTorch's names and defaults where Burn has none).

Every function takes a Float tensor of any shape (``[...]``) and returns a tensor of the same
shape and dtype, except :func:`glu` which halves ``dim``. ``relu``, ``sigmoid``, ``log_sigmoid``,
``gelu``, ``softmax`` and ``log_softmax`` call the backend's (possibly fused) primitive; the others
are compositions of backend primitives, so all of them are differentiable under ``Autodiff``.

The compositions are written to be stable for every finite input: ``exp`` never sees a positive
argument where it could overflow (softplus, mish, elu, celu, selu, quiet_softmax), so large
``|x|`` gives the exact limit, not ``inf`` or NaN. NaN inputs give NaN.

Errors: a non-Float tensor raises :class:`~ember.KindError` naming the function; an
out-of-range ``dim`` raises :class:`~ember.IndexError`.

Example::

    from ember.tensor import activation as A
    probs = A.softmax(logits, dim=-1)          # logits: [batch, classes]
"""

from __future__ import annotations

from typing import Any

from .._errors import KindError, ShapeError
from .._kind import Float
from ..backend._ops_activation import quiet_softmax_composite
from . import _core
from ._core import op_error, wrap
from ._util import check_same, norm_dim

__all__ = [
    "celu",
    "elu",
    "gelu",
    "gelu_approximate",
    "gelu_tanh",
    "glu",
    "hard_sigmoid",
    "hard_swish",
    "hardtanh",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "mish",
    "prelu",
    "quiet_softmax",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "softmax",
    "softmin",
    "softplus",
    "softsign",
    "tanh",
    "tanhshrink",
]

#: SELU constants (Klambauer et al. 2017, "Self-Normalizing Neural Networks"; PyTorch, Burn)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _check(op: str, tensor: Any) -> None:
    if type(tensor) is not _core.Tensor:
        raise TypeError(f"{op}: expected an ember.Tensor, got {type(tensor).__name__}.")
    if tensor.kind is not Float:
        raise KindError(
            f"{op} is not defined for {tensor.kind} tensors (it takes Float); convert with .float() first."
        )


def _apply(op: str, tensor: Any, fn: Any) -> Any:
    """Validate ``tensor``, run ``fn(ops, primitive)`` and wrap the result (one tensor built)."""
    _check(op, tensor)
    try:
        p = fn(tensor.ops, tensor.primitive)
    except Exception as exc:
        raise op_error(op, exc, tensor) from exc
    return wrap(p, tensor, Float)


def _dim(op: str, tensor: Any, dim: int) -> int:
    _check(op, tensor)
    return norm_dim(op, dim, tensor.rank)


def _softmax_like(op: str, tensor: Any, dim: int, log: bool) -> Any:
    """``softmax`` / ``log_softmax`` with the checks inlined (they run once per forward pass of
    every classifier, on small tensors where Python overhead shows)."""
    if tensor.__class__ is not _core.Tensor or tensor.kind is not Float:
        _check(op, tensor)  # raises
    ops = tensor.ops
    shape = ops.shape(tensor.primitive)
    r = len(shape)
    if dim.__class__ is int and -r <= dim < r:
        d = dim + r if dim < 0 else dim
    else:
        d = norm_dim(op, dim, r)  # raises
    if shape[d] == 0:
        return tensor
    try:
        p = ops.log_softmax(tensor.primitive, d) if log else ops.softmax(tensor.primitive, d)
    except Exception as exc:
        raise op_error(op, exc, tensor) from exc
    return _core.new(p, tensor.device, Float, ops)


# ---------------------------------------------------------------------- primitives -> kernels
def _softplus(ops: Any, p: Any, beta: float) -> Any:
    z = p if beta == 1.0 else ops.mul(p, beta)
    # log(1 + e^z) = max(z, 0) + log1p(e^-|z|): exact for large |z|, no overflow
    sp = ops.add(ops.maximum(z, 0.0), ops.log1p(ops.exp(ops.neg(ops.abs(z)))))
    return sp if beta == 1.0 else ops.mul(sp, 1.0 / beta)


def _expm1_neg(ops: Any, p: Any, scale: float = 1.0) -> Any:
    """``exp(min(x, 0) * scale) - 1``: the negative branch of ELU-like functions, never overflowing
    (so the unused branch cannot put inf or NaN into a gradient)."""
    m = ops.minimum(p, 0.0)
    return ops.sub(ops.exp(m if scale == 1.0 else ops.mul(m, scale)), 1.0)


def _hard_sigmoid(ops: Any, p: Any, alpha: float, beta: float) -> Any:
    return ops.clamp(ops.add(ops.mul(p, alpha), beta), 0.0, 1.0)


# ---------------------------------------------------------------------- ReLU family
def relu(tensor: Any) -> Any:
    """``max(0, x)`` element-wise (Nair & Hinton 2010; PyTorch ``relu``). NaN stays NaN."""
    if tensor.__class__ is not _core.Tensor or tensor.kind is not Float:
        _check("relu", tensor)  # raises
    ops = tensor.ops
    try:
        p = ops.relu(tensor.primitive)
    except Exception as exc:
        raise op_error("relu", exc, tensor) from exc
    return _core.new(p, tensor.device, Float, ops)


def leaky_relu(tensor: Any, negative_slope: float = 0.01) -> Any:
    """``x`` for ``x >= 0``, ``negative_slope * x`` otherwise (Burn; PyTorch's default slope 0.01)."""
    s = float(negative_slope)
    return _apply("leaky_relu", tensor, lambda ops, p: ops.mask_where(p, ops.lower(p, 0.0), ops.mul(p, s)))


def prelu(tensor: Any, alpha: Any) -> Any:
    """Parametric ReLU: ``x`` for ``x >= 0``, ``alpha_c * x`` otherwise (He et al. 2015; Burn, PyTorch).

    Args:
        tensor: Float ``[batch, channels, ...]`` (rank 0 or 1: a single channel).
        alpha: Float ``[channels]``, or ``[1]`` shared by every channel.

    Raises:
        KindError: ``tensor`` or ``alpha`` is not Float.
        ShapeError: ``alpha`` is not 1-D, or its size is neither 1 nor ``tensor.shape[1]``.
    """
    _check("prelu", tensor)
    if type(alpha) is not _core.Tensor:
        raise TypeError(f"prelu: alpha must be a Float tensor of shape [channels] or [1], got {type(alpha).__name__}.")
    if alpha.kind is not Float or alpha.device is not tensor.device:
        check_same("prelu", tensor, alpha)
    shape, ashape = tensor.shape, alpha.shape
    if len(ashape) != 1:
        raise ShapeError(f"prelu: alpha must have shape [channels] or [1], got {list(ashape)}.")
    c = ashape[0]
    rank = len(shape)
    if c == 1:
        target: tuple[int, ...] = (1,) * rank
    elif rank >= 2 and shape[1] == c:
        target = (1, c) + (1,) * (rank - 2)
    else:
        raise ShapeError(
            f"prelu: alpha has {c} weights but the input {list(shape)} has "
            f"{shape[1] if rank >= 2 else 1} channel(s) (dim 1; rank < 2 means one channel); give "
            "alpha of shape [channels] or [1]."
        )

    def fn(ops: Any, p: Any) -> Any:
        w = ops.reshape(alpha.primitive, target)
        return ops.mask_where(p, ops.lower(p, 0.0), ops.mul(p, w))

    return _apply("prelu", tensor, fn)


def relu6(tensor: Any) -> Any:
    """``min(max(0, x), 6)`` (Burn; MobileNetV2)."""
    return _apply("relu6", tensor, lambda ops, p: ops.clamp(p, 0.0, 6.0))


def hardtanh(tensor: Any, min_val: float = -1.0, max_val: float = 1.0) -> Any:
    """``x`` clamped to ``[min_val, max_val]`` (Burn; PyTorch defaults -1 and 1).

    Raises:
        ValueError: ``min_val > max_val``.
    """
    lo, hi = float(min_val), float(max_val)
    if lo > hi:
        raise ValueError(f"hardtanh: min_val ({lo}) is greater than max_val ({hi}).")
    return _apply("hardtanh", tensor, lambda ops, p: ops.clamp(p, lo, hi))


def elu(tensor: Any, alpha: float = 1.0) -> Any:
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise (Clevert et al. 2015; PyTorch default 1)."""
    a = float(alpha)
    return _apply(
        "elu", tensor, lambda ops, p: ops.mask_where(p, ops.lower_equal(p, 0.0), ops.mul(_expm1_neg(ops, p), a))
    )


def celu(tensor: Any, alpha: float = 1.0) -> Any:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` (Barron 2017; PyTorch default 1).

    Raises:
        ValueError: ``alpha == 0``.
    """
    a = float(alpha)
    if a == 0.0:
        raise ValueError("celu: alpha must be non-zero (it divides x).")

    def fn(ops: Any, p: Any) -> Any:
        return ops.mask_where(p, ops.lower_equal(p, 0.0), ops.mul(_expm1_neg(ops, p, 1.0 / a), a))

    return _apply("celu", tensor, fn)


def selu(tensor: Any) -> Any:
    """``scale * x`` for ``x > 0``, ``scale * alpha * (exp(x) - 1)`` otherwise, with
    ``alpha = 1.6732632423543772``, ``scale = 1.0507009873554805`` (Klambauer et al. 2017)."""
    return _apply(
        "selu",
        tensor,
        lambda ops, p: ops.mask_where(
            ops.mul(p, SELU_SCALE), ops.lower_equal(p, 0.0), ops.mul(_expm1_neg(ops, p), SELU_ALPHA * SELU_SCALE)
        ),
    )


# ---------------------------------------------------------------------- GELU family
def gelu(tensor: Any, approximate: str = "none") -> Any:
    """Gaussian Error Linear Unit ``x * Phi(x) = x/2 * (1 + erf(x / sqrt(2)))`` (Hendrycks & Gimpel
    2016; Burn's ``gelu``). ``approximate="tanh"`` gives PyTorch's tanh approximation, see
    :func:`gelu_approximate`.

    Raises:
        ValueError: ``approximate`` is not ``"none"`` or ``"tanh"``.
    """
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh' (PyTorch's values), got {approximate!r}.")
    approx = approximate == "tanh"
    return _apply("gelu", tensor, lambda ops, p: ops.gelu(p, approx))


def gelu_approximate(tensor: Any) -> Any:
    """The tanh approximation of GELU, ``x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))`` (Burn's
    ``gelu_approximate``; PyTorch's ``gelu(x, approximate="tanh")``)."""
    return _apply("gelu_approximate", tensor, lambda ops, p: ops.gelu(p, True))


def gelu_tanh(tensor: Any) -> Any:
    """Same as :func:`gelu_approximate` (the name says which approximation)."""
    return _apply("gelu_tanh", tensor, lambda ops, p: ops.gelu(p, True))


# ---------------------------------------------------------------------- sigmoid family
def sigmoid(tensor: Any) -> Any:
    """``1 / (1 + exp(-x))`` element-wise, exact limits 0 and 1 for large ``|x|`` (no overflow)."""
    return _apply("sigmoid", tensor, lambda ops, p: ops.sigmoid(p))


def log_sigmoid(tensor: Any) -> Any:
    """``log(sigmoid(x)) = -softplus(-x)``; equals ``x`` for very negative ``x`` (no ``-inf``)."""
    return _apply("log_sigmoid", tensor, lambda ops, p: ops.log_sigmoid(p))


def hard_sigmoid(tensor: Any, alpha: float = 0.2, beta: float = 0.5) -> Any:
    """``max(0, min(1, alpha * x + beta))`` (Burn; defaults 0.2 and 0.5 of ONNX HardSigmoid).
    PyTorch's ``hardsigmoid`` is ``hard_sigmoid(x, 1/6, 0.5)``."""
    a, b = float(alpha), float(beta)
    return _apply("hard_sigmoid", tensor, lambda ops, p: _hard_sigmoid(ops, p, a, b))


def hard_swish(tensor: Any) -> Any:
    """``x * hard_sigmoid(x, 1/6, 0.5) = x * relu6(x + 3) / 6`` (Howard et al. 2019; PyTorch ``hardswish``)."""
    return _apply("hard_swish", tensor, lambda ops, p: ops.mul(p, _hard_sigmoid(ops, p, 1.0 / 6.0, 0.5)))


def silu(tensor: Any) -> Any:
    """``x * sigmoid(x)`` (SiLU / swish; Elfwing et al. 2017, PyTorch ``silu``)."""
    return _apply("silu", tensor, lambda ops, p: ops.mul(p, ops.sigmoid(p)))


def softplus(tensor: Any, beta: float = 1.0) -> Any:
    """``log(1 + exp(beta * x)) / beta`` (Burn; PyTorch default ``beta=1``), computed as
    ``(max(z, 0) + log1p(exp(-|z|))) / beta`` with ``z = beta * x``: exact for large ``|x|``
    (PyTorch switches to ``x`` above its ``threshold``; the results agree to rounding).

    Raises:
        ValueError: ``beta == 0``.
    """
    b = float(beta)
    if b == 0.0:
        raise ValueError("softplus: beta must be non-zero (it divides the result).")
    return _apply("softplus", tensor, lambda ops, p: _softplus(ops, p, b))


def mish(tensor: Any) -> Any:
    """``x * tanh(softplus(x))`` (Misra 2019; Burn, PyTorch)."""
    return _apply("mish", tensor, lambda ops, p: ops.mul(p, ops.tanh(_softplus(ops, p, 1.0))))


def softsign(tensor: Any) -> Any:
    """``x / (1 + |x|)`` (Burn, PyTorch)."""
    return _apply("softsign", tensor, lambda ops, p: ops.div(p, ops.add(ops.abs(p), 1.0)))


def tanh(tensor: Any) -> Any:
    """Hyperbolic tangent element-wise (same as ``tensor.tanh()``)."""
    return _apply("tanh", tensor, lambda ops, p: ops.tanh(p))


def tanhshrink(tensor: Any) -> Any:
    """``x - tanh(x)`` (Burn, PyTorch)."""
    return _apply("tanhshrink", tensor, lambda ops, p: ops.sub(p, ops.tanh(p)))


# ---------------------------------------------------------------------- softmax family
def softmax(tensor: Any, dim: int) -> Any:
    """``exp(x_i) / sum_j exp(x_j)`` along ``dim`` (negative dims count from the end), computed
    with the maximum subtracted, so large logits do not overflow.

    Edge cases (as PyTorch): ``-inf`` logits get probability 0; a slice whose logits are all
    ``-inf`` gives NaN (there is no distribution; see :func:`quiet_softmax`, which gives zeros);
    a slice holding ``+inf`` or NaN gives NaN. A dim of size 0 gives an empty tensor.
    """
    return _softmax_like("softmax", tensor, dim, False)


def log_softmax(tensor: Any, dim: int) -> Any:
    """``x_i - log(sum_j exp(x_j))`` along ``dim``, stable for large logits (no ``log(0)`` for
    very negative ones). Edge cases as :func:`softmax` (``-inf`` logits give ``-inf``)."""
    return _softmax_like("log_softmax", tensor, dim, True)


def softmin(tensor: Any, dim: int) -> Any:
    """``softmax(-x, dim)``: ``exp(-x_i) / sum_j exp(-x_j)`` (Burn, PyTorch)."""
    d = _dim("softmin", tensor, dim)
    if tensor.shape[d] == 0:
        return tensor
    return _apply("softmin", tensor, lambda ops, p: ops.softmax(ops.neg(p), d))


def quiet_softmax(tensor: Any, dim: int) -> Any:
    """Softmax with an implicit extra logit fixed at 0 (Burn's ``quiet_softmax``, Evan Miller's
    "softmax1", "Attention Is Off By One", 2023): ``exp(x_i) / (1 + sum_j exp(x_j))``.

    Outputs along ``dim`` sum to less than 1, so a slice can select nothing. Computed as
    ``exp(x_i - m) / (exp(-m) + sum_j exp(x_j - m))`` with ``m = max(0, max_j x_j)`` (the extra
    logit takes part in the maximum), so neither term overflows: a slice of all ``-inf`` gives
    zeros (not NaN), and very large logits give the softmax limit.
    """
    d = _dim("quiet_softmax", tensor, dim)
    if tensor.shape[d] == 0:
        return tensor

    return _apply("quiet_softmax", tensor, lambda ops, p: quiet_softmax_composite(ops, p, d))


def glu(tensor: Any, dim: int = -1) -> Any:
    """Gated linear unit: ``a * sigmoid(b)`` where ``a`` and ``b`` are the first and second halves
    of ``tensor`` along ``dim`` (Dauphin et al. 2016; Burn, PyTorch's default ``dim=-1``).

    Shapes: ``[..., 2n, ...] -> [..., n, ...]``.

    Raises:
        ShapeError: the size along ``dim`` is odd.
    """
    d = _dim("glu", tensor, dim)
    shape = tensor.shape
    if shape[d] % 2:
        raise ShapeError(f"glu: the size along dim {dim} must be even, got {shape[d]} (shape {list(shape)}).")
    n = shape[d] // 2

    def half(start: int) -> tuple[slice, ...]:
        return tuple(slice(start, start + n, 1) if i == d else slice(0, s, 1) for i, s in enumerate(shape))

    return _apply("glu", tensor, lambda ops, p: ops.mul(ops.slice(p, half(0)), ops.sigmoid(ops.slice(p, half(n)))))

