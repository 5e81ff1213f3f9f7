"""Layer recognition: ONNX nodes on weights that become Ember layers (fields of the generated module):
convolutions, linear layers, normalizations, embeddings and pooling (the recurrent layers are in
:mod:`._recurrent`, the activations in :mod:`._activations`, the list of all recognizers in
:mod:`._recognizers`).

Each recognizer looks at one node (and, for ``MatMul`` + ``Add``, the node after
it), and when the pattern holds adds the field, writes the call and returns the nodes it consumed. Weights
are kept in PyTorch's layout under PyTorch's names (``weight``, ``bias``, ``running_mean``, ``weight_ih_l0``
...), so :class:`~ember_import.ImportedRecord` converts them to each layer's layout with the rules the
PyTorch importer uses and tests (``ember_import._layers``).

Semantics follow the ONNX operator specification (onnx/docs/Operators.md) for the nodes and the Ember layers'
docstrings for the layers; a node whose attributes the layer cannot express (asymmetric pads, ``auto_pad``
SAME, ``Gemm`` with ``alpha != 1``) is left to the tensor-op emitters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember import TensorData

from ..._layers import transpose
from .._ir import Node
from ._expr import Attr, Call, Name, layer
from ._gen import Gen
from ._names import identifier, scope_path

__all__ = [
    "batch_norm", "channel_norm", "conv", "conv_transpose", "embedding", "gemm", "layer_norm", "matmul_add", "pool",
]


def wrap_source(idx: str, n: str) -> str:
    """Source of the runtime's ``wrap_index`` (``ops/_indexing.py``) on the index tensor ``idx`` and the size
    ``n``: ``n`` added to the negative indices; others out of range stay so and raise."""
    return f"{idx}.mask_where({idx}.lower_elem(0), {idx}.add_scalar({n}))"


def _weight(g: Gen, node: Node, i: int) -> TensorData | None:
    if i < len(node.inputs) and node.inputs[i] in g.weights:
        return g.weights[node.inputs[i]]
    return None


def _absent(node: Node, i: int) -> bool:
    return i >= len(node.inputs) or not node.inputs[i]


def _base(g: Gen, node: Node, weight_input: int, fallback: str) -> tuple[str, str | None]:
    """The field name's base and the source module path: the weight's name when the exporter kept it
    (``layer1.0.conv1.weight`` -> ``layer1.0.conv1``), else the node's scope (``/lstm/LSTM`` -> ``lstm``)."""
    name = node.inputs[weight_input] if weight_input < len(node.inputs) else ""
    if name and "::" not in name and "/" not in name and "." in name and name in g.weights:
        prefix = name.rsplit(".", 1)[0]
        return prefix, prefix
    scope = scope_path(node.name)
    return (scope or fallback), None


def _symmetric(pads: list[int], k: int) -> list[int] | None:
    pads = [int(p) for p in pads]
    if not pads:
        return [0] * k
    if len(pads) != 2 * k or pads[:k] != pads[k:]:
        return None
    return list(pads[:k])


def _padding(g: Gen, k: int, pads: list[int]) -> dict[str, Any]:
    """``{"padding": PADDING_...}`` (a shared module-level constant) for non-zero ``pads``, else ``{}``."""
    pads = [int(p) for p in pads]
    if not any(pads):
        return {}
    name = "PADDING_" + "_".join(str(p) for p in (pads if len(set(pads)) > 1 else pads[:1])).replace("-", "M")
    if k != 2:
        name += f"_{k}D"
    explicit = Call(Attr(Attr(Name("nn"), f"PaddingConfig{k}d"), "Explicit"), tuple(pads))
    return {"padding": g.shared(name, explicit)}


def _tuple(v: list[int]) -> tuple[int, ...]:
    return tuple(int(x) for x in v)


def _call(g: Gen, node: Node, field: str, x: str) -> None:
    g.emit(node, f"self.{field}({x})", base=field)


