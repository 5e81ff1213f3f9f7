"""``Autodiff(inner)``: reverse-mode automatic differentiation as a backend decorator (Burn's
``Autodiff<B>``).

The autodiff backend has the inner backend's devices, dtypes and ops. On its devices, Float
tensors hold an :class:`~._graph.AutodiffPrimitive` (the inner primitive plus an optional graph
node) and their ops are this backend's; Int and Bool tensors hold plain inner primitives and their
ops are the inner backend's (``Device.ops = (autodiff, inner, inner)``).

Every primitive of the backend contract is covered, in one of these ways (:data:`HANDLED`):

- ``RULES`` (:mod:`._table`): Float results with a backward rule; the forward runs on the inner
  backend, a node is recorded when an input is tracked;
- ``DELEGATED``: results that are not Float (comparisons, ``argmax``, casts to Int ...) or data
  access: arguments unwrapped, the inner op called;
- ``CREATION``: new tensors, untracked;
- ``COMPOSITE``: the contract's default, written with other primitives and therefore
  differentiable through their rules;
- methods of the class (casts, ``detach``, devices, the autodiff API, ``batch_norm_running``'s
  constants).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._dtype import DType
from .._errors import BackendError
from ..backend._base import Backend
from ..backend._capabilities import BackendCapabilities
from ..backend._device import Device
from ..backend._mesh import DeviceMesh
from . import _rules_math, _rules_reduce, _rules_shape  # noqa: F401  (fill RULES)
from ._errors import AutodiffError
from ._gradients import Gradients
from ._graph import AutodiffPrimitive as AP
from ._graph import Leaf, Node
from ._graph import _ids as _leaf_ids
from ._graph import backward as _sweep
from ._record import make_creation, make_delegate, make_op
from ._rules_attention import ATTENTION_COMPOSITE  # fills RULES with the attention op's rule
from ._rules_module import MODULE_COMPOSITE  # fills RULES with the module ops' rules
from ._rules_norm import NORM_COMPOSITE  # fills RULES with the normalization ops' rules
from ._rules_rnn import RNN_COMPOSITE  # fills RULES with the lstm rule
from ._table import RULES

__all__ = ["Autodiff", "AutodiffDevice", "DELEGATED", "CREATION", "COMPOSITE", "HANDLED"]

_new = object.__new__

#: ops whose result is not Float, or which read data: unwrap the arguments and call the inner op
DELEGATED: frozenset[str] = frozenset({
    "equal", "not_equal", "greater", "greater_equal", "lower", "lower_equal",
    "argmax", "argmin", "argsort", "any", "all", "any_dim", "all_dim",
    "is_nan", "is_inf", "is_finite", "contains_nan", "is_close", "nonzero", "argwhere",
    "int_div", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "logical_and", "logical_or", "logical_xor", "logical_not",
    "bool_into_int", "float_into_int", "to_numpy", "dtype", "device_handle", "index_bounds",
    # quantization: Int results (ember.quantization calls them on the inner backend)
    "quantize", "int_matmul", "quantized_conv2d",
})
"""Primitives whose result is not Float, or which read data: Autodiff unwraps the arguments and calls the inner op."""
#: creation ops: the inner result, wrapped untracked when it is Float
CREATION: frozenset[str] = frozenset({
    "from_numpy", "from_dlpack", "full", "zeros", "ones", "empty", "arange", "random",
    "random_uniform", "random_normal", "int_into_float", "bool_into_float",
})
"""Creation primitives: the inner result, wrapped untracked when it is Float."""
#: contract defaults kept as they are: compositions of primitives that have rules
COMPOSITE: frozenset[str] = frozenset({
    "cast_list", "cov", "cross", "max_abs", "max_abs_dim", "check_dtype", "dtype_for", "device",
    "devices",
    # the fused optimizer updates run on the inner backend (ember.optim unwraps the parameters); under Autodiff
    # their composite defaults work too
    "fused_adam", "fused_sgd", "fused_rmsprop", "fused_lion",
    # the activations' backward primitives, which the rules call on the inner backend
    "relu_backward", "sigmoid_backward", "tanh_backward", "gelu_backward", "softmax_backward",
    "log_softmax_backward",
    # ember.quantization dequantizes on the inner backend; under Autodiff the default (cast, sub, mul) works too
    "dequantize",
}) | MODULE_COMPOSITE | NORM_COMPOSITE | RNN_COMPOSITE | ATTENTION_COMPOSITE
"""Contract defaults kept as they are: compositions of primitives that have rules."""


class AutodiffDevice(Device):
    """A device of an autodiff backend: wraps a device of the inner backend (``inner``)."""

    __slots__ = ()

    def __reduce__(self) -> Any:
        return (_restore_device, (self.inner,))


def _restore_device(inner_device: Device) -> Device:
    return Autodiff(inner_device.backend).device(inner_device.name)


# one instance per inner backend instance (backends are themselves cached by the registry)
_CACHE: dict[Backend, Autodiff] = {}


class Autodiff(Backend):
    """Reverse-mode autodiff over ``inner``, any backend (numpy, torch, jax, a third party's).

    ``Autodiff(inner)`` returns one cached instance per inner backend instance. Its devices are
    :class:`AutodiffDevice` s wrapping the inner devices (``AD.device("cpu").inner`` is
    ``inner.device("cpu")``); its dtypes are the inner backend's.

    >>> import ember
    >>> from ember import Tensor
    >>> from ember.autodiff import Autodiff
    >>> AD = Autodiff(ember.backend("numpy", float_dtype="float64"))
    >>> x = Tensor.from_floats([1.0, 2.0, 3.0], AD.device()).require_grad()
    >>> x.grad(x.powf_scalar(2.0).sum().backward()).to_data().to_numpy().tolist()
    [2.0, 4.0, 6.0]

    Raises:
        BackendError: ``inner`` is not a backend, or is itself an autodiff backend.
    """

    is_autodiff = True

    def __new__(cls, inner: Backend) -> Autodiff:
        if not isinstance(inner, Backend):
            raise BackendError(
                f"Autodiff: expected a backend (e.g. ember.backend('numpy')), got {type(inner).__name__}."
            )
        if inner.is_autodiff:
            raise BackendError(
                f"Autodiff: {inner.name!r} is already an autodiff backend; wrap the plain backend once "
                "(higher-order gradients are not supported)."
            )
        ad = _CACHE.get(inner)
        if ad is None:
            ad = super().__new__(cls)
            ad._setup(inner)
            _CACHE[inner] = ad
        return ad

    def __init__(self, inner: Backend) -> None:  # noqa: D107 - set up once in __new__
        pass

    def __getnewargs__(self) -> tuple[Any, ...]:
        return (self.inner_backend,)

    def __reduce__(self) -> Any:
        return (Autodiff, (self.inner_backend,))

    def _setup(self, inner: Backend) -> None:
        self.inner_backend = inner
        self.name = f"autodiff({inner.name})"  # type: ignore[misc]
        self.supported_dtypes = inner.supported_dtypes  # type: ignore[misc]
        self.supports_native_autodiff = inner.supports_native_autodiff  # type: ignore[misc]
        self.supports_dlpack = inner.supports_dlpack  # type: ignore[misc]
        self.supports_collectives = inner.supports_collectives  # type: ignore[misc]
        self.compiles_steps = inner.compiles_steps  # type: ignore[misc]
        self.donates_args = inner.donates_args  # type: ignore[misc]
        self.spmd_devices = inner.spmd_devices  # type: ignore[misc]
        self.spmd_processes = inner.spmd_processes  # type: ignore[misc]
        self.float_dtype: DType = inner.float_dtype
        self.int_dtype: DType = inner.int_dtype
        self.options = dict(inner.options)
        self._devices: dict[str, Device] = {}
        d = self.__dict__
        for name, spec in RULES.items():
            d[name] = make_op(inner, spec)
        for name in DELEGATED:
            d[name] = make_delegate(getattr(inner, name))
        for name in CREATION:
            d[name] = make_creation(inner, getattr(inner, name))
        ishape = inner.shape

        def shape(p: Any) -> tuple[int, ...]:
            try:
                return ishape(p.p)  # type: ignore[no-any-return]
            except AttributeError:
                return ishape(p)  # type: ignore[no-any-return]

        d["shape"] = shape

    def __repr__(self) -> str:
        return f"Autodiff({self.inner_backend!r})"

    # ------------------------------------------------------------------ devices
    def _device_names(self) -> list[str]:
        return self.inner_backend._device_names()

    def _make_device(self, name: str) -> Device:
        inner_dev = self.inner_backend.device(name)
        ib = self.inner_backend
        return AutodiffDevice(self, inner_dev.handle, inner_dev.name, ops=(self, ib, ib), inner=inner_dev)

    def seed(self, seed: int) -> None:
        """Seed the inner backend's generator."""
        self.inner_backend.seed(seed)

    def rng_state(self) -> Any:
        """The inner backend's random state (:meth:`Backend.rng_state`)."""
        return self.inner_backend.rng_state()

    def set_rng_state(self, state: Any) -> None:
        """Restore the inner backend's random state (:meth:`Backend.set_rng_state`)."""
        self.inner_backend.set_rng_state(state)

    # ------------------------------------------------------------------ casts and moves
    def cast(self, p: Any, dtype: DType) -> Any:
        """Float to another float dtype is differentiable (the gradient is cast back); a cast to
        Int or Bool leaves the graph."""
        I = self.inner_backend  # noqa: E741
        if p.__class__ is not AP:
            return I.cast(p, dtype)
        y = I.cast(p.p, dtype)
        if not dtype.is_float:
            return y
        if p.node is None:
            return AP(y)
        return AP(y, Node((p.node,), _cast_back, I.dtype(p.p)))

    def bitcast(self, p: Any, dtype: DType) -> Any:
        """Bits reinterpreted: the result leaves the graph (no gradient flows through a bitcast); a Float
        result is an untracked leaf."""
        y = self.inner_backend.bitcast(p.p if p.__class__ is AP else p, dtype)
        return AP(y) if dtype.is_float else y

    def to_device(self, p: Any, handle: Any) -> Any:
        """Moves keep the graph: the gradient moves back to the source device."""
        I = self.inner_backend  # noqa: E741
        if p.__class__ is not AP:
            return I.to_device(p, handle)
        y = I.to_device(p.p, handle)
        if p.node is None:
            return AP(y)
        return AP(y, Node((p.node,), _move_back, I.device_handle(p.p)))

    def detach(self, p: Any) -> Any:
        """The same values, untracked (a new wrapper; the inner primitive is shared)."""
        return AP(p.p) if p.__class__ is AP else p

    def batch_norm_running(self, running_mean: Any, running_var: Any, mean: Any, invstd: Any, momentum: float,
                           epsilon: float) -> tuple[Any, Any]:
        """The inner backend's running statistics (constants: arguments unwrapped, results untracked)."""
        rm, rv, m, s = (a.p if a.__class__ is AP else a for a in (running_mean, running_var, mean, invstd))
        r = self.inner_backend.batch_norm_running(rm, rv, m, s, momentum, epsilon)
        return AP(r[0]), AP(r[1])

    # ------------------------------------------------------------------ composites with tuples
    def sort(self, a: Any, dim: int, descending: bool) -> Any:
        """Sorted values; the gradient goes back through the sorting indices."""
        out = self.sort_with_indices(a, dim, descending)  # type: ignore[attr-defined]
        return out[0]

    def var_mean(self, a: Any, dim: int, correction: int) -> tuple[Any, Any]:
        """``(var, mean)`` along ``dim``, each with its own rule."""
        return self.var(a, dim, correction), self.mean_dim(a, dim)  # type: ignore[attr-defined]

    def collectives(self) -> Any:
        """The inner backend's collective engine (collectives run on inner primitives; their results
        are constants: gradients are reduced after ``backward``)."""
        return self.inner_backend.collectives()

    # ------------------------------------------------------------------ compilation
    @property
    def capabilities(self) -> BackendCapabilities:
        """The inner backend's :attr:`~ember.backend.Backend.capabilities` (autodiff adds none of its own)."""
        return self.inner_backend.capabilities

    def device_mesh(self, devices: Sequence[Device]) -> DeviceMesh:
        """The inner backend's mesh over ``devices`` (autodiff devices stand for their inner devices)."""
        return self.inner_backend.device_mesh(devices)

    def process_mesh(self, device: Device) -> DeviceMesh:
        """The inner backend's mesh of the run's processes (an autodiff ``device`` stands for its inner device)."""
        return self.inner_backend.process_mesh(device)

    def compile(self, fn: Any, **options: Any) -> Any:
        """The inner backend's compiled ``fn`` (jax: :func:`ember_jax.jit`, which carries autodiff
        tensors in as inner arrays and re-tracks them inside); eager inner backends return ``fn``."""
        return self.inner_backend.compile(fn, **options)

    def is_concrete(self, p: Any) -> bool:
        """Whether the inner primitive of ``p`` holds concrete values (``False`` for a jax tracer)."""
        return self.inner_backend.is_concrete(p.p if p.__class__ is AP else p)

    def checks_index_values(self, handle: Any) -> bool:
        """The inner backend's answer (:meth:`ember.backend.Backend.checks_index_values`)."""
        return self.inner_backend.checks_index_values(handle)

    # ------------------------------------------------------------------ the autodiff API
    def inner(self, p: Any) -> Any:
        """The inner primitive of ``p`` (no graph)."""
        return p.p if p.__class__ is AP else p

    def from_inner(self, p: Any) -> Any:
        """An untracked autodiff primitive holding the inner primitive ``p``."""
        r = _new(AP)  # AP(p) without the __init__ frame: this runs for every parameter every step
        r.p = p
        r.node = None
        return r

    def require_grad(self, p: Any) -> Any:
        """A tracked leaf holding ``p``'s values (``p`` itself if it is one already); the graph
        that produced ``p``, if any, is cut (Burn's ``require_grad``)."""
        if type(p.node) is Leaf:
            return p
        r = _new(AP)
        r.p = p.p
        leaf = r.node = _new(Leaf)  # new_leaf() inlined: this runs for every parameter every step
        leaf.id = next(_leaf_ids)
        return r

    def is_require_grad(self, p: Any) -> bool:
        """Whether ``p`` is tracked: a leaf or the result of an op on a tracked input."""
        return p.__class__ is AP and p.node is not None

    def backward(self, p: Any, on_ready: Callable[[int, Any], None] | None = None) -> Gradients:
        """Gradients of ``p`` with respect to every tracked leaf it depends on; the seed is a tensor
        of ones of ``p``'s shape (Burn: ``backward`` of a non-scalar sums it). The graph is freed.

        ``on_ready(leaf id, inner primitive)`` is called for each leaf as soon as its gradient is
        final (:mod:`ember.autodiff._hooks`; ``Tensor.backward(on_grad_ready=...)`` wraps it).

        Raises:
            AutodiffError: ``p`` is untracked, or its graph was consumed by an earlier backward.
        """
        node = p.node if p.__class__ is AP else None
        if node is None:
            raise AutodiffError(
                "backward: the tensor is not tracked, so there is no graph to differentiate; call "
                "require_grad() on the inputs (parameters) before computing it, on an autodiff device."
            )
        I = self.inner_backend  # noqa: E741
        x = p.p
        seed = I.ones(I.shape(x), I.dtype(x), I.device_handle(x))
        if type(node) is Leaf:
            if on_ready is not None:
                on_ready(node.id, seed)
            return Gradients({node.id: seed})
        g = _new(Gradients)  # Gradients(...) without the __init__ frame (once per step)
        g._grads = _sweep(I, node, seed, on_ready)
        return g


def _cast_back(B: Any, g: Any, dtype: Any, ps: Any) -> Any:
    return (B.cast(g, dtype),)


def _move_back(B: Any, g: Any, handle: Any, ps: Any) -> Any:
    return (B.to_device(g, handle),)


#: every public method of the backend contract that Autodiff covers (checked by the tests)
HANDLED: frozenset[str] = frozenset(RULES) | DELEGATED | CREATION | COMPOSITE | frozenset(
    {"shape", "cast", "bitcast", "to_device", "detach", "sort", "var_mean", "seed", "inner", "from_inner", "compile",
     "is_concrete", "checks_index_values", "collectives", "batch_norm_running", "rng_state", "set_rng_state",
     "capabilities", "device_mesh", "process_mesh"}
)
"""Every primitive name Autodiff covers (the conformance suite checks that the contract has no other)."""

