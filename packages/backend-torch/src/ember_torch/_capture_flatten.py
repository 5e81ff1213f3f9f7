"""The torch backend's hooks of the step tree (:mod:`ember.backend.step_tree`): the arguments of a captured step
(:func:`ember_torch.compile`) flattened into torch tensors (the graph's inputs) and a hashable structure (the
cache key), and rebuilt around ``make_fx``'s proxies.

The walk itself is the core's (see :mod:`ember.backend.step_tree` for what is a leaf and what is static); what is
torch's here: raw ``torch.Tensor`` arguments are leaves (their structure records the torch device besides shape
and dtype), and the tensors of the arguments must be tensors of the torch backend (:func:`check_devices`, once per
new structure).
"""

from __future__ import annotations

from typing import Any

import torch

from ember import Tensor
from ember.backend.step_tree import Flat, StepTree

from ._float import TorchFloatOps

__all__ = ["TREE", "ForeignTensor", "check_devices"]


class ForeignTensor(Exception):
    """A tensor of another backend among the arguments (the caller turns it into a ``BackendError``)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj


def _torch_device(x: torch.Tensor) -> Any:
    return x.device


def _default_device() -> Any:
    import ember

    return ember.backend("torch").device()


#: the torch backend's step tree
TREE = StepTree("ember_torch.compile", array_types=(torch.Tensor,), array_extra=_torch_device,
                default_device=_default_device)

_TORCH_DEVICES: dict[Any, bool] = {}


def _is_torch(dev: Any) -> bool:
    ok = _TORCH_DEVICES.get(dev)
    if ok is None:
        # the torch backend's kernels (TorchFloatOps sits below _backend.py, which imports this module)
        ok = _TORCH_DEVICES[dev] = isinstance(dev.inner.backend, TorchFloatOps)
    return ok


def check_devices(fl: Flat) -> None:
    """Check that every tensor of a newly flattened structure lives on the torch backend (or ``Autodiff(torch)``).

    Raises:
        ForeignTensor: the first tensor of another backend.
    """
    for o in fl.objs:
        if o.__class__ is Tensor and not _is_torch(o.device):
            raise ForeignTensor(o)