def conv(g: Gen, node: Node, x: Callable[[], str] | None = None) -> list[Node] | None:
    """``Conv`` on a weight initializer -> ``Conv1d/2d/3d`` (symmetric pads, ``auto_pad`` NOTSET/VALID); ``x`` gives
    the input's source when it is not input 0 as it is (called only once the layer is accepted)."""
    if node.op_type != "Conv":
        return None
    w, b = _weight(g, node, 1), _weight(g, node, 2)
    if w is None or (b is None and not _absent(node, 2)) or node.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        return None
    k = len(w.shape) - 2
    if k not in (1, 2, 3):
        return None
    pads = _symmetric(list(node.attr("pads", [])), k)
    if pads is None:
        return None
    groups = int(node.attr("group", 1))
    kernel = _tuple(list(w.shape[2:]))
    stride = _tuple(list(node.attr("strides", [1] * k)))
    dilation = _tuple(list(node.attr("dilations", [1] * k)))
    opts: dict[str, Any] = {}
    if any(s != 1 for s in stride):
        opts["stride"] = stride
    if any(d != 1 for d in dilation):
        opts["dilation"] = dilation
    if groups != 1:
        opts["groups"] = groups
    if b is None:
        opts["bias"] = False
    init = layer(f"Conv{k}dConfig", (int(w.shape[1]) * groups, int(w.shape[0])), kernel, **opts,
                 **_padding(g, k, pads))
    state = {"weight": w} if b is None else {"weight": w, "bias": b}
    base, source = _base(g, node, 1, "conv")
    field = g.add_field(base, f"nn.Conv{k}d", init, state, source, f"Conv{k}d")
    _call(g, node, field, g.tensor(node, 0) if x is None else x())
    return [node]


def conv_transpose(g: Gen, node: Node) -> list[Node] | None:
    """``ConvTranspose`` on a weight -> ``ConvTranspose1d/2d/3d`` (symmetric pads, no ``output_shape``)."""
    if node.op_type != "ConvTranspose":
        return None
    w, b = _weight(g, node, 1), _weight(g, node, 2)
    if w is None or (b is None and not _absent(node, 2)) or node.attr("output_shape", None) is not None:
        return None
    if node.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        return None
    k = len(w.shape) - 2
    pads = _symmetric(list(node.attr("pads", [])), k)
    if k not in (1, 2, 3) or pads is None:
        return None
    groups = int(node.attr("group", 1))
    stride = _tuple(list(node.attr("strides", [1] * k)))
    dilation = _tuple(list(node.attr("dilations", [1] * k)))
    out_pad = _tuple(list(node.attr("output_padding", [0] * k)))
    opts: dict[str, Any] = {}
    if any(s != 1 for s in stride):
        opts["stride"] = stride
    if any(d != 1 for d in dilation):
        opts["dilation"] = dilation
    if any(pads):
        opts["padding"] = _tuple(pads)
    if any(out_pad):
        opts["padding_out"] = out_pad
    if groups != 1:
        opts["groups"] = groups
    if b is None:
        opts["bias"] = False
    init = layer(f"ConvTranspose{k}dConfig", (int(w.shape[0]), int(w.shape[1]) * groups),
                 _tuple(list(w.shape[2:])), **opts)
    state = {"weight": w} if b is None else {"weight": w, "bias": b}
    base, source = _base(g, node, 1, "conv_transpose")
    field = g.add_field(base, f"nn.ConvTranspose{k}d", init, state, source, f"ConvTranspose{k}d")
    _call(g, node, field, g.tensor(node, 0))
    return [node]


def _linear(g: Gen, node: Node, weight_out_in: TensorData, bias: TensorData | None, base_input: int,
            x: str, anchor: Node) -> None:
    d_out, d_in = (int(d) for d in weight_out_in.shape)
    init = layer("LinearConfig", d_in, d_out) if bias is not None else layer("LinearConfig", d_in, d_out, bias=False)
    state = {"weight": weight_out_in} if bias is None else {"weight": weight_out_in, "bias": bias}
    base, source = _base(g, node, base_input, "linear")
    field = g.add_field(base, "nn.Linear", init, state, source, "Linear")
    _call(g, anchor, field, x)


def gemm(g: Gen, node: Node) -> list[Node] | None:
    """``Gemm(A, B, C)`` with weights ``B`` (and ``C`` of shape ``[N]``), ``alpha = beta = 1``, ``transA = 0``
    -> ``Linear`` (``y = A @ B' + C``; PyTorch's ``weight [out, in]`` is ``B'^T``)."""
    if node.op_type != "Gemm" or node.attr("transA", 0) or float(node.attr("alpha", 1.0)) != 1.0:
        return None
    w, c = _weight(g, node, 1), _weight(g, node, 2)
    if w is None or len(w.shape) != 2 or (c is None and not _absent(node, 2)):
        return None
    n_out = w.shape[0 if node.attr("transB", 0) else 1]
    if c is not None and (float(node.attr("beta", 1.0)) != 1.0 or list(c.shape) != [n_out]):
        return None
    weight = w if node.attr("transB", 0) else transpose(w)
    _linear(g, node, weight, c, 1, g.tensor(node, 0), node)
    return [node]


