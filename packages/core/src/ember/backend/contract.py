"""The stable contract for backends and extension packages (Burn's backend traits).

Everything a backend needs from the core, under one public name. The numpy, torch and jax backends import
only this module and the other public modules of ``ember`` (``ember``, ``ember.backend``, ``ember.module``,
``ember.optim``, ``ember.record`` ...), never a private one (``ember.backend._ops_float`` and the like); a
third-party backend builds on the same names. The layering is checked by import-linter
(``[tool.importlinter]`` in the repository's ``pyproject.toml``, ``nox -s lint``). The private modules these names
live in are implementation details and may move; the names below stay.

- **The backend and its op groups**: :class:`Backend` mixes in the groups after Burn's ``FloatTensorOps``,
  ``IntTensorOps``, ``ModuleOps`` ...: :class:`FloatOps`, :class:`IntBoolOps`, :class:`NumericOps`,
  :class:`ShapeOps`, :class:`ModuleOps`, :class:`NormOps`, :class:`ActivationOps`, :class:`ActivationGradOps`,
  :class:`AttentionOps`, :class:`RnnOps`, :class:`OptimOps` (its lists of primitives are :data:`Prims`),
  :class:`QuantOps` (quantize, dequantize, int8 matmul) and
  :class:`CollectiveOps` (:class:`Collectives` over a process group, :class:`Work` for asynchronous ones). A
  backend subclasses :class:`Backend` (or a group, to assemble its own mixins) and overrides the required
  primitives and the kernels it has; :func:`required` raises the error of a missing required primitive.
  Registration: a plugin module returns a :class:`BackendSpec` from a :data:`hookimpl` ``ember_backends()``.
- **Capabilities**: a backend declares what it can do with class flags (``compiles_steps``, ``donates_args``,
  ``spmd_devices``, ``spmd_processes``, ``supports_collectives`` ...) that ``Backend.capabilities`` gathers into a
  :class:`BackendCapabilities`; callers ask that instead of the backend's name. A backend with ``spmd_devices`` /
  ``spmd_processes`` returns a :class:`DeviceMesh` from ``Backend.device_mesh`` / ``Backend.process_mesh``.
- **Shape helpers** (the output-size formulas of the module ops, PyTorch's and Burn's, so every backend agrees):
  :func:`conv_out`, :func:`conv_transpose_out`, :func:`pool_out`, :func:`pool_pads`, :func:`avg_divisor`, and the
  float64 numpy matrices :func:`adaptive_matrix` and :func:`interp_matrix` (bicubic coefficient :data:`CUBIC_A`).
- **Autodiff primitives**, for a backend that traces or compiles steps holding tracked tensors (``ember_jax``):
  :class:`AutodiffPrimitive` (the inner primitive ``p`` and the graph ``node``), a tracked :class:`Leaf` and
  :func:`new_leaf`.
- **Module classes**: :data:`SUBCLASS_HOOKS`, callables run with every new ``Module`` subclass (``ember_jax``
  registers module classes as pytrees there without the core importing jax), and :func:`rebuild_module`, a copy
  of a module with some fields replaced, without running ``__init__``.

Errors (:class:`~ember.BackendError`, :class:`~ember.DTypeError` ...), :class:`~ember.TensorData` and
:class:`~ember.Distribution` are public in :mod:`ember`; atomic file writes in :mod:`ember.record`.
"""

from __future__ import annotations

from ..autodiff._graph import AutodiffPrimitive, Leaf, new_leaf
from ..module import _module
from ..module._tree import rebuild as rebuild_module
from . import _base, _module_geometry, _ops_optim
from ._base import Backend
from ._capabilities import BackendCapabilities
from ._collectives import CollectiveOps, Collectives, Work
from ._device import Device
from ._hookspec import BackendSpec, hookimpl
from ._mesh import DeviceMesh
from ._module_geometry import (
    adaptive_matrix,
    avg_divisor,
    conv_out,
    conv_transpose_out,
    interp_matrix,
    pool_out,
    pool_pads,
)
from ._ops_activation import ActivationOps
from ._ops_activation_grad import ActivationGradOps
from ._ops_attention import AttentionOps
from ._ops_float import FloatOps
from ._ops_intbool import IntBoolOps
from ._ops_module import ModuleOps
from ._ops_norm import NormOps
from ._ops_numeric import NumericOps
from ._ops_optim import OptimOps
from ._ops_quant import QuantOps
from ._ops_rnn import RnnOps
from ._ops_shape import ShapeOps

# the names below are the private modules' own objects (``SUBCLASS_HOOKS`` is the list the core reads), documented
# here as part of the contract

required = _base.required
"""``required(name)`` raises the ``NotImplementedError`` of a required primitive ``name`` that a backend lacks."""

Prims = _ops_optim.Prims
"""A list of primitives: the parameters, gradients or state buffers that an :class:`OptimOps` primitive updates."""

CUBIC_A = _module_geometry.CUBIC_A
"""The bicubic convolution coefficient ``A`` of :func:`interp_matrix` (Keys 1981, PyTorch's choice -0.75)."""

SUBCLASS_HOOKS = _module.SUBCLASS_HOOKS
"""Callables run with every new ``Module`` subclass once it is set up (``hook(cls)``): a backend that needs to know
module types appends one without the core importing its array library (``ember_jax`` makes every module class a
JAX pytree). Classes defined before a hook was added are the hook owner's to handle (``Module.__subclasses__()``
recursively)."""

__all__ = [
    # the backend, its registration and its op groups
    "Backend", "BackendSpec", "Device", "hookimpl", "required",
    "FloatOps", "IntBoolOps", "NumericOps", "ShapeOps", "ModuleOps", "NormOps", "ActivationOps", "ActivationGradOps",
    "AttentionOps", "RnnOps", "OptimOps", "QuantOps", "Prims", "CollectiveOps", "Collectives", "Work",
    # what it can do, and the mesh one compiled program spans
    "BackendCapabilities", "DeviceMesh",
    # shape helpers of the module ops
    "conv_out", "conv_transpose_out", "pool_out", "pool_pads", "avg_divisor", "adaptive_matrix", "interp_matrix",
    "CUBIC_A",
    # autodiff primitives
    "AutodiffPrimitive", "Leaf", "new_leaf",
    # module classes
    "SUBCLASS_HOOKS", "rebuild_module",
]
