"""``ModelGen``: ONNX to Ember source (Burn's ``burn-onnx`` ``ModelGen``), and the generation driver."""

from __future__ import annotations

import dataclasses
import os
import re
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ember import DType, DTypeError, Tensor, TensorData
from ember.backend import Device

from .._context import Context
from .._ir import Graph, ValueInfo
from .._module import OnnxModule, load_model
from .._passes import fold_constants, remove_dead_nodes
from .._program import host_device, host_override
from ._control import control_flow
from ._device import module_device, resolve_module_device
from ._errors import ModelGenError
from ._gen import Gen
from ._gen_state import Line
from ._hints import Hints
from ._host import HostDTypeError, on_a_host
from ._io import CONVENTION, check_input, container_input, output_source, stand_in
from ._names import check_class_name, identifier
from ._quant_recognizers import restore_qlinear
from ._recognizers import RECOGNIZERS
from ._retrace import RETRACE_HINTS, check_same_source, has_dynamic_dims
from ._run import TraceContext, convert_node, shadow_outputs
from ._source import check_record_type, render
from ._sym import Sym, Var, parts_text
from ._trace import tracing
from ._weights import save_weights

__all__ = ["GeneratedModel", "ModelGen", "generate", "source_key_remap"]

@dataclasses.dataclass
class GeneratedModel:
    """What :func:`generate` made.

    Attributes:
        source: the text of ``model.py``.
        gen: the generation state (fields with their weights, ``forward`` lines).
        module: the runtime module the source was generated from.
        host: the device the trace computed on (numpy's, or a wider CPU backend's: :mod:`._host`).
    """

    source: str
    gen: Gen
    module: OnnxModule
    host: Device | None = None


def _hint_inputs(g: Gen, graph: Graph, sizes: tuple[int, ...]) -> list[tuple[str, ValueInfo]]:
    """Bind each graph input to a traced stand-in: its declared shape, each named dim (``batch``) a
    :class:`~._sym.Sym` with a small distinct size (``sizes`` in turn), read once in ``forward``
    (``batch = x.shape[0]``)."""
    rng = np.random.default_rng(0)
    hints = iter(sizes)
    inputs = []
    for info in graph.inputs:
        check_input(info)
        var = Var(g.var_names.take(identifier(info.name, "input")))
        if info.kind != "tensor":  # a list or an optional: its length or emptiness is the run's
            g.env[info.name] = container_input(info, var, rng, sizes)
            inputs.append((var.name, info))
            if CONVENTION not in g.doc_notes:
                g.doc_notes.append(CONVENTION)
            continue
        assert info.dtype is not None and info.shape is not None
        if g.device_source is None:
            g.device_source = (var, ".device")
        dims: list[Any] = []
        for axis, d in enumerate(info.shape):
            if isinstance(d, int) and d >= 0:
                dims.append(d)
                continue
            if isinstance(d, str) and d and not d.startswith("unk__"):
                sym = g.dim_syms.get(d)
                if sym is None:
                    dvar = Var(g.var_names.take(identifier(d, "dim")))
                    sym = Sym(next(hints), (dvar,))
                    g.dim_syms[d] = sym
                    g.lines.append(Line((dvar,), (var, f".shape[{axis}]")))
                dims.append(sym)
            else:
                dims.append(Sym(next(hints), (var, f".shape[{axis}]")))
        shape = [int(d) for d in dims]
        dt = info.dtype
        t = stand_in(dt, shape, rng)
        if dt is not DType.BOOL and len(shape) <= 1:
            g.read_hints[id(t)] = Hints(shape, dt.is_float)  # what a host read of it gives the trace (axes, a count)
        g.bind(t, var, tuple(dims))
        g.env[info.name] = t
        inputs.append((var.name, info))
    return inputs


#: the sizes a trace gives the named dims of the inputs, in order of appearance (small, distinct, not 1)
_HINTS = (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)


