"""Optimizers, gradients and learning-rate schedulers (Burn's ``burn::optim``).

Optimizers are functional, as in Burn: ``optim.step(lr, model, grads)`` returns the updated model (no
``zero_grad``, nothing mutated but the optimizer's own state)::

    from ember.optim import AdamConfig, GradientsParams
    optim = AdamConfig().init()
    grads = GradientsParams.from_grads(loss.backward(), model)
    model = optim.step(1e-3, model, grads)

- Gradients: :class:`GradientsParams` (per :class:`~ember.module.ParamId`), :class:`GradientsAccumulator`.
- Optimizers (``XConfig().init() -> Optimizer``): :class:`SgdConfig` (+ :class:`MomentumConfig`),
  :class:`AdamConfig`, :class:`AdamWConfig`, :class:`AdaGradConfig`, :class:`RmsPropConfig`,
  :class:`AdanConfig`, :class:`LionConfig`, :class:`MuonConfig`; :class:`WeightDecayConfig` and
  :class:`GradientClippingConfig` are set on them.
- State: ``optim.to_record()`` / ``optim.load_record(record)`` (save with any :mod:`ember.record` recorder).
- Schedulers: :mod:`ember.optim.lr_scheduler`.
- Errors: :class:`OptimizerError`.
"""

from __future__ import annotations

from . import lr_scheduler
from ._accumulator import GradientsAccumulator
from ._adagrad import AdaGrad, AdaGradConfig
from ._adam import Adam, AdamConfig
from ._adamw import AdamW, AdamWConfig
from ._adan import Adan, AdanConfig
from ._base import Optimizer, SimpleOptimizer
from ._clipping import GradientClippingConfig
from ._decay import WeightDecayConfig
from ._errors import OptimizerError
from ._grads_params import GradientsParams
from ._lion import Lion, LionConfig
from ._momentum import MomentumConfig
from ._muon import AdjustLrFn, Muon, MuonConfig, zeropower_via_newtonschulz
from ._rmsprop import RmsProp, RmsPropConfig
from ._sgd import Sgd, SgdConfig
from .lr_scheduler import (
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
    NoamLrSchedulerConfig,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
)

__all__ = [
    "AdaGrad",
    "AdaGradConfig",
    "Adam",
    "AdamConfig",
    "AdamW",
    "AdamWConfig",
    "Adan",
    "AdanConfig",
    "AdjustLrFn",
    "ComposedLrSchedulerConfig",
    "ConstantLr",
    "CosineAnnealingLrSchedulerConfig",
    "ExponentialLrSchedulerConfig",
    "GradientClippingConfig",
    "GradientsAccumulator",
    "GradientsParams",
    "LinearLrSchedulerConfig",
    "Lion",
    "LionConfig",
    "LrScheduler",
    "MomentumConfig",
    "Muon",
    "MuonConfig",
    "NoamLrSchedulerConfig",
    "Optimizer",
    "OptimizerError",
    "RmsProp",
    "RmsPropConfig",
    "SequentialLrSchedulerConfig",
    "Sgd",
    "SgdConfig",
    "SimpleOptimizer",
    "StepLrSchedulerConfig",
    "WeightDecayConfig",
    "lr_scheduler",
    "zeropower_via_newtonschulz",
]
