"""``Context``: what a converter may ask of the importer while it runs a node."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ember import DType, Tensor
from ember.backend import Device

from ._errors import OnnxImportError
from ._interpret import run_graph

if TYPE_CHECKING:
    from ._ir import Graph, Node
    from ._program import Program

__all__ = ["Context"]


class Context:
    """The state a converter sees: opsets, devices, the node being run and host reads (it implements
    :class:`~._state.RunState`, what the interpreter and the memory budget read).

    Attributes:
        opsets: domain -> opset version (``"ai.onnx"`` for the default domain).
        main: the compute device (where graph inputs and parameters live).
        host: the host device (Ember's numpy backend) where constants and shape arithmetic run.
        device: the device this node computes on: ``main`` when any of its (non-static) inputs is there,
            else ``host``. Converters create new tensors here (``Tensor.zeros(shape, ctx.device)``).
        node: the node being converted.
    """

    __slots__ = ("opsets", "main", "host", "device", "node", "env", "program")

    def __init__(self, program: Program, main: Device, host: Device) -> None:
        self.program = program
        self.opsets = program.opsets
        self.main = main
        self.host = host
        self.device: Device = main
        self.node: Node | None = None
        self.env: dict[str, Any] = {}

    @property
    def opset(self) -> int:
        """The opset version of the default domain (``ai.onnx``)."""
        return self.opsets.get("ai.onnx", 1)

    def opset_of(self, domain: str) -> int:
        """The model's opset version of ``domain`` (0 when the model does not import it)."""
        return self.opsets.get("ai.onnx" if domain in ("", "ai.onnx") else domain, 0)

    # ------------------------------------------------------------------ host reads
    def _where(self) -> str:
        n = self.node
        return f"{n.op_type} node {n.name!r}" if n is not None else "ONNX graph"

    def values(self, t: Tensor | None) -> list[Any] | None:
        """The elements of ``t`` as a flat Python list (``None`` stays ``None``): a host read.

        On the host device this is free; on a compute device it synchronizes, and under
        ``ember_jax.jit`` it is refused.

        Raises:
            OnnxImportError: the value is traced (data-dependent under a compiled step).
        """
        if t is None:
            return None
        try:
            flat = t.reshape([-1]) if t.rank != 1 else t
            out = flat.tolist()
        except Exception as exc:
            if "trac" in type(exc).__name__.lower() or "trac" in str(exc).lower() or "concret" in str(exc).lower():
                raise OnnxImportError(
                    f"{self._where()}: this input must be known when the step is traced (a shape, an axis list, a "
                    "count), but it is computed from the data. Run the model eagerly, or re-export it with static "
                    "shapes."
                ) from None
            raise
        return list(out)

    def example(self, t: Tensor | None, value: Any) -> None:
        """Name ``value`` (Python ints or a list of them, as ``t``'s data) as a value of the input ``t`` that is
        consistent with the node's other inputs (``AffineGrid``'s batch size is ``theta``'s), before a host read
        of ``t``. The runtime reads the real data and ignores it; a ModelGen trace, which runs a converter on
        stand-in values of the graph inputs it reads, takes ``value`` as that stand-in (its generated code reads
        ``t`` when it runs, whatever the stand-in was)."""

    def ints(self, t: Tensor | None) -> list[int] | None:
        """The elements of an Int tensor as Python ints (``None`` stays ``None``); see :meth:`values`."""
        v = self.values(t)
        return None if v is None else [int(x) for x in v]

    def floats(self, t: Tensor | None) -> list[float] | None:
        """The elements as Python floats (``None`` stays ``None``); see :meth:`values`."""
        v = self.values(t)
        return None if v is None else [float(x) for x in v]

    def scalar(self, t: Tensor | None, default: Any = None) -> Any:
        """The single element of ``t`` as a Python number (``default`` when ``t`` is ``None``).

        Raises:
            OnnxImportError: ``t`` has more than one element.
        """
        if t is None:
            return default
        v = self.values(t)
        assert v is not None
        if len(v) != 1:
            raise OnnxImportError(f"{self._where()}: expected a scalar input, got shape {list(t.shape)}.")
        return v[0]

    def int_scalar(self, t: Tensor | None, default: Any = None) -> Any:
        """:meth:`scalar` as an ``int`` (a count, an axis, a diagonal); ``default`` when ``t`` is ``None``.
        ModelGen's context keeps a value known only when generated code runs as such (an ``int`` subclass)."""
        v = self.scalar(t, default)
        return v if v is None else int(v)

    def float_scalar(self, t: Tensor | None, default: Any = None) -> Any:
        """:meth:`scalar` as a ``float`` (a ratio, a threshold); see :meth:`int_scalar`."""
        v = self.scalar(t, default)
        return v if v is None else float(v)

    # ------------------------------------------------------------------ creation
    def tensor(self, data: Any, dtype: DType | str, device: Device | None = None) -> Tensor:
        """A tensor of ``dtype`` holding ``data`` (nested Python lists, a scalar or ``TensorData``) on
        ``device`` (default: this node's device).

        Raises:
            DTypeError: the device's backend lacks ``dtype``; on the host (numpy, no bfloat16) the interpreter
                then runs the node again on the compute device.
        """
        return Tensor.from_data(data, device or self.device, dtype=dtype)

    def is_host(self, t: Any) -> bool:
        """Whether ``t`` is a tensor on the host device (a constant or shape arithmetic)."""
        return isinstance(t, Tensor) and t.device is self.host

    def to_main(self, t: Tensor) -> Tensor:
        """``t`` on the compute device (host constants are moved once and cached)."""
        return self.program.to_device(t, self.main)

    # ------------------------------------------------------------------ sub-graphs
    def run_subgraph(self, graph: Graph, inputs: Sequence[Any]) -> list[Any]:
        """Run a sub-graph (``If`` branch, ``Loop``/``Scan`` body) with ``inputs`` for its inputs, in the
        scope of the running graph (its outer names resolve to the values computed so far).

        Raises:
            OnnxImportError: the number of inputs differs from the sub-graph's.
        """
        if len(inputs) != len(graph.inputs):
            raise OnnxImportError(
                f"{self._where()}: sub-graph {graph.name!r} takes {len(graph.inputs)} inputs, got {len(inputs)}."
            )
        env = dict(self.env)
        for name, data in graph.initializers.items():  # a sub-graph's own constants, on the host
            env[name] = Tensor.from_data(data, self.host, dtype=data.dtype)
        for info, v in zip(graph.inputs, inputs):
            env[info.name] = v
        saved = (self.env, self.node, self.device)
        try:
            return run_graph(graph, env, self)
        finally:
            self.env, self.node, self.device = saved
