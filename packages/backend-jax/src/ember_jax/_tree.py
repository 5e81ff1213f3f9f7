"""The jax backend's hooks of the step tree (:mod:`ember.backend.step_tree`): the arguments of an
:func:`ember_jax.jit` call flattened into jax arrays and structure, and rebuilt around tracers.

The walk itself is the core's; what is jax's here: raw ``jax.Array`` and ``numpy.ndarray`` arguments are leaves
(their structure records jax's weak typing, which jax keys its own cache on: ``jnp.asarray(1.0)`` is weakly
typed), and the tensors an optimizer's Python numbers become are replicated over the devices the call spans
(:func:`ember_jax.replicate`), as the compiled program requires of every input.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

import ember
from ember.backend.step_tree import StepTree

from ._sharding import _place, put

__all__ = ["TREE"]


def _weak_type(x: Any) -> bool:
    return getattr(x, "weak_type", False)


def _default_device() -> Any:
    return ember.backend("jax").device()


def _place_states(o: Any, fl: Any, states: dict[Any, Any]) -> dict[Any, Any]:
    """``states`` with the new tensors replicated over the mesh of the call's arrays spread over several devices
    (none: as they are)."""
    spread = _spread(fl, o._states)
    if spread is None:
        return states
    placed = _place(list(states.values()),  # a list: jax sorts dict keys, and ParamIds do not order
                    lambda a: a if len(a.sharding.device_set) > 1 else put(a, spread))
    return dict(zip(states, placed))


def _spread(fl: Any, states: dict[Any, Any]) -> Any:
    """The replicated sharding over the mesh of the first array of the call (or of the states) that lives on
    several devices, else ``None``."""
    from jax.sharding import NamedSharding, PartitionSpec

    arrays = list(fl.leaves) + jax.tree_util.tree_leaves(list(states.values()))
    for a in arrays:
        sh = getattr(a, "sharding", None)
        if sh is not None and len(sh.device_set) > 1 and hasattr(sh, "mesh"):
            return NamedSharding(sh.mesh, PartitionSpec())
    return None


#: the jax backend's step tree
TREE = StepTree("ember_jax.jit", array_types=(jax.Array, np.ndarray), array_extra=_weak_type,
                default_device=_default_device, place_states=_place_states)
