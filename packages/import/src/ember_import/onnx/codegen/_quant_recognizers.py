"""Quantized layers in generated code: the QDQ patterns that ``load_model`` rewrites onto quantized weights
(:mod:`.._qdq`, :mod:`.._qdq_conv`) become fields of :mod:`ember.quantization`'s layers holding the int8 weights.

- ``QdqMatMul`` (a QDQ ``MatMul`` / ``Gemm`` with ``alpha = 1``; its bias, or the ``Add`` of a bias ``[N]`` that
  follows a ``MatMul``) -> ``quantization.QuantizedLinear``;
- ``QdqConv`` over 1 or 2 spatial dims (symmetric pads, ``auto_pad`` NOTSET/VALID: the ``Conv`` recognizer's rules,
  :func:`._layers.conv`) -> ``quantization.QuantizedConv1d`` / ``QuantizedConv2d`` (the weight stored as the
  matrix ``[c_out, c_in / groups * prod(kernel)]``, as :class:`~ember.quantization.Quantizer` stores it).

The field's ``init(device)`` is the float layer quantized with the weight's scheme
(``quantization.Quantizer(scheme=INT8_...).quantize_weights(nn.LinearConfig(...).init(device))``: fresh weights
of the same layout and scheme); the record holds the ONNX integers and scales as they are. An input that comes
through a per-tensor ``QuantizeLinear`` -> ``DequantizeLinear`` pair is written as those two ops (the runtime's
tensor code, in float) before the layer call: the generated code computes what the graph does, up to float
rounding (the runtime ``load_model`` runs the same product on the int8 kernel).

``QLinearMatMul`` / ``QLinearConv`` (integer in, integer out: no quantized layer computes them) go back to their
``ai.onnx`` form before the trace (:func:`restore_qlinear`): generated code runs them as integer tensor code on the
weight's integers (an integer ``Param`` field), scales and zero points. Every other
``ai.ember`` node (a ``Gemm`` with ``alpha != 1``, a 3-D convolution or one with asymmetric pads) is refused with
a :class:`~._errors.ModelGenError`: generated code is right or refused.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import TensorData

from .._ir import Node
from .._qdq import DOMAIN
from ..ops._quantize import dequantize_linear, quantize_linear
from ._errors import ModelGenError
from ._expr import Attr, Call, Expr, Name, Shared
from ._gen import Gen
from ._layers import conv
from ._names import scope_path
from ._sym import parts_text

__all__ = ["quantized_layer", "apply_quantized", "restore_qlinear"]


def _q(name: str) -> Attr:
    return Attr(Name("quantization"), name)


def _scheme(g: Gen, qt: Any) -> Shared:
    """The shared ``INT8_<SYMMETRIC|AFFINE>_<PER_CHANNEL|PER_TENSOR>`` scheme constant of ``qt``'s scheme (a level per
    axis is written ``axis(0)``: the Quantizer resolves it to each layer's output channel)."""
    symmetric = qt.scheme.value.symmetric
    per_channel = qt.scheme.level.kind == "axis"
    name = f"INT8_{'SYMMETRIC' if symmetric else 'AFFINE'}_{'PER_CHANNEL' if per_channel else 'PER_TENSOR'}"
    value = Attr(_q("QuantValue"), "Q8S" if symmetric else "Q8F")
    level = Call(Attr(_q("QuantLevel"), "axis"), (0,)) if per_channel else Call(Attr(_q("QuantLevel"), "tensor"))
    return g.shared(name, Call(_q("QuantScheme"), (value, level)))


def _quantized(g: Gen, qt: Any, float_layer: Expr) -> Call:
    """``quantization.Quantizer(scheme=S).quantize_weights(<float_layer>)``."""
    g.imports.add(("ember", "quantization"))
    quantizer = Call(_q("Quantizer"), (), (("scheme", _scheme(g, qt)),))
    return Call(Attr(quantizer, "quantize_weights"), (float_layer,))


def _base(node: Node, name: str, fallback: str) -> tuple[str, str | None]:
    """The field's base and source path: the weight's module path when the name keeps one (``fc.weight`` or
    onnxruntime's ``fc.weight_quantized`` -> ``fc``), else the node's scope."""
    if name and "::" not in name and "/" not in name and "." in name:
        prefix = name.rsplit(".", 1)[0]
        return prefix, prefix
    return scope_path(node.name) or fallback, None


