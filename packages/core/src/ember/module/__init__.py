"""Modules: immutable trees of parameters (Burn's ``burn::module``).

- :class:`Module`: subclass it with annotated fields; instances are immutable (``replace`` / ``map`` return
  new modules).
- :class:`Param`: a tensor, a stable :class:`ParamId` and ``require_grad``; ``val()`` is the tensor.
- :class:`RunningState`: a saved buffer that is never optimized (BatchNorm statistics).
- :class:`ModuleVisitor` / :class:`ModuleMapper`: what ``visit`` / ``map`` accept besides plain callables.
- :func:`ad_enabled`: whether a tensor is on an autodiff backend; train-only layers (Dropout) key on it.
- :class:`LoadReport`: what ``load_record(record, strict=False)`` could not load.

>>> import ember
>>> from ember.module import Module, Param
>>> class Affine(Module):
...     weight: Param
...     scale: float = 1.0
>>> dev = ember.backend("numpy").device()
>>> m = Affine(weight=Param(ember.Tensor.zeros([2, 3], dev)))
>>> m.num_params()
6
"""

from __future__ import annotations

from .._param_id import ParamId
from ._module import Module
from ._param import Param, RunningState, ad_enabled
from ._record import LoadReport
from ._visitor import ModuleMapper, ModuleVisitor

__all__ = [
    "LoadReport",
    "Module",
    "ModuleMapper",
    "ModuleVisitor",
    "Param",
    "ParamId",
    "RunningState",
    "ad_enabled",
]
