"""From an ``.onnx`` file (or a ``ModelProto``) to Ember's IR, with the ``onnx`` library.

Steps (Burn's onnx-ir pipeline): ``onnx.load`` without external data; external-data references are
checked to stay inside the model's folder and then read by ``onnx``; ``onnx.checker.check_model``;
``onnx.shape_inference.infer_shapes``; then each node, attribute, initializer and value info becomes IR.
"""

from __future__ import annotations

import importlib
import math
import os
from collections.abc import Iterator, MutableMapping, Sequence
from pathlib import Path
from typing import Any

from ember import DType, TensorData

from ._dtypes import ONNX_TO_DTYPE, dtype_of
from ._errors import OnnxImportError
from ._ir import Dim, Graph, Node, ValueInfo

__all__ = ["read_model", "ParsedModel"]

#: the largest element count an initializer or attribute tensor may declare (2**40 elements is 4 TiB of floats)
MAX_ELEMENTS = 1 << 40
#: the largest rank of an initializer or attribute tensor (numpy's limit)
MAX_RANK = 64


class ParsedModel:
    """The parsed model: the main :class:`Graph`, the opset of each domain, producer and IR version."""

    def __init__(self, graph: Graph, opsets: dict[str, int], producer: str, ir_version: int, source: str,
                 file_size: int = 0) -> None:
        self.graph = graph
        self.opsets = opsets
        self.producer = producer
        self.ir_version = ir_version
        self.source = source
        self.file_size = file_size  # bytes of the file (0 for a ModelProto): the budget's default grows with it


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:  # pragma: no cover - the extra is missing
        from ember import install_command

        raise OnnxImportError(
            f"ONNX import needs the onnx package, which is not installed; install it with: "
            f"{install_command('ember-import', 'onnx')}."
        ) from None
    return onnx


def read_model(model: str | os.PathLike[str] | bytes | Any, *, opset: int | None = None) -> ParsedModel:
    """Parse, check and shape-infer an ONNX model and build the IR.

    Args:
        model: a path to an ``.onnx`` file, its bytes, or an ``onnx.ModelProto``.
        opset: convert the model to this ``ai.onnx`` opset with ``onnx.version_converter`` first.

    Raises:
        OnnxImportError: unreadable or truncated file, a model the checker rejects, external data outside
            the model's folder or shorter than declared, element types Ember lacks, absurd dims.
    """
    onnx = _onnx()
    version_converter = importlib.import_module("onnx.version_converter")

    base: Path | None = None
    file_size = 0
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        source = str(path)
        if not path.is_file():
            raise OnnxImportError(f"'{path}': no such ONNX file.")
        base = path.resolve().parent
        file_size = path.stat().st_size
        try:
            proto = onnx.load_model(str(path), load_external_data=False)
        except Exception as exc:
            raise OnnxImportError(
                f"'{path}': not a readable ONNX model ({type(exc).__name__}: {exc}); the file may be truncated "
                "or not ONNX at all. Re-export it."
            ) from None
    elif isinstance(model, (bytes, bytearray, memoryview)):
        source = "<bytes>"
        file_size = len(model)
        try:
            proto = onnx.load_model_from_string(bytes(model))
        except Exception as exc:
            raise OnnxImportError(f"{source}: not a readable ONNX model ({type(exc).__name__}: {exc}).") from None
    elif isinstance(model, onnx.ModelProto):
        source = f"<ModelProto {model.graph.name!r}>"
        proto = model
    else:
        raise TypeError(f"load_model: expected a path, bytes or onnx.ModelProto, got {type(model).__name__}.")
    _load_external(onnx, proto, base, source)
    if opset is not None:
        try:
            proto = version_converter.convert_version(proto, int(opset))
        except Exception as exc:
            raise OnnxImportError(f"{source}: the model could not be converted to opset {opset}: {exc}") from None
    skeleton, weights = _skeleton(onnx, proto)
    try:
        onnx.checker.check_model(skeleton)
    except Exception as exc:
        raise OnnxImportError(f"{source}: the ONNX checker rejects the model: {exc}") from None
    inferred = skeleton
    if inference_cost(skeleton.graph) <= INFERENCE_BUDGET:
        try:
            inferred = onnx.shape_inference.infer_shapes(skeleton, check_type=False, strict_mode=False, data_prop=True)
        except Exception:  # inference is an aid: a model it cannot process still imports
            pass
    opsets = {(o.domain or "ai.onnx"): int(o.version) for o in proto.opset_import}
    opsets.setdefault("ai.onnx", 1)
    if "" in opsets:
        opsets["ai.onnx"] = opsets.pop("")
    newest = int(onnx.defs.onnx_opset_version())
    if not 1 <= opsets["ai.onnx"] <= newest:
        raise OnnxImportError(
            f"{source}: the model imports ai.onnx opset {opsets['ai.onnx']}, outside the opsets 1..{newest} that "
            f"onnx {onnx.__version__} defines; an operator's meaning at that opset is unknown. Re-export the model "
            "with a released opset, or pass load_model(..., opset=N) to convert it."
        )
    builder = _Builder(onnx, source)
    graph = builder.graph(inferred.graph, extra_initializers=weights)
    return ParsedModel(graph, opsets, proto.producer_name, int(proto.ir_version), source, file_size)


