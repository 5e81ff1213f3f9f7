"""``load_model`` and ``OnnxModule``: an ONNX model as a native, trainable Ember module."""

from __future__ import annotations

import os
from typing import Any

from ember import DType, Tensor, TensorData
from ember.backend import Device
from ember.module import Module, Param, ParamId

from ._budget import default_max_tensor_bytes
from ._context import Context
from ._errors import OnnxImportError
from ._interpret import run_graph
from ._ir import Graph, ValueInfo
from ._parse import read_model
from ._passes import fold_constants, remove_dead_nodes
from ._program import Program, host_device
from ._qdq import DOMAIN
from ._quantized_graph import recognise_quantized

__all__ = ["OnnxModule", "load_model"]


class OnnxModule(Module):
    """An imported ONNX model: Ember tensor ops on Ember parameters.

    Float initializers are :class:`~ember.module.Param`\\ s keyed by their ONNX names (``weights["conv1.weight"]``,
    ``ParamId`` derived from the name), so the model trains, saves and loads like any module; the int8 weights of
    quantized patterns are ``Param``\\ s holding :class:`ember.quantization.QuantizedTensor`\\ s (integers and
    scales in the record); other integer and bool initializers and folded values are constants of the
    :class:`~._program.Program` (a plain field, shared by every copy of the module).

    Attributes:
        weights: ONNX initializer name -> parameter (named ``weights``: ``Module.params()`` lists every ``Param``).
        program: the graph, opsets, converters and constants (static).
        input_names: the graph's inputs, in the order :meth:`forward` takes them.
        output_names: the graph's outputs, in the order :meth:`forward` returns them.
        opset: the model's ``ai.onnx`` opset version.
    """

    weights: dict[str, Param]
    program: Program
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    opset: int

    def forward(self, *inputs: Any) -> Any:
        """Run the model.

        Args:
            inputs: Ember tensors for the graph's inputs, in :attr:`input_names` order (sequence inputs are
                lists of tensors; ``None`` for an omitted optional input). Each is cast to the element type
                the model declares for it when the kinds agree (float64 data into a float32 input).

        Returns:
            The single output as a Tensor, several as a tuple, in :attr:`output_names` order, on the device of
            the inputs (or of the parameters when there are no inputs).

        Raises:
            OnnxImportError: wrong number of inputs, an input of the wrong kind (Int where Float is declared),
                an input whose shape disagrees with the declared one (its rank, a fixed dim, or a symbolic dim
                such as ``batch`` that two inputs give different sizes; ``?`` dims take any size), a tensor
                above ``max_tensor_bytes`` planned by a node, or a node that fails (the message names it and its
                input shapes).
        """
        graph = self.program.graph
        if len(inputs) != len(graph.inputs):
            raise OnnxImportError(
                f"{self.program.source}: forward: the model takes {len(graph.inputs)} input(s) "
                f"({', '.join(self.input_names)}), got {len(inputs)}."
            )
        host = host_device()
        main = _main_device(inputs, self.weights, host)
        ctx = Context(self.program, main, host)
        env: dict[str, Any] = self.program.host_constants()
        for name, p in self.weights.items():
            env[name] = p.val()
        symbols: dict[str, tuple[int, str]] = {}
        for info, value in zip(graph.inputs, inputs):
            env[info.name] = _check_input(info, value, symbols, self.program.source)
        outs = run_graph(graph, env, ctx)
        outs = [_out(o, ctx) for o in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)


def _main_device(inputs: tuple[Any, ...], params: dict[str, Param], host: Device) -> Device:
    for x in inputs:
        if isinstance(x, Tensor):
            return x.device
        if isinstance(x, list) and x and isinstance(x[0], Tensor):
            return x[0].device
    for p in params.values():
        return p.val().device
    return host