def generate(model: str | os.PathLike[str] | bytes | Any, *, class_name: str = "Model",
             record_file: str = "model.mpk", record_type: str = "mpk", half: bool = False,
             source_name: str | None = None) -> GeneratedModel:
    """The Ember source of an ONNX model (see :class:`ModelGen`).

    Every string of the model file reaches the source only as a ``repr``-style literal or a sanitised identifier
    (:mod:`._names`); docstrings show names escaped. Nothing is written or run here.

    Raises:
        OnnxImportError: the model cannot be imported at all.
        ModelGenError: operators or attributes without generated-code support (listed), a shape computed
            from tensor data, a ``class_name`` the file cannot use, or an unknown ``record_type``.
    """
    check_class_name(class_name)
    check_record_type(record_type)

    def attempt() -> GeneratedModel:
        try:
            made = _generate(model, class_name, record_file, record_type, half, source_name, _HINTS)
            if has_dynamic_dims(made.module.program.graph):  # a size leaked into the code? (:mod:`._retrace`)
                check_same_source(made, lambda: _generate(model, class_name, record_file, record_type, half,
                                                          source_name, RETRACE_HINTS))
            return made
        except DTypeError as exc:
            raise HostDTypeError(f"generation computes on the host ({host_device()}), which lacks an element type "
                                 f"of this model: {exc}") from exc

    made, host = on_a_host(attempt)
    made.host = host
    return made


def _generate(model: str | os.PathLike[str] | bytes | Any, class_name: str, record_file: str, record_type: str,
              half: bool, source_name: str | None, sizes: tuple[int, ...]) -> GeneratedModel:
    module = load_model(model, host_device())
    graph = module.program.graph
    weights, constants = _fold_weights(module)
    g = Gen(graph, weights, constants, module.opset, True)
    g.quantized = {k: p.val() for k, p in module.weights.items() if not isinstance(p.val(), Tensor)}
    restore_qlinear(module, g)  # QLinearMatMul / QLinearConv: integer tensor code on the int8 weights
    ctx = TraceContext(module.program, g, control_flow)
    if not any(i.kind == "tensor" for i in graph.inputs):
        module_device(g)
    try:
        inputs, outputs, body = _trace(g, ctx, graph, sizes)
    except DTypeError as exc:
        raise HostDTypeError(f"generation computes on the host ({host_device()}), which lacks an element type "
                             f"of this model: {exc}") from exc
    n_params = sum(int(np.prod(f_data.shape, dtype=np.int64)) for f in g.fields for f_data in f.state.values()
                   if f_data.dtype.is_float)
    n_params += sum(int(np.prod(q.shape, dtype=np.int64)) for qs in g.quantized_state.values() for q in qs.values())
    name = source_name or (os.path.basename(os.fspath(model)) if isinstance(model, (str, os.PathLike)) else "model")
    source = render(g, body, class_name=class_name, source_file=name, record_file=record_file,
                    record_type=record_type, half=half, inputs=inputs, outputs=outputs, n_params=n_params)
    return GeneratedModel(source, g, module)


def _trace(g: Gen, ctx: TraceContext, graph: Graph, sizes: tuple[int, ...]) -> tuple[list[tuple[str, ValueInfo]],
                                                              list[tuple[str, ValueInfo]], list[str]]:
    """Run the graph traced: the recognizers, else each node's converter; returns the inputs (variable, info),
    the outputs (source, info) and the lines of ``forward``."""
    with tracing(g):
        inputs = _hint_inputs(g, graph, sizes)
        consumed: set[int] = set()
        for node in graph.nodes:
            if id(node) in consumed:
                continue
            g.node = node
            for recognize in RECOGNIZERS:
                used = recognize(g, node)
                if used:
                    consumed.update(id(n) for n in used)
                    dynamic = False  # a pattern's later nodes see its first node's output untraced
                    for n in used:
                        dynamic = shadow_outputs(g, ctx, n, dynamic)
                    break
            else:
                convert_node(g, ctx, node)
        g.node = None
        outputs = []
        for info in graph.outputs:
            v = g.value(info.name)
            text, annotation = output_source(g, info, v)
            outputs.append((text, _traced_dims(g, v, info) if isinstance(v, Tensor) else info))
            g.output_types.append(annotation)
        resolve_module_device(g)
        body = g.body([e for e, _ in outputs])
    return inputs, outputs, body