def matmul_add(g: Gen, node: Node) -> list[Node] | None:
    """``MatMul(x, W)`` with a weight ``W [in, out]``, and the ``Add`` of a bias ``[out]`` that follows it
    when that is the product's only use -> ``Linear``."""
    if node.op_type != "MatMul":
        return None
    w = _weight(g, node, 1)
    if w is None or len(w.shape) != 2 or g.rank(node.inputs[0]) in (None, 1):
        return None
    out = node.outputs[0]
    users = g.consumers.get(out, [])
    bias, anchor, used = None, node, [node]
    if len(users) == 1 and g.uses.get(out, 0) == 1 and users[0].op_type == "Add":
        add = users[0]
        other = add.inputs[1] if add.inputs[0] == out else add.inputs[0]
        b = g.weights.get(other)
        if b is not None and list(b.shape) == [w.shape[1]]:
            bias, anchor, used = b, add, [node, add]
    _linear(g, node, transpose(w), bias, 1, g.tensor(node, 0), anchor)
    return used


def batch_norm(g: Gen, node: Node) -> list[Node] | None:
    """Inference ``BatchNormalization`` (one output) on weights -> ``BatchNorm`` (PyTorch's momentum is
    ``1 - momentum`` of ONNX)."""
    if node.op_type != "BatchNormalization" or len([o for o in node.outputs if o]) != 1:
        return None
    ws = [_weight(g, node, i) for i in range(1, 5)]
    if any(w is None for w in ws) or node.attr("training_mode", 0):
        return None
    scale, bias, mean, var = ws
    assert scale is not None and bias is not None and mean is not None and var is not None
    eps = float(node.attr("epsilon", 1e-5))
    momentum = round(1.0 - float(node.attr("momentum", 0.9)), 6)
    opts: dict[str, Any] = {}
    if abs(eps - 1e-5) > 1e-12:
        opts["epsilon"] = eps
    if abs(momentum - 0.1) > 1e-9:
        opts["momentum"] = momentum
    init = layer("BatchNormConfig", int(scale.shape[0]), **opts)
    state = {"weight": scale, "bias": bias, "running_mean": mean, "running_var": var}
    base, source = _base(g, node, 1, "batch_norm")
    field = g.add_field(base, "nn.BatchNorm", init, state, source, "BatchNorm")
    _call(g, node, field, g.tensor(node, 0))
    return [node]


def layer_norm(g: Gen, node: Node) -> list[Node] | None:
    """``LayerNormalization`` over the last axis with a weight scale (and bias) -> ``LayerNorm``."""
    if node.op_type != "LayerNormalization" or len([o for o in node.outputs if o]) != 1:
        return None
    scale, bias = _weight(g, node, 1), _weight(g, node, 2)
    rank = g.rank(node.inputs[0])
    axis = int(node.attr("axis", -1))
    if scale is None or len(scale.shape) != 1 or (bias is None and not _absent(node, 2)) or rank is None:
        return None
    if axis not in (-1, rank - 1):
        return None
    init = layer("LayerNormConfig", int(scale.shape[0]), **_eps_arg(node))
    zeros = TensorData(np.zeros(scale.shape, dtype=scale.to_numpy().dtype))
    state = {"weight": scale, "bias": bias if bias is not None else zeros}
    base, source = _base(g, node, 1, "layer_norm")
    field = g.add_field(base, "nn.LayerNorm", init, state, source, "LayerNorm")
    _call(g, node, field, g.tensor(node, 0))
    return [node]


def _eps_arg(node: Node) -> dict[str, Any]:
    eps = float(node.attr("epsilon", 1e-5))
    return {} if abs(eps - 1e-5) < 1e-12 else {"epsilon": eps}


def channel_norm(g: Gen, node: Node) -> list[Node] | None:
    """``InstanceNormalization(x, scale, B)`` -> ``InstanceNorm``; ``GroupNormalization`` 21 (per-channel
    ``scale``/``bias``; opset 18's were per group) -> ``GroupNorm``; both on weights."""
    groups: tuple[int, ...]
    if node.op_type == "InstanceNormalization":
        cls, groups = "InstanceNorm", ()
    elif node.op_type == "GroupNormalization" and g.opset >= 21:
        cls, groups = "GroupNorm", (int(node.attr("num_groups")),)
    else:
        return None
    scale, bias = _weight(g, node, 1), _weight(g, node, 2)
    if scale is None or bias is None:
        return None
    init = layer(f"{cls}Config", *groups, int(scale.shape[0]), **_eps_arg(node))
    base, source = _base(g, node, 1, identifier(cls))
    field = g.add_field(base, f"nn.{cls}", init, {"weight": scale, "bias": bias}, source, cls)
    _call(g, node, field, g.tensor(node, 0))
    return [node]


