"""Quantized weights of an imported ONNX graph: int8/uint8 initializers with their scales and zero points, held by
the :class:`~._module.OnnxModule` as :class:`ember.quantization.QuantizedTensor` parameters.

The recognition passes (:mod:`._qdq`, :mod:`._qdq_conv`, :mod:`._qlinear`) find a constant integer weight with
constant scales (``DequantizeLinear(W, scale, zero_point)`` feeding ``MatMul``/``Gemm``/``Conv``, or the weight
operand of ``QLinearMatMul``/``QLinearConv``), take it out of the graph's initializers and record a
:class:`QWeight` under a name that the rewritten node reads. :func:`~._module.load_model` turns each into a
``Param`` (``require_grad=False``, ``ParamId`` = that name) holding the quantized tensor, so the module's record
stores the integers and the scales as they are (``docs/record-format.md`` 1.1), never a float32 copy.

Integers: int8 weights are kept; uint8 weights and their zero points are shifted by -128 into int8 (exact:
``q - zero_point`` is unchanged). The scheme is ``Q8S`` (symmetric) when every zero point is 0 and no value is
-128, else ``Q8F`` with the zero points; the level is per tensor (a one-element scale) or per index of ``axis``
(a 1-D scale); scales are stored as float32 (``QuantParam.F32``), the type ONNX's ``DequantizeLinear`` computes
in for float32 and float16 scales.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ember import DType, Tensor, TensorData

from ._ir import Graph, Node

__all__ = ["DOMAIN", "QWeight", "QWeights", "quantized_weight", "register", "use_counts", "ember_node", "facts"]

#: the domain of the nodes the quantization passes write (converters in ``_qdq.py``, ``_qdq_conv.py``, ``_qlinear.py``)
DOMAIN = "ai.ember"


@dataclasses.dataclass(frozen=True)
class QWeight:
    """One quantized weight: ``ints`` (int8, the ONNX layout or its transpose), ``scale`` (float32, 1 element or 1-D
    along ``axis``), ``zero_point`` (int8 like ``scale``, ``None`` when symmetric) and ``axis`` (``-1``: per
    tensor)."""

    ints: np.ndarray
    scale: np.ndarray
    zero_point: np.ndarray | None
    axis: int

    def tensor(self, device: Any) -> Any:
        """The :class:`~ember.quantization.QuantizedTensor` on ``device``."""
        from ember.quantization import QParams, QuantizedTensor, QuantLevel, QuantScheme, QuantValue

        level = QuantLevel.tensor() if self.axis < 0 else QuantLevel.axis(self.axis)
        n = 1 if self.axis < 0 else self.ints.shape[self.axis]
        value = QuantValue.Q8S if self.zero_point is None else QuantValue.Q8F
        scale = Tensor.from_data(TensorData(self.scale.reshape(n)), device, dtype=DType.FLOAT32)
        zp = (
            None
            if self.zero_point is None
            else Tensor.from_data(TensorData(self.zero_point.reshape(n)), device, dtype=DType.INT8)
        )
        values = Tensor.from_data(TensorData(self.ints), device, dtype=DType.INT8)
        return QuantizedTensor(values, tuple(self.ints.shape), QuantScheme(value, level), QParams(scale, zp))


#: name of the value a rewritten node reads -> its quantized weight
QWeights = dict[str, QWeight]


def _host(graph: Graph, name: str) -> np.ndarray | None:
    data = graph.initializers.get(name) if name else None
    return None if data is None else np.asarray(data.to_numpy())


def quantized_weight(
    graph: Graph,
    graph_inputs: set[str],
    w_name: str,
    s_name: str,
    z_name: str,
    axis: int | None,
    rank: int | None = None,
    transpose: bool = False,
) -> QWeight | None:
    """The :class:`QWeight` of initializer ``w_name`` with scale ``s_name`` and zero point ``z_name`` (``""``: none),
    per index of ``axis`` for a 1-D scale (``None``: the scale must have one element), or ``None`` when the pattern
    does not allow it: a non-initializer or an initializer that is also a graph input (a caller may override it),
    a type other than int8/uint8, a rank other than ``rank``, a scale that is not positive and finite, or a scale or
    zero point of another shape. ``transpose`` stores the 2-D transpose (Ember's ``[d_input, d_output]`` for a
    ``Gemm`` with ``transB``; the axis follows)."""
    if w_name in graph_inputs or s_name in graph_inputs or z_name in graph_inputs:
        return None
    w, s = _host(graph, w_name), _host(graph, s_name)
    z = _host(graph, z_name)
    if w is None or s is None or (z_name and z is None) or w.dtype not in (np.int8, np.uint8) or w.ndim == 0:
        return None
    if (rank is not None and w.ndim != rank) or not s.dtype.kind == "f":
        return None
    s = s.astype(np.float32)
    if not (np.all(np.isfinite(s)) and np.all(s > 0)):
        return None
    if s.size == 1:
        ax = -1
    elif axis is None or s.ndim != 1:
        return None
    else:
        ax = axis % w.ndim
        if s.shape[0] != w.shape[ax]:
            return None
    if z is not None and (z.dtype != w.dtype or z.size != s.size):
        return None
    shift = 128 if w.dtype == np.uint8 else 0
    ints = (w.astype(np.int16) - shift).astype(np.int8)
    zs = np.zeros(s.size, dtype=np.int16) if z is None else z.astype(np.int16).ravel() - shift
    if transpose:
        ints = np.ascontiguousarray(ints.T)
        ax = ax if ax < 0 else 1 - ax
    symmetric = not zs.any() and int(ints.min(initial=0)) >= -127
    return QWeight(ints, s.ravel(), None if symmetric else zs.astype(np.int8), ax)


def register(graph: Graph, uses: dict[str, int], qweights: QWeights, w_name: str, qw: QWeight, suffix: str = "") -> str:
    """Record ``qw`` in ``qweights`` and return the name the rewritten node reads: ``w_name`` itself (its initializer
    is dropped from the graph) when that initializer's only use is the node being rewritten, else
    ``w_name::quantized<suffix>`` (``suffix`` names another layout, ``"_T"`` for a transpose; the integer initializer
    stays for its other users), numbered when that name already holds a different weight (the same integers with
    other scales)."""
    if uses.get(w_name, 0) == 1 and w_name not in qweights:
        graph.initializers.pop(w_name, None)
        qweights[w_name] = qw
        return w_name
    base = name = f"{w_name}::quantized{suffix}"
    k = 1
    while name in qweights and not _same(qweights[name], qw):
        name, k = f"{base}_{k}", k + 1
    qweights[name] = qw
    return name


def _same(a: QWeight, b: QWeight) -> bool:
    za, zb = a.zero_point, b.zero_point
    return (
        a.axis == b.axis
        and np.array_equal(a.ints, b.ints)
        and np.array_equal(a.scale, b.scale)
        and ((za is None and zb is None) or (za is not None and zb is not None and np.array_equal(za, zb)))
    )


def use_counts(graph: Graph) -> dict[str, int]:
    """How many times each value is read (by the nodes of every sub-graph and as a graph output)."""
    uses: dict[str, int] = {}
    for n in graph.walk():
        for i in n.inputs:
            uses[i] = uses.get(i, 0) + 1
        for sub in n.subgraphs():
            for name in sub.outer:
                uses[name] = uses.get(name, 0) + 1
    for out in graph.outputs:
        uses[out.name] = uses.get(out.name, 0) + 1
    return uses


def facts(graph: Graph) -> tuple[dict[str, Node], dict[str, int], set[str]]:
    """What a pass reads of the main graph: each value's producer, each value's use count, the graph inputs."""
    producers = {o: n for n in graph.nodes for o in n.outputs if o}
    return producers, use_counts(graph), {i.name for i in graph.inputs}


def ember_node(node: Node, op_type: str, inputs: list[str], attrs: dict[str, Any] | None = None) -> Node:
    """``node`` rewritten as ``op_type`` of the ``ai.ember`` domain on ``inputs`` (same name, outputs and, unless
    given, attributes)."""
    return Node(
        op_type=op_type,
        domain=DOMAIN,
        name=node.name,
        inputs=inputs,
        outputs=list(node.outputs),
        attrs=dict(node.attrs) if attrs is None else attrs,
    )