def _input(g: Gen, node: Node) -> str:
    """The source of the layer's input: ``x``, or ``x`` through its quantize -> dequantize pair (inputs 3, 4)."""
    if len(node.inputs) < 5 or not node.inputs[3]:
        return g.tensor(node, 0)
    x = g.value(node.inputs[0])
    scale, zp = g.raw_value(node.inputs[3]), g.raw_value(node.inputs[4])
    q = Node(op_type="QuantizeLinear", domain="", name=node.name, inputs=[], outputs=[], attrs={})
    xq = quantize_linear(None, q, x, scale, zp)  # type: ignore[arg-type]  # the converters read no context
    xf = dequantize_linear(None, q, xq, scale, zp)  # type: ignore[arg-type]
    return parts_text(g.arg(xf))


def _linear(g: Gen, node: Node) -> list[Node]:
    qt = g.quantized[node.inputs[1]]
    d_in, d_out = (int(d) for d in qt.shape)
    alpha, beta = float(node.attr("alpha", 1.0)), float(node.attr("beta", 1.0))
    rank = g.rank(node.inputs[0])
    if alpha != 1.0 or rank is None or rank < 2:
        raise ModelGenError(
            f"{node.where()}: generated code writes a quantized MatMul/Gemm as a QuantizedLinear, "
            f"which needs alpha = 1 and an input of rank >= 2 (found alpha {alpha}, rank {rank})."
        )
    bias: TensorData | None = None
    used, anchor = [node], node
    c = node.inputs[2] if len(node.inputs) > 2 else ""
    if c:
        bias = g.weights.get(c)
        if bias is None or list(bias.shape) != [d_out] or beta != 1.0:
            raise ModelGenError(
                f"{node.where()}: generated code writes a quantized Gemm as a QuantizedLinear, which "
                f"needs a weight bias of shape [{d_out}] and beta = 1."
            )
    else:
        out = node.outputs[0]
        users = g.consumers.get(out, [])
        if len(users) == 1 and g.uses.get(out, 0) == 1 and users[0].op_type == "Add" and users[0].domain == "":
            add = users[0]
            other = add.inputs[1] if add.inputs[0] == out else add.inputs[0]
            b = g.weights.get(other)
            if b is not None and list(b.shape) == [d_out] and g.rank(add.outputs[0]) in (None, rank):
                bias, anchor, used = b, add, [node, add]
    x = _input(g, node)
    from ._expr import layer

    init = layer("LinearConfig", d_in, d_out) if bias is not None else layer("LinearConfig", d_in, d_out, bias=False)
    base, source = _base(node, node.inputs[1], "linear")
    state = {} if bias is None else {"bias": bias}
    field = g.add_field(base, "quantization.QuantizedLinear", _quantized(g, qt, init), state, source, "QuantizedLinear")
    g.quantized_state[field] = {"weight": qt}
    g.emit(anchor, f"self.{field}({x})", base=field)
    return used


def _conv(g: Gen, node: Node) -> list[Node]:
    name = node.inputs[1]
    qt = g.quantized[name]
    k = len(qt.shape) - 2
    refusal = ModelGenError(
        f"{node.where()}: generated code writes a quantized Conv as QuantizedConv1d/2d, which "
        "need 1 or 2 spatial dims, symmetric pads, auto_pad NOTSET or VALID and a weight "
        "bias (or none)."
    )
    if k not in (1, 2):
        raise refusal
    view = Node(
        op_type="Conv",
        domain="",
        name=node.name,
        inputs=list(node.inputs),
        outputs=list(node.outputs),
        attrs=dict(node.attrs),
    )
    g.weights[name] = TensorData(np.zeros(qt.shape, dtype=np.float32))  # the shape, for the float recognizer
    n_fields = len(g.fields)
    try:
        used = conv(g, view, lambda: _input(g, node))  # x through its quantize -> dequantize pair, if any
    finally:
        del g.weights[name]
    if used is None or len(g.fields) != n_fields + 1:
        raise refusal
    f = g.fields[-1]
    f.ctor = _quantized(g, qt, f.ctor)
    f.annotation, f.layer = f"quantization.QuantizedConv{k}d", f"QuantizedConv{k}d"
    f.state.pop("weight", None)
    base, source = _base(node, name, "conv")
    f.source = source
    g.quantized_state[f.name] = {"weight": qt}
    return [node]