def _traced_dims(g: Gen, v: Tensor, info: ValueInfo) -> ValueInfo:
    """``info`` with the dims the trace knows as an input's named dim (``batch``) or a fixed size, for the
    docstrings (shape inference may have named them otherwise or not at all)."""
    dims = g.sym_shapes.get(id(v))
    if info.shape is None or dims is None or len(dims) != len(info.shape):
        return info
    names = {parts_text(sym.parts): name for name, sym in g.dim_syms.items()}
    shape = tuple(names.get(parts_text(d.parts), s) if isinstance(d, Sym) else int(d)
                  for d, s in zip(dims, info.shape))
    return dataclasses.replace(info, shape=shape)


def _fold_weights(module: OnnxModule) -> tuple[dict[str, TensorData], dict[str, TensorData]]:
    """Weights and constants after folding the nodes computed from weights alone (PyTorch's exporter writes
    ``Transpose(weight)`` or the gate reordering of an LSTM's weights as nodes when constant folding is off):
    in generated code the layer owns the computed weight. Rank-0 initializers are constants (numbers in the code),
    not ``Param`` fields. Returns ``(weights, constants)`` as used by the graph.
    """
    program = module.program
    graph = program.graph
    weights = {name: p.val().to_data() for name, p in module.weights.items() if isinstance(p.val(), Tensor)}
    constants = dict(program.constants)
    merged = {**constants, **weights}
    program.constants = merged
    try:
        fold_constants(graph, merged, Context(program, host_device(), host_device()))
    finally:
        program.constants = constants
    remove_dead_nodes(graph)
    used = {i for n in graph.nodes for i in n.inputs if i} | {o.name for o in graph.outputs}
    used |= {name for n in graph.nodes for sub in n.subgraphs() for name in sub.outer}  # read by a body only
    derived = {k for k, v in merged.items() if k not in constants and k not in weights and v.dtype.is_float}
    # a rank-0 initializer is a constant of the code (the dynamo exporter stores ``sqrt(d)`` and ``1.0`` so)
    new_weights = {k: v for k, v in merged.items() if k in used and (k in weights or k in derived) and v.shape}
    new_constants = {k: v for k, v in merged.items() if k in used and k not in new_weights}
    return new_weights, new_constants


def ir_text(graph: Graph) -> str:
    """The IR as text: one line per node, ``outputs = Op[attrs](inputs)`` with inferred types."""
    def desc(name: str) -> str:
        info = graph.value_info.get(name) or next((v for v in (*graph.inputs, *graph.outputs) if v.name == name),
                                                  None)
        return f"{name}: {info.describe().split(': ', 1)[1]}" if info is not None else name

    lines = [f"graph {graph.name}", "inputs:"] + [f"  {v.describe()}" for v in graph.inputs]
    lines += ["initializers:"] + [f"  {k}: {d.dtype}{list(d.shape)}" for k, d in graph.initializers.items()]
    lines.append("nodes:")
    for n in graph.nodes:
        attrs = ", ".join(f"{k}={v!r}" for k, v in n.attrs.items() if not hasattr(v, "nodes"))
        lines.append(f"  [{n.name}] {', '.join(desc(o) for o in n.outputs)} = {n.op_type}[{attrs}]"
                     f"({', '.join(n.inputs)})")
    lines += ["outputs:"] + [f"  {v.describe()}" for v in graph.outputs]
    return "\n".join(lines) + "\n"