#: ops whose attributes hold sub-graphs (``ai.onnx``)
SUBGRAPH_OPS = frozenset({"If", "Loop", "Scan", "SequenceMap"})
#: the most work :func:`inference_cost` allows ``onnx.shape_inference`` (about a second on one core)
INFERENCE_BUDGET = 10_000_000


def inference_cost(g: Any) -> int:
    """The work ``onnx.shape_inference`` does on graph ``g``: its nodes, plus, per node holding sub-graphs, every
    value of the graph (onnx copies the outer scope's types into each sub-graph's inference, so a graph of ``n``
    nodes with ``k`` ``If`` nodes costs ``O(k * n)``: a 20k-node graph with 1,400 ``If`` nodes took 5 s, and the
    cost grows with the square of the size).

    Above :data:`INFERENCE_BUDGET` the model imports without shape inference (bounded import time, DESIGN §11):
    its declared value types are kept, and the shapes that inference would have given are computed when the
    model runs instead of being folded at import.
    """
    n = len(g.node)
    with_graphs = sum(1 for node in g.node if node.op_type in SUBGRAPH_OPS)
    return n + with_graphs * (n + len(g.input) + len(g.initializer))


#: initializers with more elements than this are left out of the model the checker and shape inference see
SKELETON_ELEMENTS = 1 << 14


def _copy_field(message: Any, name: str, value: Any) -> None:
    if isinstance(value, (str, bytes, int, float)):
        setattr(message, name, value)
    elif hasattr(value, "extend"):  # a repeated field
        getattr(message, name).extend(value)
    else:
        getattr(message, name).CopyFrom(value)


def _skeleton(onnx: Any, proto: Any) -> tuple[Any, list[Any]]:
    """``(model without its large initializers, those initializers)``.

    ``onnx.checker`` and ``onnx.shape_inference`` serialize the whole model (twice the import time of a
    100 MB model in onnx.load's); they need only the types and shapes of the weights, so the large
    initializers are declared as graph inputs of a lightweight copy instead. Small ones (shape constants
    that data propagation reads) stay. The left-out tensors are checked when they are read (dims against
    data length).
    """
    g = proto.graph
    large = [t for t in g.initializer if math.prod(t.dims) > SKELETON_ELEMENTS]  # (ByteSize would serialize)
    if not large:
        return proto, []
    names = {t.name for t in large}
    skel = onnx.ModelProto()
    for field, value in proto.ListFields():
        if field.name != "graph":
            _copy_field(skel, field.name, value)
    sg = skel.graph
    for field, value in g.ListFields():
        if field.name == "initializer":
            sg.initializer.extend(t for t in value if t.name not in names)
        else:
            _copy_field(sg, field.name, value)
    declared = {i.name for i in g.input}
    sg.input.extend(onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
                    for t in large if t.name not in declared)
    return skel, large


