"""A private copy of a donated argument: the same Ember objects around fresh device buffers.

``ember_jax.jit(..., donate_argnums=..., copy_donated=True)`` (what the Learner's training step uses) donates an
argument's buffers only when they are the step's own: the results of its previous call passed back. Anything else
(the caller's model at the first call) is first copied here, so that jax deletes, and the step writes into, the
copy's buffers, never the caller's.
"""

from __future__ import annotations

from typing import Any

import jax

from ember.backend.step_tree import Flat, Rebuild, rebuild
from ember.backend.step_tree import flatten_seq as _flat_seq

from ._tree import TREE

__all__ = ["private_copy"]


def private_copy(x: Any) -> Any:
    """``x`` rebuilt around copies of its arrays: modules, params (same ids, ``require_grad``, fresh autodiff
    leaves for tracked ones), running states, tensors, lists and dataclasses are new objects; static values are
    shared. The arrays are copied in one ``jax.device_put(..., may_alias=False)`` to each array's own sharding (a
    device copy: the same placement, over several devices or processes included; every process of a run
    spanning processes makes the same call); the values are bit-identical."""
    fl = Flat(TREE)
    _flat_seq(fl, (x,))
    if not fl.leaves:
        return x
    leaves = list(fl.leaves)
    # each to its own sharding: a global array of a multi-process run (not fully addressable) needs it named
    fresh = jax.device_put(leaves, [getattr(x, "sharding", None) for x in leaves], may_alias=False)
    return rebuild(Rebuild(fresh, fl), x)