def quantized_layer(g: Gen, node: Node) -> list[Node] | None:
    """The recognizer (see the module docstring): ``QdqMatMul`` / ``QdqConv`` -> a quantized layer field; any
    other ``ai.ember`` node raises :class:`ModelGenError`; ``None`` for every other node."""
    if node.domain != DOMAIN:
        return None
    if node.op_type == "QdqMatMul":
        return _linear(g, node)
    if node.op_type == "QdqConv":
        return _conv(g, node)
    raise ModelGenError(
        f"{node.where()}: generated code does not write {node.op_type} with a quantized weight yet "
        "(load_model runs it); QDQ MatMul/Gemm/Conv models generate quantized layers."
    )


def apply_quantized(net: Any, report: Any, gen: Gen) -> Any:
    """``net`` (the generated module, built from the fields' construction trees, its float weights loaded) with each
    quantized field's weight replaced by the model's quantized tensor (a Conv's as its ``[c_out, fan_in]`` matrix),
    under the field's ``ParamId``.

    Raises:
        ModelGenError: the float load's ``report`` (``load_record(strict=False)``) has other problems than the
            quantized weights missing, or a quantized weight does not fit its layer (bugs in ModelGen).
    """
    from ember.module import Param

    extra = sorted(set(report.missing) - {f"{field}.weight" for field in gen.quantized_state})
    if extra or report.unused or report.mismatched:
        raise ModelGenError(
            f"generated module: the weights do not fit (missing {extra}, unused {report.unused}, "
            f"mismatched {report.mismatched}); this is a bug in ModelGen."
        )
    changes = {}
    for field, parts in gen.quantized_state.items():
        layer = getattr(net, field)
        qt = parts["weight"]
        if len(qt.shape) > 2:  # a convolution's [c_out, c_in / groups, *kernel] as the layer's matrix
            qt = _as_matrix(qt)
        if tuple(qt.shape) != tuple(layer.weight.val().shape):
            raise ModelGenError(
                f"generated field {field!r}: the quantized weight has shape {list(qt.shape)}, the "
                f"layer {list(layer.weight.val().shape)}; this is a bug in ModelGen."
            )
        changes[field] = layer.replace(weight=Param(qt, layer.weight.id, require_grad=False))
    return net.replace(**changes) if changes else net


def _as_matrix(qt: Any) -> Any:
    from ember.quantization import QuantizedTensor

    n = int(qt.shape[0])
    values = qt.values.reshape([n, -1])
    return QuantizedTensor(values, tuple(values.shape), qt.scheme, qt.qparams)


def restore_qlinear(module: Any, g: Gen) -> None:
    """Give the ``ai.ember`` ``QLinearMatMul`` / ``QLinearConv`` nodes of ``module``'s graph their ``ai.onnx`` form
    back, the quantized weight split in three values: its int8 integers under the weight's name (a weight of the
    generation: an integer ``Param`` field of the generated module, held in the backend's integer type),
    ``<weight>::scale`` (float32) and ``<weight>::zero_point`` (int8, zeros for a symmetric scheme) as constants;
    all three are also constants of the module's program. The integers are the weight's (uint8 ones shifted with
    their zero points, which leaves ``w - w_zero_point`` and every result unchanged); the nodes get the ``ai.onnx``
    converters back."""
    from .._registry import lookup

    program = module.program
    for node in program.graph.nodes:
        if node.domain != DOMAIN or node.op_type not in ("QLinearMatMul", "QLinearConv"):
            continue
        name = node.inputs[3]
        qt = g.quantized[name]
        scale = qt.qparams.scale.to_data()
        zp = qt.qparams.zero_point
        parts = {  # the integers under the weight's own name (the field's), its parameters beside them
            name: qt.values.to_data(),
            f"{name}::scale": scale,
            f"{name}::zero_point": TensorData(np.zeros(scale.shape, np.int8)) if zp is None else zp.to_data(),
        }
        values, *params = parts
        g.weights[values] = parts[values]  # a field of its own, read by traced code
        del g.quantized[name]
        g.constants.update({k: parts[k] for k in params})
        program.constants.update(parts)
        node.domain = ""
        node.inputs = [*node.inputs[:3], *parts, *node.inputs[4:]]
        found = lookup(node.op_type, "", program.opsets.get("ai.onnx", 1))
        if found is None:  # the opset predates the operator: the model would not have loaded
            raise ModelGenError(f"{node.where()}: no ai.onnx converter at this opset; this is a bug in ModelGen.")
        program.converters[id(node)] = found