# ---------------------------------------------------------------------------------------------- external data
def _external_tensors(onnx: Any, proto: Any) -> list[Any]:
    from onnx.external_data_helper import _get_all_tensors, uses_external_data

    return [t for t in _get_all_tensors(proto) if uses_external_data(t)]


def _load_external(onnx: Any, proto: Any, base: Path | None, source: str) -> None:
    tensors = _external_tensors(onnx, proto)
    if not tensors:
        return
    if base is None:
        raise OnnxImportError(
            f"{source}: the model keeps tensors in external data files, which need the model's folder; load it "
            "from its path instead of from bytes or a ModelProto."
        )
    for t in tensors:
        info = {e.key: e.value for e in t.external_data}
        location = info.get("location", "")
        if not location or os.path.isabs(location) or "\x00" in location:
            raise OnnxImportError(
                f"{source}: tensor {t.name!r} names external data {location!r}; only paths relative to the "
                "model's folder are read."
            )
        target = (base / location).resolve()
        if target != base and base not in target.parents:
            raise OnnxImportError(
                f"{source}: tensor {t.name!r} names external data {location!r}, which leaves the model's folder "
                f"{base}; refusing to read it."
            )
        if not target.is_file():
            raise OnnxImportError(f"{source}: tensor {t.name!r}: external data file {location!r} is missing.")
        try:
            offset = int(info.get("offset", "0"))
            length = int(info["length"]) if "length" in info else None
        except ValueError:
            raise OnnxImportError(f"{source}: tensor {t.name!r}: malformed external-data offset/length.") from None
        size = target.stat().st_size
        if offset < 0 or offset > size or (length is not None and (length < 0 or offset + length > size)):
            raise OnnxImportError(
                f"{source}: tensor {t.name!r}: external data [{offset}, +{length}) is outside {location!r} "
                f"({size} bytes)."
            )
    try:
        from onnx.external_data_helper import load_external_data_for_model

        load_external_data_for_model(proto, str(base))
    except Exception as exc:
        raise OnnxImportError(f"{source}: external data could not be read: {exc}") from None