def _check_shape(info: ValueInfo, shape: list[int], symbols: dict[str, tuple[int, str]], source: str) -> None:
    """``shape`` against the declared dims: the rank, every fixed dim, and one size per symbolic dim across
    the call's inputs (``batch`` is the same in ``x`` and ``mask``); unknown dims (``?``) take any size."""
    declared = info.shape
    if declared is None:
        return
    if len(shape) != len(declared):
        raise OnnxImportError(
            f"{source}: forward: input {info.name!r} is declared with shape {_dims(declared)} (rank "
            f"{len(declared)}), got shape {shape} (rank {len(shape)}); pass a rank-{len(declared)} tensor."
        )
    for axis, (want, have) in enumerate(zip(declared, shape)):
        if isinstance(want, int) and want >= 0 and want != have:
            raise OnnxImportError(
                f"{source}: forward: input {info.name!r} is declared with shape {_dims(declared)}, got shape "
                f"{shape}: dim {axis} must be {want}, found {have}."
            )
        if isinstance(want, str) and want:
            seen = symbols.setdefault(want, (have, f"{info.name!r} dim {axis}"))
            if seen[0] != have:
                raise OnnxImportError(
                    f"{source}: forward: input {info.name!r} is declared with shape {_dims(declared)}, got shape "
                    f"{shape}: dim {axis} is {want!r}, which is {seen[0]} at {seen[1]} but {have} here; the "
                    f"inputs must agree on {want!r}."
                )


def _dims(declared: tuple[Any, ...]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in declared) + "]"


def _check_input(info: ValueInfo, value: Any, symbols: dict[str, tuple[int, str]] | None = None,
                 source: str = "<model>") -> Any:
    if value is None or isinstance(value, list) or info.kind != "tensor":
        return value
    if not isinstance(value, Tensor):
        raise OnnxImportError(
            f"{source}: forward: input {info.name!r} must be an ember Tensor, got {type(value).__name__}; build it "
            "with Tensor.from_data(array, device)."
        )
    _check_shape(info, list(value.shape), {} if symbols is None else symbols, source)
    want = info.dtype
    if want is None or value.dtype is want:
        return value
    have_kind = value.kind.name.lower() if hasattr(value.kind, "name") else str(value.kind).lower()
    want_kind = "float" if want.is_float else "bool" if want is DType.BOOL else "int"
    if want_kind not in have_kind:
        raise OnnxImportError(
            f"{source}: forward: input {info.name!r} is declared {info.describe()}, got a {value.kind} tensor of "
            f"{value.dtype}; convert it with .float(), .int() or .bool()."
        )
    if want in value.backend.supported_dtypes:
        return value.cast(want)
    return value


def _out(v: Any, ctx: Context) -> Any:
    if isinstance(v, Tensor) and v.device is ctx.host and ctx.main is not ctx.host:
        return ctx.to_main(v)
    if isinstance(v, list):
        return [_out(x, ctx) for x in v]
    return v


def _static_only(graph: Graph, program: Program) -> set[str]:
    """Names used only as static inputs (shapes, scales, axes): they stay constants, not parameters."""
    static_uses: dict[str, bool] = {}
    outer: list[str] = []
    for node in graph.walk():
        conv = program.converters.get(id(node))
        static = conv.static if conv is not None else ()
        for i, name in enumerate(node.inputs):
            if name:
                static_uses[name] = static_uses.get(name, True) and i in static
        for sub in node.subgraphs():
            outer.extend(sub.outer)
    for name in outer:
        static_uses[name] = False
    for o in graph.outputs:
        static_uses[o.name] = False
    return {n for n, only in static_uses.items() if only}


