"""Data parallelism over several devices of one process: :func:`replicate` and :func:`shard_batch`.

The Learner's ``MultiDevice`` strategy on jax (ARCHITECTURE.md, "Distributed training"): the model and optimizer are
replicated on every device, each batch is split along dim 0 (a ``NamedSharding`` over a 1-D ``Mesh`` with axis
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

import dataclasses
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from ember import BackendError, Device, ShapeError, Tensor
from ember.module import Module, Param, RunningState
from ember.optim import GradientsParams, Optimizer

from ._array_backend import JaxArrayBackend

__all__ = ["mesh", "process_mesh", "replicate", "shard_batch", "to_local", "put", "BATCH_AXIS"]

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
    handles = []
    for d in devices:
        if not isinstance(d, Device) or not isinstance(d.inner.backend, JaxArrayBackend):
            raise BackendError(f"ember_jax: expected jax devices (ember.backend('jax').devices()), got {d!r}.")
        handles.append(d.inner.handle)
    if not handles or len(set(handles)) != len(handles):
        raise BackendError(f"ember_jax: expected distinct jax devices, at least one, got {list(devices)!r}.")
    key = tuple(handles)
    m = _MESHES.get(key)
    if m is None:
        m = _MESHES[key] = Mesh(np.array(handles, dtype=object), (BATCH_AXIS,))
    return m


def process_mesh(device: Any = None) -> Mesh:
    """The 1-D ``Mesh`` (axis ``"batch"``) of a multi-process run (``jax.distributed``): one device per process,
    in process order, the device at ``device``'s local index in each (default: this process's first device of
    the default platform). With one process it is the mesh of ``device`` alone. The collectives engine
    (:mod:`ember_jax._collectives`) and a ``DistributedDataParallel`` step compiled as one program share it.

    ``device`` is an Ember jax device (an autodiff one stands for its inner device) or a jax device of this
    process.

    Raises:
        BackendError: ``device`` belongs to another process, or another process lacks a device at its local
            index (use the same local device index on every rank).
    """
    if device is None:
        handle = jax.local_devices()[0]
    elif isinstance(device, Device):
        handle = device.inner.handle
    else:
        handle = device
    if handle.process_index != jax.process_index():
        raise BackendError(f"ember_jax: the device {handle} belongs to another process; pass one of this process's.")
    index = [d for d in jax.local_devices() if d.platform == handle.platform].index(handle)
    per_process: dict[int, list[Any]] = {}
    for d in jax.devices(handle.platform):
        per_process.setdefault(d.process_index, []).append(d)
    try:
        handles = [sorted(per_process[p], key=lambda d: d.id)[index] for p in sorted(per_process)]
    except IndexError:
        raise BackendError(
            f"ember_jax: the device {handle} is local device {index} of this process, which another process lacks; "
            "use the same local device index on every rank."
        ) from None
    key = ("processes", *handles)
    m = _MESHES.get(key)
    if m is None:
        m = _MESHES[key] = Mesh(np.array(handles, dtype=object), (BATCH_AXIS,))
    return m


def _mesh_of(devices: Sequence[Device] | Mesh) -> Mesh:
    return devices if isinstance(devices, Mesh) else mesh(devices)


def put(a: Any, sharding: NamedSharding) -> Any:
    """The jax array ``a`` placed as ``sharding`` says: ``jax.device_put`` when this process holds every device
    of the sharding; across processes (a :func:`process_mesh` sharding) each process gives its own part without
    any transfer (``jax.make_array_from_single_device_arrays``): the whole value when the sharding is
    replicated (every process must pass the same value), else its local rows of dim 0 (the global array has
    ``a.shape[0] * processes`` rows, process ``p``'s rows at block ``p``)."""
    if sharding.is_fully_addressable:
        return jax.device_put(a, sharding)
    locals_ = [d for d in sharding.mesh.devices.flat if d.process_index == jax.process_index()]
    if sharding.spec == P():
        return jax.make_array_from_single_device_arrays(a.shape, sharding, [jax.device_put(a, d) for d in locals_])
    n = len(locals_)
    parts = [a] if n == 1 else jax.numpy.split(a, n)
    shape = (a.shape[0] // n * sharding.mesh.size, *a.shape[1:])
    return jax.make_array_from_single_device_arrays(shape, sharding, [jax.device_put(x, d)
                                                                       for x, d in zip(parts, locals_)])


def _local(a: Any, rows: int | None = None) -> Any:
    """This process's view of a global array: its rows of dim 0 when split, or when replicated with ``rows`` rows
    (a per-sample result of a global batch of ``rows`` rows, which XLA chose to gather); else the value."""
    if a.is_fully_addressable:
        return a
    if not a.is_fully_replicated:
        shards = sorted(a.addressable_shards, key=lambda s: s.index[0].start or 0)
        return shards[0].data if len(shards) == 1 else jax.numpy.concatenate([s.data for s in shards])
    v = a.addressable_data(0)
    if rows is None or v.ndim == 0 or v.shape[0] != rows:
        return v
    m = getattr(a.sharding, "mesh", None)
    order = list(m.devices.flat) if m is not None else sorted(a.sharding.device_set,
                                                               key=lambda d: (d.process_index, d.id))
    mine = [i for i, d in enumerate(order) if d.process_index == jax.process_index()]
    block = rows // len(order)
    return v[mine[0] * block:(mine[-1] + 1) * block]


def to_local(obj: Any, rows: int | None = None) -> Any:
    """``obj`` (as for :func:`replicate`) with each array spread over several processes replaced by this
    process's part: the value of a replicated one (the trained parameters, a loss), this process's rows of one
    split along dim 0 (a step's outputs for its local batch). Arrays this process holds whole are kept.

    ``rows``: the global batch's rows; a replicated array with that many rows in dim 0 (a step's per-sample
    output, which XLA may gather on every process) gives this process's block of them too."""
    return _place(obj, lambda a: _local(a, rows))


def replicate(obj: Any, devices: Sequence[Device] | Mesh) -> Any:
    """``obj`` with every tensor replicated on all ``devices`` (a copy of the values on each).

    ``obj`` is anything whose tensors jax can reach (:mod:`ember_jax._pytree`): a ``Tensor``, a ``Module``, an
    ``Optimizer`` (its per-parameter state), ``GradientsParams``, or dataclasses, tuples, namedtuples, lists and
    dicts of them. Parameter
    ids, tracking and the structure are kept; the tensors' Ember device is unchanged.

    ``devices`` may also be a ``Mesh``: :func:`process_mesh` replicates over the processes of a multi-process
    run (each process gives its own copy, which must be equal on all: e.g. after broadcasting from rank 0).

    Returns:
        A new object of the same structure (an optimizer comes back as a new optimizer: use the returned one).

    Raises:
        BackendError: ``devices`` is not a list of distinct jax devices.
    """
    sharding = NamedSharding(_mesh_of(devices), P())
    return _place(obj, lambda a: put(a, sharding))


def shard_batch(tensor: Any, devices: Sequence[Device] | Mesh) -> Any:
    """``tensor`` split along dim 0 over ``devices``: device ``i`` holds rows
    ``[i * n / len(devices), (i + 1) * n / len(devices))`` of ``[n, ...]``.

    ``tensor`` may also be a tuple, list or dict of tensors (each split alike); wrap a dataclass batch's
    fields yourself (``Batch(shard_batch(b.x, devices), shard_batch(b.y, devices))``).

    With ``devices`` a :func:`process_mesh` (a multi-process run), ``tensor`` is this process's local batch
    ``[n, ...]`` and the result the global batch ``[n * processes, ...]`` whose block ``p`` is process ``p``'s
    (every process must pass the same ``n``); no data moves.

    Raises:
        ShapeError: a tensor of rank 0, or whose dim 0 is not a multiple of ``len(devices)`` (drop the last
            partial batch, or pad it).
        BackendError: ``devices`` is not a list of distinct jax devices.
    """
    m = _mesh_of(devices)
    sharding = NamedSharding(m, P(BATCH_AXIS))
    n = len([d for d in m.devices.flat if d.process_index == jax.process_index()])

    def put_rows(a: Any) -> Any:
        if a.ndim == 0 or a.shape[0] % n:
            raise ShapeError(
                f"shard_batch: dim 0 of a tensor of shape {list(a.shape)} must be a multiple of the {n} devices"
                f"{' of this process' if m.is_multi_process else ''}; "
                "drop the last partial batch (DataLoader drop_last) or pad it."
            )
        return put(a, sharding)

    return _place(tensor, put_rows)


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
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):  # a step's item (ClassificationOutput)
            r = dataclasses.replace(x, **{f.name: walk(getattr(x, f.name)) for f in dataclasses.fields(x) if f.init})
        elif isinstance(x, tuple) and hasattr(x, "_fields"):
            r = c(*(walk(v) for v in x))
        else:
            return x
        memo[id(x)] = r  # ``x`` stays alive in the caller's object: its id is not reused meanwhile
        return r

    return walk(obj)