# ---------------------------------------------------------------------------------------------- protobuf -> IR
class _Builder:
    def __init__(self, onnx: Any, source: str) -> None:
        self.onnx = onnx
        self.source = source
        self.counter = 0

    def tensor(self, t: Any, what: str) -> TensorData:
        if len(t.dims) > MAX_RANK:
            raise OnnxImportError(
                f"{self.source}: {what} {t.name!r} declares {len(t.dims)} dims; Ember's tensors have at most "
                f"{MAX_RANK}. The file is malformed."
            )
        dims = [int(d) for d in t.dims]
        if any(d < 0 for d in dims) or math.prod(dims) > MAX_ELEMENTS:
            raise OnnxImportError(f"{self.source}: {what} {t.name!r} declares absurd dims {dims}.")
        dtype = dtype_of(int(t.data_type), f"{self.source}: {what} {t.name!r}")
        if t.raw_data:  # (the typed fields are counted by numpy_helper; raw bytes are only reshaped)
            itemsize = self.onnx.helper.tensor_dtype_to_np_dtype(int(t.data_type)).itemsize
            want = math.prod(dims) * itemsize
            if len(t.raw_data) != want:
                raise OnnxImportError(
                    f"{self.source}: {what} {t.name!r} could not be read: it declares dims {dims} of {dtype} "
                    f"({want} bytes) but holds {len(t.raw_data)} bytes of data; the file is truncated or malformed. "
                    "Re-export it."
                )
        try:
            from onnx import numpy_helper

            arr = numpy_helper.to_array(t)
        except Exception as exc:
            raise OnnxImportError(
                f"{self.source}: {what} {t.name!r} ({dims}) could not be read: {exc}. The data is shorter than "
                "its dims say or malformed."
            ) from None
        if list(arr.shape) != dims:
            raise OnnxImportError(f"{self.source}: {what} {t.name!r}: data shape {list(arr.shape)} != dims {dims}.")
        if dtype is DType.BFLOAT16:  # onnx gives ml_dtypes.bfloat16 values: exact in float32
            return TensorData(arr.astype("float32"), dtype)
        return TensorData(arr, dtype)  # to_array copies the bytes out of the proto: no second copy

    def value_info(self, v: Any) -> ValueInfo:
        return self._type_info(v.name, v.type)

    def _type_info(self, name: str, tp: Any, depth: int = 0) -> ValueInfo:
        """The :class:`ValueInfo` of type ``tp``; a sequence's or optional's contents in ``elem`` (nested at
        most a few levels: a hostile file's deep nesting is cut off as ``unknown``)."""
        which = tp.WhichOneof("value")
        if which == "tensor_type":
            return ValueInfo(name, self._dtype(tp.tensor_type.elem_type), self._shape(tp.tensor_type), "tensor")
        if which in ("sequence_type", "optional_type") and depth < 4:
            inner = tp.sequence_type.elem_type if which == "sequence_type" else tp.optional_type.elem_type
            dt = self._dtype(inner.tensor_type.elem_type) if inner.WhichOneof("value") == "tensor_type" else None
            elem = self._type_info(name, inner, depth + 1) if inner.WhichOneof("value") else None
            return ValueInfo(name, dt, None, which.split("_")[0], elem)
        return ValueInfo(name, None, None, "unknown")

    @staticmethod
    def _dtype(elem_type: int) -> Any:
        return ONNX_TO_DTYPE.get(int(elem_type))  # unknown/unsupported: checked where used

    @staticmethod
    def _shape(tt: Any) -> tuple[Dim, ...] | None:
        if not tt.HasField("shape"):
            return None
        dims: list[Dim] = []
        for d in tt.shape.dim:
            w = d.WhichOneof("value")
            dims.append(int(d.dim_value) if w == "dim_value" else (d.dim_param or None) if w == "dim_param" else None)
        return tuple(dims)

    def attribute(self, a: Any, node_name: str) -> Any:
        AP = self.onnx.AttributeProto
        t = a.type
        if t == AP.INT:
            return int(a.i)
        if t == AP.FLOAT:
            return float(a.f)
        if t == AP.STRING:
            return a.s.decode("utf-8", errors="replace")
        if t == AP.INTS:
            return [int(x) for x in a.ints]
        if t == AP.FLOATS:
            return [float(x) for x in a.floats]
        if t == AP.STRINGS:
            return [s.decode("utf-8", errors="replace") for s in a.strings]
        if t == AP.TENSOR:
            return self.tensor(a.t, f"attribute {a.name!r} of node {node_name!r}")
        if t == AP.TENSORS:
            return [self.tensor(x, f"attribute {a.name!r} of node {node_name!r}") for x in a.tensors]
        if t == AP.GRAPH:
            return a.g  # built in graph() once the outer names are known
        if t == AP.GRAPHS:
            return list(a.graphs)
        if t == AP.TYPE_PROTO:
            tp = a.tp
            if tp.WhichOneof("value") == "tensor_type":
                return ("tensor", self._dtype(tp.tensor_type.elem_type))
            if tp.WhichOneof("value") == "sequence_type":
                inner = tp.sequence_type.elem_type
                return ("sequence", self._dtype(inner.tensor_type.elem_type))
            return ("unknown", None)
        if t == AP.SPARSE_TENSOR:
            raise OnnxImportError(f"{self.source}: node {node_name!r}: sparse tensor attributes are not supported.")
        raise OnnxImportError(f"{self.source}: node {node_name!r}: attribute {a.name!r} has unknown type {t}.")

    def graph(self, g: Any, extra_initializers: Sequence[Any] = ()) -> Graph:
        """The IR of graph ``g``, in time linear in its nodes, attributes and values (a 100k-node graph's IR
        is built in about a second; see ``bench/onnx_import.py``)."""
        inits = {t.name: self.tensor(t, "initializer") for t in [*g.initializer, *extra_initializers]}
        for st in g.sparse_initializer:
            raise OnnxImportError(f"{self.source}: sparse initializer {st.values.name!r} is not supported.")
        inputs = [self.value_info(v) for v in g.input if v.name not in inits]
        outputs = [self.value_info(v) for v in g.output]
        value_info = ValueInfos(self, g.value_info)
        for v in [*g.input, *g.output]:
            if v.name not in value_info:
                value_info[v.name] = self.value_info(v)
        known = set(inits)
        known.update(v.name for v in g.input)
        nodes: list[Node] = []
        names: set[str] = set()
        outer: list[str] = []
        outer_seen: set[str] = set()  # (``outer`` keeps the order; membership tests on a list were O(n))
        graph_types = (self.onnx.AttributeProto.GRAPH, self.onnx.AttributeProto.GRAPHS)
        for proto in g.node:
            self.counter += 1
            name = proto.name or f"{proto.op_type}_{self.counter}"
            while name in names:
                self.counter += 1
                name = f"{name}_{self.counter}"
            names.add(name)
            attrs: dict[str, Any] = {}
            has_graph = False
            for a in proto.attribute:
                if a.ref_attr_name:
                    raise OnnxImportError(
                        f"{self.source}: node {name!r}: attribute references are only valid in functions."
                    )
                if a.type in graph_types:
                    has_graph = True
                attrs[a.name] = self.attribute(a, name)
            if has_graph:  # built once the node's attributes are read (no per-node copy of the scope: O(n^2))
                for key, val in list(attrs.items()):
                    if isinstance(val, self.onnx.GraphProto):
                        attrs[key] = self.graph(val)
                    elif isinstance(val, list) and val and isinstance(val[0], self.onnx.GraphProto):
                        attrs[key] = [self.graph(x) for x in val]
            node_inputs = list(proto.input)
            node_outputs = list(proto.output)
            node = Node(proto.op_type, proto.domain, name, node_inputs, node_outputs, attrs)
            for i in node_inputs:
                if i and i not in known and i not in outer_seen:
                    outer.append(i)
                    outer_seen.add(i)
            if has_graph:
                for sub in node.subgraphs():
                    for i in sub.outer:
                        if i not in known and i not in outer_seen:
                            outer.append(i)
                            outer_seen.add(i)
            known.update(node_outputs)  # ("" may enter: inputs named "" are skipped above)
            nodes.append(node)
        return Graph(g.name, nodes, inputs, outputs, inits, value_info, outer)