def load_model(
    model: str | os.PathLike[str] | bytes | Any, device: Device, *, opset: int | None = None,
    fold: bool = True, max_tensor_bytes: int | None = None,
) -> OnnxModule:
    """Import an ONNX model as an :class:`OnnxModule` on ``device``.

    Args:
        model: a path to an ``.onnx`` file (external-data files are read from its folder only), its bytes or
            an ``onnx.ModelProto``.
        device: where the parameters live (any backend; an Autodiff device to train).
        opset: convert the model to this ``ai.onnx`` opset first (``onnx.version_converter``); by default the
            model's own opset is used.
        fold: run constant folding at import (default ``True``).
        max_tensor_bytes: the memory budget (the ``.pt`` reader's name and default: ``max(file size, 1 GiB)``):
            the most bytes one value folded at import may take, and one tensor that an op sizes from values
            (``ConstantOfShape``, ``Expand``, ``Tile``, ``Range``, ``Resize``, ``Pad``, ``OneHot``...) may take,
            at import and when the model runs (see :mod:`~._budget`). Raise it for a trusted model that needs
            more.

    Returns:
        The module; ``module(*inputs)`` runs it. Float initializers become ``Param``s (``ParamId`` = the
        initializer's name) in their own float type where the backend holds it, else in the backend's float
        type; integer and bool initializers, and float ones read only as shapes or counts, are constants.
        Quantized weights (the int8/uint8 weight of a QDQ ``MatMul``/``Gemm``/``Conv`` or of a
        ``QLinearMatMul``/``QLinearConv``, see ``_quantized_graph.py``) become ``Param``s holding an
        :class:`ember.quantization.QuantizedTensor` (``require_grad=False``, ``ParamId`` = the initializer's name),
        stored as integers and scales in records.
        The pipeline follows Burn's onnx-ir: parse and check (``onnx``), typed IR, quantized-pattern recognition,
        constant folding, dead-node removal, then one converter per node (``ember_import/onnx/ops``).

    Raises:
        OnnxImportError: unreadable or malformed file (see :func:`~._parse.read_model`), operators without
            a converter (all listed at once), or a value folding would materialise above ``max_tensor_bytes``
            (the message names the file, the node, its output, the shape and the bytes).
    """
    parsed = read_model(model, opset=opset)
    graph = parsed.graph
    limit = default_max_tensor_bytes(parsed.file_size) if max_tensor_bytes is None else int(max_tensor_bytes)
    if limit < 0:
        raise ValueError(f"load_model: max_tensor_bytes must be >= 0, got {max_tensor_bytes}.")
    opsets = parsed.opsets
    qweights = recognise_quantized(graph)  # before folding, which would turn int8 weights into float32 constants
    if qweights:
        opsets = {**opsets, DOMAIN: 1}
    program = Program(graph, opsets, {}, source=parsed.source, max_tensor_bytes=limit)
    static_only = _static_only(graph, program)
    params: dict[str, Param] = {}
    for name, data in graph.initializers.items():
        if data.dtype.is_float and name not in static_only:
            params[name] = Param(Tensor.from_data(data, device, dtype=_param_dtype(data, device)), id=ParamId(name))
        else:
            program.constants[name] = data
    for name, qw in qweights.items():  # int8 weights and their scales, stored as they are in records
        params[name] = Param(qw.tensor(device), id=ParamId(name), require_grad=False)
    host = host_device()
    if fold:
        ctx = Context(program, host, host)
        fold_constants(graph, program.constants, ctx)
    remove_dead_nodes(graph)
    used = {o.name for o in graph.outputs}
    for node in graph.walk():
        used.update(node.inputs)
        for sub in node.subgraphs():
            used.update(sub.outer)
    program.constants = {k: v for k, v in program.constants.items() if k in used}
    program.drop_tensors()
    params = {k: v for k, v in params.items() if k in used}
    return OnnxModule(
        weights=params,
        program=program,
        input_names=tuple(i.name for i in graph.inputs),
        output_names=tuple(o.name for o in graph.outputs),
        opset=parsed.opsets.get("ai.onnx", 1),
    )


def _param_dtype(data: TensorData, device: Device) -> DType:
    return data.dtype if data.dtype in device.backend.supported_dtypes else device.backend.float_dtype