def embedding(g: Gen, node: Node) -> list[Node] | None:
    """``Gather(table, indices)`` on axis 0 of a 2-D float weight -> ``Embedding``."""
    if node.op_type != "Gather" or int(node.attr("axis", 0)) != 0:
        return None
    table = _weight(g, node, 0)
    if table is None or len(table.shape) != 2 or not table.dtype.is_float:
        return None
    idx = g.val(node, 1)
    if idx is None or idx.host:
        return None
    init = layer("EmbeddingConfig", int(table.shape[0]), int(table.shape[1]))
    base, source = _base(g, node, 0, "embedding")
    field = g.add_field(base, "nn.Embedding", init, {"weight": table}, source, "Embedding")
    # ONNX counts negative indices from the end, Ember's embedding rejects them: add the table size to them as
    # the runtime's Gather converter does, unless the indices are known constants that are all non-negative
    ids = g.tensor(node, 1)
    if not (idx.known and isinstance(idx.const, list) and all(i >= 0 for i in idx.const)):
        ids = wrap_source(ids, str(table.shape[0]))
    _call(g, node, field, ids)
    return [node]


def _pool_args(node: Node, k: int) -> tuple[list[int], list[int], list[int]] | None:
    if node.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID"):
        return None
    kernel = [int(x) for x in node.attr("kernel_shape")]
    pads = _symmetric(list(node.attr("pads", [])), k)
    if pads is None:
        return None
    return kernel, [int(x) for x in node.attr("strides", [1] * k)], pads


def pool(g: Gen, node: Node) -> list[Node] | None:
    """``MaxPool`` (one output) / ``AveragePool`` over 1 or 2 spatial dims -> ``MaxPool1d/2d`` /
    ``AvgPool1d/2d``; ``GlobalAveragePool`` -> ``AdaptiveAvgPool1d/2d`` to size 1."""
    rank = g.rank(node.inputs[0]) if node.inputs else None
    if rank not in (3, 4):
        return None
    assert rank is not None
    k = rank - 2
    if node.op_type == "GlobalAveragePool":
        size: int | tuple[int, int] = 1 if k == 1 else (1, 1)
        field = g.add_field(scope_path(node.name) or "global_avg_pool", f"nn.AdaptiveAvgPool{k}d",
                            layer(f"AdaptiveAvgPool{k}dConfig", size, device=False), {}, None,
                            f"AdaptiveAvgPool{k}d")
        _call(g, node, field, g.tensor(node, 0))
        return [node]
    if node.op_type not in ("MaxPool", "AveragePool") or len([o for o in node.outputs if o]) != 1:
        return None
    parts = _pool_args(node, k)
    if parts is None or (node.op_type == "MaxPool" and node.attr("storage_order", 0)):
        return None
    kernel, stride, pads = parts
    dt = g.dtype(node.inputs[0])
    if any(2 * p > k for p, k in zip(pads, kernel)) or dt is None or not dt.is_float:
        return None  # Ember's pooling layers take float input and pads of at most half the kernel (PyTorch's rule)
    opts: dict[str, Any] = {}
    if stride != kernel:
        opts["strides"] = _tuple(stride)
    dil = _tuple(list(node.attr("dilations", [1] * k)))
    if node.op_type == "MaxPool":
        cls = f"MaxPool{k}d"
        if any(d != 1 for d in dil):
            opts["dilation"] = dil
    else:
        cls = f"AvgPool{k}d"
        if any(d != 1 for d in dil):
            return None
        if any(pads) and not node.attr("count_include_pad", 0):
            opts["count_include_pad"] = False
    if node.attr("ceil_mode", 0):
        opts["ceil_mode"] = True
    opts.update(_padding(g, k, pads))
    base = scope_path(node.name) or identifier(node.op_type)
    field = g.add_field(base if base != "" else cls.lower(), f"nn.{cls}",
                        layer(f"{cls}Config", _tuple(kernel), device=False, **opts), {}, None, cls)
    _call(g, node, field, g.tensor(node, 0))
    return [node]