class ValueInfos(MutableMapping[str, ValueInfo]):
    """``name -> ValueInfo`` of a graph's values, each converted from its ``ValueInfoProto`` when first read.

    Shape inference types every intermediate value; converting them all up front took most of a large graph's
    IR time, and the importer reads only a few (``Shape`` folding, ModelGen's docstrings). Reads, writes and
    iteration behave as a ``dict`` (iteration order: the protos' order, then names added later).
    """

    def __init__(self, builder: _Builder, protos: Any) -> None:
        self._builder = builder
        self._protos: dict[str, Any] = {v.name: v for v in protos}
        self._done: dict[str, ValueInfo] = {}

    def __getitem__(self, name: str) -> ValueInfo:
        found = self._done.get(name)
        if found is None:
            found = self._builder.value_info(self._protos[name])  # (KeyError when absent)
            self._done[name] = found
        return found

    def __setitem__(self, name: str, info: ValueInfo) -> None:
        self._done[name] = info

    def __delitem__(self, name: str) -> None:
        had = self._done.pop(name, None) is not None
        if self._protos.pop(name, None) is None and not had:
            raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return name in self._done or name in self._protos

    def __iter__(self) -> Iterator[str]:
        yield from self._protos
        yield from (k for k in self._done if k not in self._protos)

    def __len__(self) -> int:
        return len(self._protos) + sum(1 for k in self._done if k not in self._protos)

    def __reduce__(self) -> tuple[Any, ...]:
        """Copied and pickled as a plain ``dict`` (every entry converted): the protos stay with the parser."""
        return (dict, (dict(self.items()),))
