"""Random generators: ``RandomNormal``, ``RandomUniform``, ``RandomNormalLike``, ``RandomUniformLike``,
``Multinomial`` (opset 1+, ``*Like`` and ``Multinomial`` 7+) and ``Bernoulli`` (15+).

Samples come from the backend's generator through :meth:`ember.Tensor.random` (reproducible after
``backend.seed(n)``). The ``seed`` attribute is not applied: re-seeding the backend's global generator from
inside a model would silently reset every other stream of the program, so ONNX's per-node seeds (whose
values no two runtimes agree on anyway) are ignored. Output types follow the ``dtype`` attribute (ONNX
element type number; the ``*Like`` ops and ``Bernoulli`` default to the input's type, ``Multinomial`` to
int32). ``Multinomial`` draws with the Gumbel-max trick on its unnormalized log-probabilities
(``argmax(logits - log(-log U))`` per sample is a draw from ``softmax(logits)``; Gumbel, 1954).
"""

from __future__ import annotations

from ember import Distribution, DType, Float, Tensor

from .._context import Context
from .._dtypes import dtype_of
from .._ir import Node
from .._registry import converter


def _dtype(node: Node, default: DType) -> DType:
    dt = node.attr("dtype", None)
    return default if dt is None else dtype_of(int(dt), f"{node.where()} dtype")


def _as(t: Tensor, dtype: DType) -> Tensor:
    """A Float or Bool tensor as ``dtype`` (across kinds too)."""
    if dtype.is_float:
        return (t if t.kind is Float else t.float()).cast(dtype)
    if dtype is DType.BOOL:
        return t.bool()
    return t.int().cast(dtype)


def _normal(node: Node) -> Distribution:
    return Distribution.normal(float(node.attr("mean", 0.0)), float(node.attr("scale", 1.0)))


def _uniform(node: Node) -> Distribution:
    return Distribution.uniform(float(node.attr("low", 0.0)), float(node.attr("high", 1.0)))


@converter("RandomNormal", since=1)
def random_normal(ctx: Context, node: Node) -> Tensor:
    """``RandomNormal``: ``shape`` samples of N(``mean``, ``scale``^2), type ``dtype`` (default float)."""
    return _as(Tensor.random(list(node.attr("shape")), _normal(node), ctx.main), _dtype(node, DType.FLOAT32))


@converter("RandomUniform", since=1)
def random_uniform(ctx: Context, node: Node) -> Tensor:
    """``RandomUniform``: ``shape`` samples of U[``low``, ``high``), type ``dtype`` (default float)."""
    return _as(Tensor.random(list(node.attr("shape")), _uniform(node), ctx.main), _dtype(node, DType.FLOAT32))


@converter("RandomNormalLike", since=1)
def random_normal_like(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``RandomNormalLike``: like ``RandomNormal`` with the input's shape (and type unless ``dtype``)."""
    return _as(Tensor.random(list(x.shape), _normal(node), ctx.main), _dtype(node, x.dtype))


@converter("RandomUniformLike", since=1)
def random_uniform_like(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``RandomUniformLike``: like ``RandomUniform`` with the input's shape (and type unless ``dtype``)."""
    return _as(Tensor.random(list(x.shape), _uniform(node), ctx.main), _dtype(node, x.dtype))


@converter("Bernoulli", since=15)
def bernoulli(ctx: Context, node: Node, p: Tensor) -> Tensor:
    """``Bernoulli``: 1 with probability ``input`` element-wise (type ``dtype``, default the input's)."""
    u = Tensor.random(list(p.shape), Distribution.uniform(0.0, 1.0), p.device).cast(p.dtype)
    return _as(u.lower(p), _dtype(node, p.dtype))


@converter("Multinomial", since=7)
def multinomial(ctx: Context, node: Node, logits: Tensor) -> Tensor:
    """``Multinomial``: ``sample_size`` class indices per batch row of ``[batch, classes]`` unnormalized
    log-probabilities, type ``dtype`` (int32 or int64, default int32)."""
    n = int(node.attr("sample_size", 1))
    batch, classes = logits.shape
    u = Tensor.random([batch, n, classes], Distribution.uniform(0.0, 1.0), logits.device).cast(logits.dtype)
    tiny = 1e-20
    gumbel = -((u + tiny).log().neg() + tiny).log()
    idx = (logits.unsqueeze_dim(1) + gumbel).argmax(2).squeeze_dim(2)
    return idx.cast(_dtype(node, DType.INT32))
