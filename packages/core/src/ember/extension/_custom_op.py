"""``CustomOp``: a user-defined op with a composite default, per-backend kernels and an optional backward.

Dispatch of ``op(*tensors, **static)`` on a device of backend ``B``:

- ``B`` is not an autodiff backend: the kernel registered for ``B.name`` on the tensors' primitives, else the
  default on the tensors, else :class:`CustomOpError`.
- ``B`` is ``Autodiff(inner)`` and no Float input is tracked: as above on ``inner`` (the kernel runs), the result
  wrapped untracked.
- a Float input is tracked and the op has a backward rule: the forward as above on ``inner``, and one graph node
  over the tracked inputs whose rule calls the user's backward with Tensors on the inner device (the rule table is
  not touched: the node carries its own rule, as the attention op's does).
- the same with a backward kernel for the inner backend (:meth:`CustomOp.register_backward_kernel`): the node's
  rule calls it on the inner primitives.
- a Float input is tracked and there is no backward rule (nor backward kernel): the default runs under
  ``Autodiff`` (its recorded ops give the derived backward); a kernel is then not used for the forward.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._errors import EmberError, KindError
from .._kind import Bool, Float, Int, Kind
from ..autodiff._graph import AutodiffPrimitive as AP
from ..autodiff._record import _node
from ..tensor import Tensor

_tensor = Tensor  # Tensor(primitive, device, kind)
_NONE: dict[str, Any] = {}

__all__ = ["BackwardContext", "CustomOp", "CustomOpError", "custom_op", "register_kernel"]

_KINDS = {"float": Float, "int": Int, "bool": Bool}

#: op name -> backend name -> kernel; shared by the ops and :func:`register_kernel` (order does not matter)
_KERNELS: dict[str, dict[str, Callable[..., Any]]] = {}
#: op name -> backend name -> backward kernel (:meth:`CustomOp.register_backward_kernel`)
_BACKWARD_KERNELS: dict[str, dict[str, Callable[..., Any]]] = {}


class CustomOpError(EmberError, RuntimeError):
    """A custom op cannot run: no kernel and no default for a backend, a kernel that is not traceable under a
    compiled step, a wrong argument, a backward rule returning the wrong number of gradients."""


def _kind(k: Any) -> Kind:
    if isinstance(k, Kind):
        return k
    if isinstance(k, str) and k.lower() in _KINDS:
        return _KINDS[k.lower()]
    raise CustomOpError(f"custom_op: an input kind is ember.Float, ember.Int or ember.Bool (or 'float', 'int', "
                        f"'bool'), got {k!r}.")


def register_kernel(op: str | CustomOp, backend: str, fn: Callable[..., Any] | None = None) -> Any:
    """Register ``fn`` as the kernel of the custom op named ``op`` on the backend named ``backend``.

    The op need not exist yet (a backend's plugin can register a kernel for an op a library defines later).
    ``fn(*primitives, **static)`` takes the backend's primitives of the tensor inputs (in order) and the static
    arguments, and returns the primitive of the Float result. Usable as a decorator when ``fn`` is omitted.
    """
    name = op.name if isinstance(op, CustomOp) else op
    if not isinstance(name, str) or not isinstance(backend, str):
        raise CustomOpError(f"register_kernel: op and backend are names (str), got {op!r}, {backend!r}.")

    def deco(f: Callable[..., Any]) -> Callable[..., Any]:
        if not callable(f):
            raise CustomOpError(f"register_kernel({name!r}, {backend!r}): the kernel must be callable, got {f!r}.")
        _KERNELS.setdefault(name, {})[backend] = f
        return f

    return deco if fn is None else deco(fn)


class BackwardContext:
    """What a backward rule receives besides the output gradient: ``inputs`` (the tensor inputs, on the inner
    device, constants), ``output`` (the forward's result, same) and ``static`` (the static arguments)."""

    __slots__ = ("inputs", "output", "static")

    def __init__(self, inputs: tuple[Any, ...], output: Any, static: dict[str, Any]) -> None:
        self.inputs = inputs
        self.output = output
        self.static = static

    def __repr__(self) -> str:
        return f"BackwardContext({len(self.inputs)} inputs, static={self.static!r})"


def _named_rule(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def rule(B: Any, g: Any, saved: Any, parents: tuple[Any, ...]) -> Any:
        return fn(B, g, saved, parents)

    rule.__name__ = name
    return rule


class CustomOp:
    """A user-defined op: see :func:`custom_op`. Call it as ``op(*tensors, **static)``."""

    def __init__(self, name: str, inputs: Sequence[Any], static: Iterable[str] = (),
                 default: Callable[..., Any] | None = None) -> None:
        if not isinstance(name, str) or not name:
            raise CustomOpError(f"custom_op: the name is a non-empty str, got {name!r}.")
        self.name = name
        self.inputs: tuple[Kind, ...] = tuple(_kind(k) for k in inputs)
        if not self.inputs:
            raise CustomOpError(f"custom_op {name!r}: declare at least one tensor input (inputs=(ember.Float, ...)).")
        self.static: tuple[str, ...] = tuple(static)
        self.default = default
        self.backward_fn: Callable[..., Any] | None = None
        self._static_keys = frozenset(self.static)
        rule = self._backward  # one bound rule per op: nodes hold it, the graph stays free of cycles
        self._rule = _named_rule(rule, f"custom_op:{name}")
        self.__doc__ = getattr(default, "__doc__", None)
        self.__name__ = getattr(default, "__name__", name)

    def __repr__(self) -> str:
        kinds = ", ".join(k.name for k in self.inputs)
        return (f"CustomOp({self.name!r}, inputs=({kinds}), static={self.static!r}, kernels={self.kernels()}, "
                f"default={self.default is not None}, backward={self.backward_fn is not None})")

    # ------------------------------------------------------------------ registration
    def register_kernel(self, backend: str, fn: Callable[..., Any] | None = None) -> Any:
        """Register the kernel of this op for the backend named ``backend`` (``"numpy"``, ``"torch"``,
        ``"jax"``, a third party's name): ``fn(*primitives, **static) -> primitive``. A decorator without ``fn``."""
        return register_kernel(self.name, backend, fn)

    def register_backward(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Set the backward rule under ``Autodiff``: ``fn(ctx, grad) -> gradients``, one per tensor input (a
        Tensor on the inner device, or ``None``); ``ctx`` is a :class:`BackwardContext`. A decorator."""
        if not callable(fn):
            raise CustomOpError(f"custom op {self.name!r}: the backward rule must be callable, got {fn!r}.")
        self.backward_fn = fn
        return fn

    def register_backward_kernel(self, backend: str, fn: Callable[..., Any] | None = None) -> Any:
        """Register a backward kernel for the backend named ``backend``, used under ``Autodiff`` in place of the
        rule of :meth:`register_backward` (which the op needs too: it serves the other backends):
        ``fn(inputs, output, grad, **static) -> gradients`` on primitives (``inputs`` a tuple, ``None`` for an
        input without gradient). A decorator without ``fn``."""
        if not isinstance(backend, str):
            raise CustomOpError(f"custom op {self.name!r}: the backend is a name (str), got {backend!r}.")

        def deco(f: Callable[..., Any]) -> Callable[..., Any]:
            if not callable(f):
                raise CustomOpError(f"custom op {self.name!r}: the backward kernel must be callable, got {f!r}.")
            _BACKWARD_KERNELS.setdefault(self.name, {})[backend] = f
            return f

        return deco if fn is None else deco(fn)

    def kernels(self) -> list[str]:
        """The names of the backends this op has a kernel for."""
        return sorted(_KERNELS.get(self.name, {}))

    def kernel(self, backend: str) -> Callable[..., Any] | None:
        """The kernel registered for the backend named ``backend``, or ``None``."""
        return _KERNELS.get(self.name, {}).get(backend)

    # ------------------------------------------------------------------ calls
    def _check(self, tensors: tuple[Any, ...], static: dict[str, Any]) -> Any:
        if len(tensors) != len(self.inputs):
            raise CustomOpError(f"custom op {self.name!r}: expected {len(self.inputs)} tensor inputs "
                                f"({', '.join(k.name for k in self.inputs)}), got {len(tensors)}.")
        extra = sorted(set(static) - set(self.static))
        missing = sorted(set(self.static) - set(static))
        if extra or missing:
            raise CustomOpError(f"custom op {self.name!r}: static arguments are {list(self.static)}; "
                                f"unexpected {extra}, missing {missing}.")
        device = None
        for i, (t, k) in enumerate(zip(tensors, self.inputs)):
            if not isinstance(t, Tensor):
                raise CustomOpError(f"custom op {self.name!r}: input {i} is a Tensor, got {type(t).__name__}.")
            if t.kind is not k:
                raise KindError(f"custom op {self.name!r}: input {i} must be a {k.name} tensor, got {t.kind.name}.")
            if device is None:
                device = t.device
            elif t.device is not device:
                raise CustomOpError(f"custom op {self.name!r}: inputs on different devices: {device} and {t.device} "
                                    f"(input {i}); move them with .to_device().")
        return device

    def run_kernel(self, backend_name: str, prims: Sequence[Any], static: dict[str, Any]) -> Any:
        """Call the kernel of ``backend_name`` on primitives (raises if there is none, or if it cannot trace)."""
        fn = self.kernel(backend_name)
        if fn is None:
            raise CustomOpError(f"custom op {self.name!r} has no kernel for the {backend_name!r} backend "
                                f"(kernels: {self.kernels()}).")
        return self._call_kernel(fn, backend_name, prims, static)

    def _call_kernel(self, fn: Callable[..., Any], backend_name: str, prims: Sequence[Any],
                     static: dict[str, Any]) -> Any:
        try:
            return fn(*prims, **static)
        except Exception as e:
            cls = type(e)
            if cls.__module__.startswith("jax") and ("Tracer" in cls.__name__ or "Concretization" in cls.__name__):
                raise CustomOpError(
                    f"custom op {self.name!r}: the {backend_name!r} kernel is not traceable: it read a traced value "
                    f"as a concrete array (numpy code under ember_jax.jit / Backend.compile). Write the kernel with "
                    f"jax.numpy / lax (or a Pallas kernel), or call the op outside the compiled step. ({cls.__name__})"
                ) from e
            raise

    def _forward_plain(self, tensors: Sequence[Any] | None, prims: Sequence[Any], device: Any,
                       static: dict[str, Any]) -> Any:
        """The result on a non-autodiff ``device``: the kernel on ``prims``, else the default on ``tensors`` (built
        from ``prims`` when ``None``)."""
        name = device.backend.name
        kernel = _KERNELS.get(self.name, _NONE).get(name)
        if kernel is not None:
            return _tensor(self._call_kernel(kernel, name, prims, static), device, Float)
        if self.default is None:
            raise CustomOpError(
                f"custom op {self.name!r} has no kernel for the {name!r} backend and no default; register one with "
                f"@{self.__name__}.register_kernel({name!r}) or give the op a default written with Ember tensor ops "
                f"(kernels: {self.kernels()})."
            )
        if tensors is None:
            tensors = [_tensor(p, device, k) for p, k in zip(prims, self.inputs)]
        out = self.default(*tensors, **static)
        if not isinstance(out, Tensor) or out.kind is not Float:
            raise CustomOpError(f"custom op {self.name!r}: the default must return a Float Tensor, got {out!r}.")
        return out

    def __call__(self, *tensors: Any, **static: Any) -> Any:
        kinds = self.inputs
        if len(tensors) != len(kinds) or static.keys() != self._static_keys:
            self._check(tensors, static)  # raises
        device: Any = getattr(tensors[0], "device", None)
        for t, k in zip(tensors, kinds):
            if t.__class__ is not Tensor or t.kind is not k or t.device is not device:
                device = self._check(tensors, static)  # raises, or accepts a Tensor subclass
                break
        if not device.backend.is_autodiff:
            return self._forward_plain(tensors, [t.primitive for t in tensors], device, static)
        inner = device.inner
        raw, parents, tracked = [], [], False
        for t in tensors:
            p = t.primitive
            if p.__class__ is AP:
                raw.append(p.p)
                parents.append(p.node)
                tracked = tracked or p.node is not None
            else:
                raw.append(p)
                parents.append(None)
        if tracked and self.backward_fn is None and inner.backend.name not in _BACKWARD_KERNELS.get(self.name, _NONE):
            if self.default is None:
                raise CustomOpError(
                    f"custom op {self.name!r}: under Autodiff with tracked inputs it needs a backward rule "
                    f"(@{self.__name__}.register_backward) or a default to derive one from."
                )
            return self._forward_plain(tensors, raw, device, static)  # the default's recorded ops
        out = self._forward_plain(None, raw, inner, static).primitive
        if not tracked:
            return _tensor(AP(out, None), device, Float)
        return _tensor(AP(out, _node(tuple(parents), self._rule, (inner, raw, out, static))), device, Float)

    def _backward(self, B: Any, g: Any, saved: Any, parents: tuple[Any, ...]) -> Any:
        """The node's rule: the inner backend's backward kernel, else the backward rule on Tensors."""
        name = self.name
        inner, raw, out, static = saved
        kernel = _BACKWARD_KERNELS.get(name, _NONE).get(B.name)
        if kernel is not None:
            grads = tuple(kernel(tuple(raw), out, g, **static))
            if len(grads) != len(parents):
                raise CustomOpError(f"custom op {name!r}: the {B.name!r} backward kernel returned {len(grads)} "
                                    f"gradients for {len(parents)} tensor inputs.")
            return tuple(None if p is None else gr for gr, p in zip(grads, parents))
        fn = self.backward_fn
        if fn is None:
            raise CustomOpError(f"custom op {name!r} has a backward kernel for {sorted(_BACKWARD_KERNELS[name])} "
                                f"but none for {B.name!r}, and no backward rule (register_backward).")
        ctx = BackwardContext(tuple(_tensor(r, inner, k) for r, k in zip(raw, self.inputs)),
                              _tensor(out, inner, Float), static)
        grads = fn(ctx, _tensor(g, inner, Float))
        if isinstance(grads, Tensor) or grads is None:
            grads = (grads,)
        grads = tuple(grads)
        if len(grads) != len(parents):
            raise CustomOpError(f"custom op {name!r}: the backward rule returned {len(grads)} gradients for "
                                f"{len(parents)} tensor inputs (one each, None where there is none).")
        res: list[Any] = []
        for i, (gr, p, r) in enumerate(zip(grads, parents, raw)):
            if p is None or gr is None:
                res.append(None)
                continue
            if tuple(gr.shape) != tuple(r.shape):
                raise CustomOpError(f"custom op {name!r}: the backward rule's gradient {i} has shape "
                                    f"{list(gr.shape)}, the input {list(r.shape)}.")
            res.append(gr.primitive)
        return tuple(res)


def custom_op(
    name: str, *, inputs: Sequence[Any], static: Iterable[str] = ()
) -> Callable[[Callable[..., Any] | None], CustomOp]:
    """Declare a custom op named ``name`` whose default is the decorated function.

    Args:
        name: a unique name (kernels are registered under it).
        inputs: the kinds of the tensor inputs, in order (``ember.Float``, ``ember.Int``, ``ember.Bool`` or
            ``"float"``, ...); the result is one Float tensor.
        static: the names of the static (keyword-only, non-tensor) arguments, passed to the default, the kernels
            and the backward rule (``ctx.static``).

    The decorated function ``default(*tensors, **static) -> Tensor`` is written with Ember tensor ops; pass
    ``None`` as the function (``custom_op(...)(None)``) for an op that has kernels only.
    """

    kinds = tuple(_kind(k) for k in inputs)  # checked at declaration, not at decoration
    static = tuple(static)

    def deco(fn: Callable[..., Any] | None) -> CustomOp:
        return CustomOp(name, kinds, static, fn)

    return deco
