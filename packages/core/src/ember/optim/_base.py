"""The functional optimizer machinery shared by every optimizer (Burn's ``SimpleOptimizer`` + ``OptimizerAdaptor``).

- :class:`SimpleOptimizer`: the update rule of one tensor, ``step(lr, tensor, grad, state) -> (tensor, state)``.
  ``state`` is a small ``dict`` of tensors and Python numbers (``None`` before the first step).
- Every rule is traceable by ``jax.jit`` (``ember_jax.jit`` compiles whole training steps): no host reads, no
  Python branch on a tensor's value. In a compiled step the learning rate is a Float tensor of shape ``[1]``
  and the Python numbers of a state (step counters) arrive as tensors of shape ``[1]``; the rules take both
  forms through the helpers of :mod:`ember.optim._scalar`.
- :class:`Optimizer`: what ``XConfig().init()`` returns. It maps a module (``module.map``), applies the rule
  to every trainable parameter that has a gradient, keeps the per-parameter state keyed by
  :class:`~ember.module.ParamId`, and saves/loads it as a record.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar, TypeVar

from .._errors import DeviceError, RecordError, ShapeError
from .._kind import Float, kind_of
from .._tensor_data import TensorData
from ..backend._device import Device
from ..module import Module, ModuleMapper, ModuleVisitor, Param, ParamId, ad_enabled
from ..tensor import Tensor
from ._clipping import GradientClippingConfig
from ._errors import OptimizerError
from ._grads_params import GradientsParams
from ._scalar import Scalar, step_scope

__all__ = ["Optimizer", "SimpleOptimizer", "State", "check_lr", "RECORD_VERSION"]

#: a per-parameter optimizer state: names -> tensors (inner device), ints, floats, None or nested states
State = dict[str, Any]
M = TypeVar("M", bound=Module)

#: version of the optimizer record layout ``{"version", "optimizer", "state": {param id: state}}``
RECORD_VERSION = 1


class SimpleOptimizer:
    """The update rule of one parameter tensor (Burn's ``SimpleOptimizer``).

    Subclasses implement :meth:`step` with tensor ops only (no numpy, no host reads, no Python branch on a
    tensor's value), so the rule runs on every backend and can be traced by ``jax.jit``. ``lr`` and the Python
    numbers of ``state`` may be tensors of shape ``[1]``: combine them with the helpers of
    :mod:`ember.optim._scalar`, which keep the plain Python arithmetic for Python numbers, and apply them with
    ``mul_scalar``/``add_scalar``/``div_scalar``, which take both forms.
    """

    #: the name written in records (checked on load)
    name: ClassVar[str] = ""

    def step(self, lr: Scalar, tensor: Tensor, grad: Tensor, state: State | None) -> tuple[Tensor, State | None]:
        """One update.

        Tensor scalars (``lr``, counters) have shape ``[1]`` and broadcast: with a rank-0 ``tensor`` the result
        then has shape ``[1]`` (:class:`Optimizer` reshapes it back to rank 0).

        Args:
            lr: the learning rate (>= 0): a float, or a Float tensor of shape ``[1]`` on ``tensor``'s device.
            tensor: the parameter, on the inner (non-autodiff) device, shape ``[...]``.
            grad: its gradient, same device, shape and dtype.
            state: the state returned by the previous step of this parameter, ``None`` at the first one. Its
                counters are Python ints or Int tensors of shape ``[1]``; the new state keeps their form.

        Returns:
            ``(new tensor, new state)``.
        """
        raise NotImplementedError

    def step_many(self, lr: Scalar, tensors: list[Tensor], grads: list[Tensor], states: list[State | None]
                  ) -> tuple[list[Tensor], list[State | None]]:
        """One update of several parameters of one device and dtype (what :class:`Optimizer` calls).

        The default calls :meth:`step` per tensor. Adam, AdamW, SGD, RMSProp and Lion override it with one
        fused backend call (:mod:`ember.backend._ops_optim`), which may overwrite the buffers of the given
        ``states`` in place (the states are consumed; the parameters and gradients are never written).

        Args:
            lr: as in :meth:`step` (on the tensors' device).
            tensors: the parameters (inner tensors). grads: their gradients, same order, shapes and dtype.
            states: their states (``None`` before the first step); the returned ones replace them.

        Returns:
            ``(new tensors, new states)``, in the order of ``tensors``.
        """
        results = [self.step(lr, t, g, s) for t, g, s in zip(tensors, grads, states, strict=True)]
        return [r[0] for r in results], [r[1] for r in results]

    def init_state(self, tensor: Tensor) -> State | None:
        """The state of a parameter before its first step, with the layout of the later states, when the rule
        can write one whose first :meth:`step` gives exactly what ``step(..., state=None)`` gives; ``None``
        (the default) when it cannot.

        A compiled training step sees one state layout from its first call when the states exist beforehand
        (:meth:`Optimizer.init_states`): one compilation instead of two (empty states, then the steady ones).

        Args:
            tensor: the parameter, on the inner (non-autodiff) device.
        """
        return None


def check_lr(lr: Any) -> Scalar:
    """``lr`` as a float, or a Float tensor of shape ``[1]`` returned as it is.

    A tensor learning rate (what a compiled training step is given, so that a new value does not recompile it)
    is checked for its kind and shape only: its value is not read (no host synchronization), so a negative or
    NaN value is not detected.

    Raises:
        OptimizerError: a float ``lr`` is negative, NaN or infinite. TypeError: not a real number, or a tensor
        that is not Float. ShapeError: a tensor whose shape is not ``[1]``.
    """
    if isinstance(lr, Tensor):
        if lr.kind is not Float:
            raise TypeError(
                f"optimizer step: a tensor learning rate must be a Float tensor of shape [1], got a {lr.kind} "
                "tensor; convert it with .float()."
            )
        if lr.shape != (1,):
            raise ShapeError(
                f"optimizer step: a tensor learning rate must have shape [1], got {list(lr.shape)}; build it with "
                "Tensor.from_data([lr], device) (or pass a float)."
            )
        return lr
    if isinstance(lr, bool) or not isinstance(lr, (int, float)):
        try:
            lr = float(lr)
        except (TypeError, ValueError):
            raise TypeError(
                f"optimizer step: the learning rate must be a float or a Float tensor of shape [1], got "
                f"{type(lr).__name__}; pass scheduler.step() when using an LrScheduler."
            ) from None
    lr = float(lr)
    if not math.isfinite(lr) or lr < 0.0:
        raise OptimizerError(
            f"optimizer step: expected a finite learning rate >= 0, got {lr}. Check the value or the scheduler "
            "producing it (a diverging schedule, a sign error)."
        )
    return lr


# ---------------------------------------------------------------------- state <-> record
def _state_to_record(node: Any) -> Any:
    if isinstance(node, Tensor):
        return node.to_data()
    if isinstance(node, dict):
        return {k: _state_to_record(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_state_to_record(v) for v in node]
    return node


def _state_copy(node: Any) -> Any:
    """``node`` with every tensor in it (nested dicts, lists and tuples too) a new buffer: ``t * 1`` holds ``t``'s
    exact values (-0.0, inf and nan included) and dtype."""
    if isinstance(node, Tensor):
        return node * 1
    if isinstance(node, dict):
        return {k: _state_copy(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return type(node)(_state_copy(v) for v in node)
    return node


def _materialize(node: Any, device: Device) -> Any:
    """Loaded state on ``device``: TensorData -> Tensor of the data's kind (a counter saved as an Int tensor
    stays Int), tensors elsewhere moved."""
    if isinstance(node, Tensor):
        return node if node.device is device else node.to_device(device)
    if isinstance(node, TensorData):
        dt = node.dtype
        return Tensor.from_data(node, device, kind_of(dt))
    if isinstance(node, dict):
        return {k: _materialize(v, device) for k, v in node.items()}
    if isinstance(node, list):
        return [_materialize(v, device) for v in node]
    return node


def _has_nan(path: str, grad: Tensor) -> bool:
    """Whether ``grad`` holds a NaN (one host read).

    Raises:
        OptimizerError: inside a compiled step (the gradient is traced), where the value cannot be read.
    """
    if not grad.ops.is_concrete(grad.primitive):
        raise OptimizerError(
            f"optimizer step: nan_check cannot run inside a compiled step (the gradient of {path!r} is traced, its "
            "values cannot be read on the host). Disable it for compiled training (nan_check=False / "
            "optim.with_nan_check(False)) and check the loss returned by the step outside it instead "
            "(e.g. math.isnan(loss.into_scalar()))."
        )
    return bool(grad.is_nan().any())


def _lr_on(lr: Tensor, device: Device, path: str) -> Tensor:
    """A tensor learning rate on the device of a parameter's inner tensor: an autodiff tensor is taken as its
    ``inner()`` (no graph, no copy).

    Raises:
        DeviceError: ``lr`` lives on another device (it is not moved: that could copy through the host).
    """
    inner = lr.inner()
    if inner.device is not device:
        raise DeviceError(
            f"optimizer step: the learning rate tensor lives on {lr.device}, the parameter {path!r} on {device}; "
            "create it on the model's device (Tensor.from_data([lr], device)) or pass a float."
        )
    return inner


class _Collect(ModuleVisitor):
    """Pass 1 of a step: checks every trainable Float parameter that has a gradient and collects it with its
    gradient (clipped) and state, without changing anything (any error leaves the optimizer as it was)."""

    def __init__(self, optim: Optimizer, grads: GradientsParams) -> None:
        self.optim = optim
        self.grads = grads
        #: param id -> (path, parameter tensor, on autodiff, inner tensor, gradient, state), in tree order
        self.entries: dict[ParamId, tuple[str, Tensor, bool, Tensor, Tensor, State | None]] = {}

    def visit_float(self, path: str, param: Param) -> None:
        if not param.require_grad:
            return
        pid = param.id
        if pid in self.entries:  # a parameter shared at several places of the tree
            return
        grad = self.grads.get(pid)
        if grad is None:
            return
        t = param.val()
        ad = ad_enabled(t)
        x = t.inner() if ad else t
        if grad.device is not x.device:
            grad = grad.to_device(x.device)
        shape = x.shape
        if grad.shape != shape:
            raise ShapeError(
                f"optimizer step: the gradient of {path!r} has shape {list(grad.shape)}, the parameter "
                f"{list(shape)}; the gradients do not belong to this model."
            )
        optim = self.optim
        if optim.nan_check and _has_nan(path, grad):
            raise OptimizerError(
                f"optimizer step: the gradient of {path!r} (shape {list(x.shape)}) contains NaN. Nothing was "
                "updated. Look for a log/sqrt/division of zero or an exploding loss (lower the learning rate, "
                "clip gradients with GradientClippingConfig)."
            )
        if optim.grad_clipping is not None:
            grad = optim.grad_clipping.clip(grad)
        state = optim._states.get(pid)
        if state is not None:
            state = _materialize(state, x.device)
        self.entries[pid] = (path, t, ad, x, grad, state)


def _update(optim: Optimizer, lr: Scalar, entries: dict[ParamId, Any]) -> tuple[dict[ParamId, Tensor],
                                                                               dict[ParamId, State | None]]:
    """Pass 2: the rule's :meth:`SimpleOptimizer.step_many` once per group of parameters sharing a device and a
    dtype; returns the new parameter tensors (on the parameters' own devices) and states by id."""
    groups: dict[tuple[int, Any], list[ParamId]] = {}
    for pid, (_, _, _, x, _, _) in entries.items():
        groups.setdefault((id(x.device), x.dtype), []).append(pid)
    done: dict[ParamId, Tensor] = {}
    pending: dict[ParamId, State | None] = {}
    for pids in groups.values():
        first = entries[pids[0]]
        device = first[3].device
        glr = lr
        if glr.__class__ is Tensor and glr.device is not device:  # type: ignore[union-attr]
            glr = _lr_on(glr, device, first[0])  # type: ignore[arg-type]
        xs = [entries[p][3] for p in pids]
        new_xs, new_states = optim.simple.step_many(glr, xs, [entries[p][4] for p in pids],
                                                    [entries[p][5] for p in pids])
        for pid, x, new_x, new_state in zip(pids, xs, new_xs, new_states, strict=True):
            if not x.shape and new_x.shape:  # a rank-0 parameter broadcast to [1] by a tensor lr or counter
                new_x = new_x.reshape(())
            t, ad = entries[pid][1], entries[pid][2]
            done[pid] = Tensor.from_inner(new_x, t.device) if ad else new_x
            pending[pid] = new_state
    return done, pending


class _StepMapper(ModuleMapper):
    """Pass 3: the module with the new parameter tensors (same ids; a shared parameter everywhere it occurs)."""

    def __init__(self, done: dict[ParamId, Tensor]) -> None:
        self.done = done

    def map_float(self, path: str, param: Param) -> Param:
        new = self.done.get(param.id)
        return param if new is None else param.with_val(new)


class Optimizer:
    """A module optimizer (Burn's ``OptimizerAdaptor`` / ``Optimizer`` trait), made by ``XConfig().init()``.

    ::

        optim = AdamConfig().init()
        for batch in loader:
            loss = model.forward(batch.x).sub(batch.y).square().mean()
            grads = GradientsParams.from_grads(loss.backward(), model)
            model = optim.step(1e-3, model, grads)      # a new module; no zero_grad

    A parameter is updated when it is a Float :class:`~ember.module.Param` with ``require_grad=True`` and
    ``grads`` holds its id; others (frozen, without a gradient, Int/Bool, running states) are returned as they
    are and their optimizer state is not touched. The update runs on the inner backend of the parameter (the
    gradients' device) and the result is lifted back onto the parameter's autodiff device as a fresh leaf with
    the same :class:`~ember.module.ParamId` and ``require_grad``.

    The parameters of one device and dtype are updated together, by one call of the rule's
    :meth:`SimpleOptimizer.step_many` (one fused backend update for Adam, AdamW, SGD, RMSProp and Lion). Buffer rule:
    the module passed to :meth:`step` and the gradients are never written (a module you keep keeps its values); the
    optimizer's own state tensors are updated in place (numpy, torch) or donated (jax), and it never hands them out:
    :meth:`state` returns copies and :meth:`to_record` copies.

    The state (moments, step counts ...) is kept per ``ParamId`` and saved by :meth:`to_record` /
    :meth:`load_record`; a run saved mid-training and resumed gives bitwise the same parameters as an
    uninterrupted run (same backend and dtype, record saved at the backend's precision).
    """

    def __init__(
        self, simple: SimpleOptimizer, grad_clipping: GradientClippingConfig | None = None, nan_check: bool = False
    ) -> None:
        self.simple = simple
        self.grad_clipping = grad_clipping
        self.nan_check = bool(nan_check)
        self._states: dict[ParamId, Any] = {}

    # ------------------------------------------------------------------ options
    def with_grad_clipping(self, clipping: GradientClippingConfig | None) -> Optimizer:
        """Set the gradient clipping (in place); returns ``self``."""
        if clipping is not None and not isinstance(clipping, GradientClippingConfig):
            raise TypeError(f"with_grad_clipping: expected a GradientClippingConfig, got {type(clipping).__name__}.")
        self.grad_clipping = clipping
        return self

    def with_nan_check(self, enabled: bool = True) -> Optimizer:
        """Check every gradient for NaN before updating (in place; returns ``self``).

        The check reads one boolean per parameter from the device (a host synchronization per parameter),
        so it is off by default. It cannot run inside a compiled step (``ember_jax.jit``), where values are
        traced: :meth:`step` then raises :class:`~ember.optim.OptimizerError`; check the returned loss instead.
        """
        self.nan_check = bool(enabled)
        return self

    # ------------------------------------------------------------------ step
    def step(self, lr: Scalar, module: M, grads: GradientsParams) -> M:
        """Update ``module`` with ``grads`` at learning rate ``lr``; returns the new module.

        Args:
            lr: the learning rate: a float >= 0 (``scheduler.step()`` gives one), or a Float tensor of shape
                ``[1]`` on the model's device or its inner device (what a compiled step is given; its value is
                not read, so it is not range-checked).
            module: the model (usually on an autodiff backend).
            grads: the :class:`GradientsParams` of ``module`` (not modified).

        Raises:
            OptimizerError: ``lr`` negative/NaN; ``grads`` is not empty but no gradient matches a trainable
                parameter of ``module`` (gradients of another model); a NaN gradient with ``nan_check``. On any
                error the optimizer state is unchanged.
            ShapeError: a gradient's shape differs from its parameter's, or a tensor ``lr`` is not of shape ``[1]``.
            TypeError: ``lr`` is neither a real number nor a Float tensor. DeviceError: a tensor ``lr`` on
                another device than the parameters.
            OptimizerError: ``nan_check`` inside a compiled step (it reads values; disable it there).
        """
        lr = check_lr(lr)
        if not isinstance(grads, GradientsParams):
            raise TypeError(
                f"optimizer step: expected GradientsParams, got {type(grads).__name__}; convert with "
                "GradientsParams.from_grads(loss.backward(), model)."
            )
        if not isinstance(module, Module):
            raise TypeError(f"optimizer step: expected a Module, got {type(module).__name__}.")
        collect = _Collect(self, grads)
        module.visit(collect)
        if not collect.entries and len(grads) > 0:
            raise OptimizerError(
                f"optimizer step: none of the {len(grads)} gradients matches a trainable parameter of this "
                f"{type(module).__name__} (no common ParamId). The gradients come from another model; build them "
                "with GradientsParams.from_grads(loss.backward(), model) using the model you step."
            )
        with step_scope():
            done, pending = _update(self, lr, collect.entries)
        new = module.map(_StepMapper(done)) if done else module
        for pid, st in pending.items():
            if st is None:
                self._states.pop(pid, None)
            else:
                self._states[pid] = st
        return new

    def init_states(self, module: Module) -> Optimizer:
        """Give every trainable Float parameter of ``module`` without a state the rule's initial state
        (:meth:`SimpleOptimizer.init_state`; in place, returns ``self``). The first step then computes what it
        computes from no state (Adam: zero moments, step count 0), and a compiled step is traced once instead of
        twice. Rules with one: Adam, AdamW, AdaGrad, RMSProp, Lion. Rules without (SGD's momentum and Adan's
        gradient difference start from the first gradient; Muon) leave the states empty. A parameter that never
        gets a gradient keeps its initial state (it is saved in records too).

        Raises:
            TypeError: ``module`` is not a Module.
        """
        if not isinstance(module, Module):
            raise TypeError(f"init_states: expected a Module, got {type(module).__name__}.")
        simple, states = self.simple, self._states
        for param in module.params():
            if not param.require_grad or param.id in states:
                continue
            t = param.val()
            if t.kind is not Float:
                continue
            st = simple.init_state(t.inner() if ad_enabled(t) else t)
            if st is not None:
                states[param.id] = st
        return self

    # ------------------------------------------------------------------ state and records
    def state(self, id: ParamId) -> State | None:
        """A snapshot of the state of parameter ``id`` (``None`` before its first update or for a stateless rule).

        The tensors returned are copies: the fused updates of the next :meth:`step` write the optimizer's own state
        buffers in place (the buffer rule in the class docstring), and a tensor handed out must not change behind
        its holder's back. Right after :meth:`load_record` its tensors are still :class:`~ember.TensorData`; they
        become tensors at the next step."""
        st = self._states.get(id)
        if st is None:
            return None
        return _state_copy(st)  # type: ignore[no-any-return]

    def __len__(self) -> int:
        """The number of parameters with a state (stateless rules such as plain SGD keep none)."""
        return len(self._states)

    def to_record(self) -> dict[str, Any]:
        """The state as a record: ``{"version": 1, "optimizer": name, "state": {"<param id>": {...}}}``.

        Tensors become :class:`~ember.TensorData` (copied to the host; a counter that is an Int tensor after a
        compiled step is saved as Int data and loaded back as an Int tensor); save it with a named recorder
        (``NamedMpk*``, ``*Json*``; the positional ``Bin*`` recorders need a template of the same structure)::

            NamedMpkFileRecorder().record(optim.to_record(), "optim")
            optim = AdamConfig().init().load_record(NamedMpkFileRecorder().load("optim.mpk"))

        Save at the backend's precision (``FullPrecisionSettings`` for float32, ``DoublePrecisionSettings`` for
        float64) for a bitwise-identical resumption.
        """
        return {
            "version": RECORD_VERSION,
            "optimizer": self.simple.name,
            "state": {k.serialize(): _state_to_record(v) for k, v in self._states.items()},
        }

    def load_record(self, record: Any) -> Optimizer:
        """Replace the state by ``record``'s (as made by :meth:`to_record`); returns ``self``.

        Tensors are placed on each parameter's device at its next update.

        Raises:
            RecordError: not an optimizer record, a record of another optimizer, or an unknown version.
        """
        if not isinstance(record, dict) or not isinstance(record.get("state"), dict):
            raise RecordError(
                "Optimizer.load_record: expected a record made by optim.to_record() "
                f"({{'version', 'optimizer', 'state'}}), got {type(record).__name__} "
                f"with keys {sorted(record) if isinstance(record, dict) else '-'}."
            )
        name = record.get("optimizer")
        if name != self.simple.name:
            raise RecordError(
                f"Optimizer.load_record: the record was saved by the {name!r} optimizer; this optimizer is "
                f"{self.simple.name!r}. Load it into an optimizer made by the same config."
            )
        version = record.get("version")
        if version != RECORD_VERSION:
            raise RecordError(
                f"Optimizer.load_record: unknown optimizer record version {version!r} (expected {RECORD_VERSION})."
            )
        self._states = {ParamId(k): v for k, v in record["state"].items()}
        return self

    def __repr__(self) -> str:
        clip = f", grad_clipping={self.grad_clipping}" if self.grad_clipping is not None else ""
        return f"Optimizer({self.simple!r}{clip}, params={len(self._states)})"


def init_optimizer(cfg: Any, simple: SimpleOptimizer) -> Optimizer:
    """The :class:`Optimizer` of a config with ``grad_clipping`` and ``nan_check`` fields."""
    return Optimizer(simple, getattr(cfg, "grad_clipping", None), getattr(cfg, "nan_check", False))
