"""Data parallelism over several devices of one process: :func:`replicate` and :func:`shard_batch`.

The Learner's ``MultiDevice`` strategy on jax (DESIGN.md §10): the model and optimizer are replicated
on every device, each batch is split along dim 0 (a ``NamedSharding`` over a 1-D ``Mesh`` with axis
``"batch"``), and the step compiled by :func:`ember_jax.jit` runs as ONE XLA program on the sharded
inputs: GSPMD partitions the forward and backward over the devices and inserts the all-reduce of the
gradients, so the new parameters are replicated again and equal (up to rounding) those of the same
step on one device with the whole batch.

>>> devices = ember.backend("jax").devices()          # doctest: +SKIP
>>> model, optim = ember_jax.replicate((model, optim), devices)
>>> step = ember_jax.jit(train_step)
>>> for batch in loader:
...     model, loss = step(model, optim, ember_jax.shard_batch(batch, devices), lr)

Every tensor a step takes must be replicated or sharded over the same devices (jax refuses to mix arrays
committed to one device with arrays spread over several), except the backend's PRNG key, which
:func:`ember_jax.jit` replicates itself. Tensors keep their Ember device (the first of ``devices``:
their values live on all of them). On one machine's CPU, ``XLA_FLAGS=--xla_force_host_platform_device_count=N``
(set before jax is imported) gives N CPU devices to try it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ember import Device, Tensor
from ember._errors import BackendError, ShapeError
from ember.module import Module, Param, RunningState
from ember.optim import GradientsParams, Optimizer

__all__ = ["mesh", "replicate", "shard_batch", "BATCH_AXIS"]

_new = object.__new__

#: the name of the mesh axis a batch is split along
BATCH_AXIS = "batch"

_MESHES: dict[tuple[Any, ...], Mesh] = {}


def mesh(devices: Sequence[Device]) -> Mesh:
    """The 1-D ``jax.sharding.Mesh`` (axis ``"batch"``) over ``devices``, Ember jax devices (autodiff ones
    stand for their inner device), in order; one object per device list.

    Raises:
        BackendError: an empty list, a device twice, or a device of another backend than jax.
    """
    from ._backend import JaxBackend

    handles = []
    for d in devices:
        if not isinstance(d, Device) or not isinstance(d.inner.backend, JaxBackend):
            raise BackendError(f"ember_jax: expected jax devices (ember.backend('jax').devices()), got {d!r}.")
        handles.append(d.inner.handle)
    if not handles or len(set(handles)) != len(handles):
        raise BackendError(f"ember_jax: expected distinct jax devices, at least one, got {list(devices)!r}.")
    key = tuple(handles)
    m = _MESHES.get(key)
    if m is None:
        m = _MESHES[key] = Mesh(np.array(handles, dtype=object), (BATCH_AXIS,))
    return m


def replicate(obj: Any, devices: Sequence[Device]) -> Any:
    """``obj`` with every tensor replicated on all ``devices`` (a copy of the values on each).

    ``obj`` is anything whose tensors jax can reach (:mod:`ember_jax._pytree`): a ``Tensor``, a ``Module``, an
    ``Optimizer`` (its per-parameter state), ``GradientsParams``, or tuples, lists and dicts of them. Parameter
    ids, tracking and the structure are kept; the tensors' Ember device is unchanged.

    Returns:
        A new object of the same structure (an optimizer comes back as a new optimizer: use the returned one).

    Raises:
        BackendError: ``devices`` is not a list of distinct jax devices.
    """
    sharding = NamedSharding(mesh(devices), P())
    return _place(obj, lambda a: jax.device_put(a, sharding))


def shard_batch(tensor: Any, devices: Sequence[Device]) -> Any:
    """``tensor`` split along dim 0 over ``devices``: device ``i`` holds rows
    ``[i * n / len(devices), (i + 1) * n / len(devices))`` of ``[n, ...]``.

    ``tensor`` may also be a tuple, list or dict of tensors (each split alike); wrap a dataclass batch's
    fields yourself (``Batch(shard_batch(b.x, devices), shard_batch(b.y, devices))``).

    Raises:
        ShapeError: a tensor of rank 0, or whose dim 0 is not a multiple of ``len(devices)`` (drop the last
            partial batch, or pad it).
        BackendError: ``devices`` is not a list of distinct jax devices.
    """
    m = mesh(devices)
    n = len(devices)
    sharding = NamedSharding(m, P(BATCH_AXIS))

    def put(a: Any) -> Any:
        if a.ndim == 0 or a.shape[0] % n:
            raise ShapeError(
                f"shard_batch: dim 0 of a tensor of shape {list(a.shape)} must be a multiple of the {n} devices; "
                "drop the last partial batch (DataLoader drop_last) or pad it."
            )
        return jax.device_put(a, sharding)

    return _place(tensor, put)


def _place(obj: Any, put: Any) -> Any:
    """``obj`` with ``put`` applied to the array of each of its tensors (and to its raw jax arrays).

    What was shared stays shared (a tensor reached twice gives one new tensor: the step counter all of Adam's
    parameter states share, a tied weight), and dicts keep their key order (jax's own ``tree_map`` sorts them,
    which would change the structure a compiled step is cached by). Other values (Python numbers) are kept."""
    memo: dict[int, Any] = {}

    def walk(x: Any) -> Any:
        r = memo.get(id(x))
        if r is not None:
            return r
        c = x.__class__
        if c is Tensor:
            r = jax.tree_util.tree_map(put, x)  # the tensor's own pytree rule keeps its device, kind and tracking
        elif isinstance(x, jax.Array):
            r = put(x)
        elif c is dict:
            r = {k: walk(v) for k, v in x.items()}
        elif c is list or c is tuple:
            r = c(walk(v) for v in x)
        elif isinstance(x, Optimizer):
            r = _new(c)
            r.__dict__.update(x.__dict__)
            r._states = {pid: walk(st) for pid, st in x._states.items()}
        elif isinstance(x, (Module, Param, RunningState, GradientsParams)):
            leaves, treedef = jax.tree_util.tree_flatten(x, is_leaf=lambda y: y.__class__ is Tensor)
            r = jax.tree_util.tree_unflatten(treedef, [walk(v) for v in leaves])
        else:
            return x
        memo[id(x)] = r  # ``x`` stays alive in the caller's object: its id is not reused meanwhile
        return r

    return walk(obj)