class ModelGen:
    """ONNX model -> an Ember Python module and its weights record (Burn's ``ModelGen``, same builder names).

    ::

        ModelGen().input("resnet18.onnx").out_dir("resnet/").run()
        # resnet/model.py (class Model, ModelConfig) and resnet/model.mpk

    ``model.py`` holds a ``Module`` whose fields are Ember layers recognised in the graph (``Conv1d/2d/3d``,
    ``ConvTranspose*``, ``Linear`` from ``Gemm`` or ``MatMul`` + ``Add``, ``BatchNorm``, ``LayerNorm``,
    ``GroupNorm``, ``InstanceNorm``, ``Embedding``, pooling, ``Dropout``, activations, ``Lstm``/``Gru``),
    ``forward`` as straight-line tensor code with the shapes in its docstring, ``from_record(path, device)``,
    and a ``@config`` class whose ``init(device)`` builds the network with fresh weights. The code imports only
    Ember and runs on every backend, under ``Autodiff`` and ``ember_jax.jit``.

    Raises (from :meth:`run`):
        ModelGenError: no input set, an unknown record type, or a model the generator cannot write (every
            unsupported operator listed; the runtime ``load_model`` may still run it).
    """

    def __init__(self) -> None:
        self._input: Path | None = None
        self._out_dir: Path | None = None
        self._record_type = "mpk"
        self._half = False
        self._development = False
        self._class_name = "Model"

    def input(self, path: str | os.PathLike[str]) -> ModelGen:
        """The ``.onnx`` file to convert."""
        self._input = Path(path)
        return self

    def out_dir(self, path: str | os.PathLike[str]) -> ModelGen:
        """Where ``model.py`` and the record go (created if missing; default: the input's folder)."""
        self._out_dir = Path(path)
        return self

    def record_type(self, kind: str) -> ModelGen:
        """The weights file format: ``"mpk"`` (default), ``"mpk.gz"``, ``"bin"``, ``"bin.gz"``, ``"json"``,
        ``"json.gz"`` or ``"safetensors"``."""
        check_record_type(kind)
        self._record_type = kind
        return self

    def half_precision(self, half: bool) -> ModelGen:
        """Store float weights as float16 (``HalfPrecisionSettings``; half the file size)."""
        self._half = bool(half)
        return self

    def development(self, dev: bool) -> ModelGen:
        """Also write ``model.ir.txt``, the IR the code was generated from, for debugging."""
        self._development = bool(dev)
        return self

    def class_name(self, name: str) -> ModelGen:
        """The generated module's class name (default ``Model``; the config is ``<name>Config``)."""
        check_class_name(name)
        self._class_name = name
        return self

    def run(self) -> Path:
        """Generate. Returns the path of ``model.py``.

        The record is saved from the generation state (:func:`._weights.save_weights`): ``model.py`` is written,
        never imported or run.

        Raises:
            ModelGenError: see the class docstring.
            OnnxImportError: the model cannot be read.
        """
        if self._input is None:
            raise ModelGenError("ModelGen: no input; call .input('model.onnx') before .run().")
        out = self._out_dir or self._input.parent
        record_file = f"model.{self._record_type}"
        made = generate(self._input, class_name=self._class_name, record_file=record_file,
                        record_type=self._record_type, half=self._half, source_name=self._input.name)
        out.mkdir(parents=True, exist_ok=True)  # only once the model is known to generate (DESIGN §11)
        py = out / "model.py"
        with host_override(made.host or host_device()):
            save_weights(made.gen, self._class_name, out / record_file, self._record_type, self._half, str(py))
        if self._development:
            _write(out / "model.ir.txt", ir_text(made.module.program.graph))
        _write(py, made.source)  # last: a model.py on disk has its record beside it
        return py


def _write(path: Path, text: str) -> None:
    from ember.record import atomic_write

    atomic_write(path, lambda f: f.write(text.encode()))


def source_key_remap(model: Any) -> list[tuple[str, str]]:
    """Key remaps that give a generated module's weights the names they had in the source model, for
    :func:`ember_import.save_pytorch` (``key_remap=``): each field ``a_b_c`` becomes ``a.b.c`` unless the
    generated file's ``SOURCE_NAMES`` says otherwise. Meaningful when the exporter kept the names
    (``torch.onnx.export(..., do_constant_folding=False)``)."""
    explicit: dict[str, str] = getattr(sys.modules.get(type(model).__module__), "SOURCE_NAMES", {})
    remaps = []
    for name in getattr(type(model), "__annotations__", {}):
        src = explicit.get(name, name.replace("_", "."))
        if src != name:  # the source name is data: escaped in the pattern and in the replacement
            remaps.append((rf"^{re.escape(name)}\.", f"{src}.".replace("\\", "\\\\")))
    return remaps
