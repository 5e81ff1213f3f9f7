"""The process group: ``init_process_group`` and the handle it returns.

One group per process (the default group of ``torch.distributed``); its engine is the backend's
:class:`~ember.backend.Collectives`. Defaults come from torchrun's environment variables, so a
script launched with ``torchrun --nproc-per-node 2 train.py`` only calls ``init_process_group()``.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._errors import CollectiveError

if TYPE_CHECKING:
    from ..backend._base import Backend
    from ..backend._collectives import Collectives
    from ..backend._device import Device

__all__ = [
    "CollectiveStats",
    "ProcessGroup",
    "init_process_group",
    "destroy_process_group",
    "is_initialized",
    "get_process_group",
    "get_rank",
    "get_world_size",
    "current_group",
]


@dataclass
class CollectiveStats:
    """What went through the collectives of a group since it was created or last :meth:`reset`.

    - ``calls``: collective calls made on the engine (``all_reduce_many`` counts one per bucket;
      ``barrier`` counts one);
    - ``bytes``: bytes of tensor data this rank put into them (an ``all_reduce`` or ``broadcast``
      of an ``[n]`` float32 tensor counts ``4 n``; an ``all_gather`` counts its input, not the
      gathered result). The engine's own traffic (ring steps, headers) is not counted.
    """

    calls: int = 0
    bytes: int = 0

    def reset(self) -> None:
        """Set both counters to zero."""
        self.calls = 0
        self.bytes = 0


class ProcessGroup:
    """A handle to the process group this process belongs to (from :func:`init_process_group`).

    Attributes:
        rank: this process's rank, ``0 <= rank < world_size``.
        world_size: the number of processes in the group.
        local_rank: the rank among the processes of this machine (``LOCAL_RANK``; else ``rank``).
        backend: the Ember backend name of the group's tensors (``"torch"``, ``"numpy"``, ``"jax"``).
        engine: what runs the collectives: ``"gloo"``, ``"nccl"`` or ``"jax"``.
        timeout: seconds a rendezvous or collective may wait for the other ranks before it fails.
        device: the group's :class:`~ember.Device` (an inner device, never an autodiff one).
        stats: a :class:`CollectiveStats` of the group's collectives (``group.stats.reset()``).
    """

    __slots__ = ("rank", "world_size", "local_rank", "backend", "engine", "timeout", "device", "stats",
                 "_collectives", "_alive")

    def __init__(self, *, rank: int, world_size: int, local_rank: int, device: Device, timeout: float,
                 collectives: Collectives) -> None:
        self.rank = rank
        self.world_size = world_size
        self.local_rank = local_rank
        self.device = device
        self.backend: str = device.backend.name
        self.timeout = timeout
        self.stats = CollectiveStats()
        self._collectives = collectives
        self.engine: str = collectives.engine
        self._alive = True

    @property
    def is_alive(self) -> bool:
        """``False`` once :func:`destroy_process_group` has run on this group."""
        return self._alive

    def __repr__(self) -> str:
        state = "" if self._alive else ", destroyed"
        return (f"ProcessGroup(rank={self.rank}, world_size={self.world_size}, local_rank={self.local_rank}, "
                f"backend={self.backend!r}, engine={self.engine!r}, timeout={self.timeout}{state})")


_GROUP: ProcessGroup | None = None


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise CollectiveError(f"environment variable {name}={raw!r}: expected an integer.") from None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _resolve(backend: str | Backend | Device | None) -> tuple[Backend, Device | None]:
    """``(inner backend, device or None)``: a device only when one was given (jax must join its
    distributed run before any device is touched)."""
    from ..backend._base import Backend
    from ..backend._device import Device
    from ..backend._registry import backend as get_backend

    if backend is None or isinstance(backend, str):
        b = get_backend(backend)  # None: EMBER_BACKEND, else numpy
    elif isinstance(backend, Device):
        return backend.inner.backend, backend.inner  # an autodiff device's collectives run on its inner device
    elif isinstance(backend, Backend):
        b = backend
    else:
        raise CollectiveError(
            f"init_process_group: backend must be a backend name, a Backend, a Device or None; got "
            f"{type(backend).__name__} {backend!r}."
        )
    return (b.inner_backend if b.is_autodiff else b), None  # type: ignore[attr-defined]


def init_process_group(backend: str | Backend | Device | None = None, *, rank: int | None = None,
                       world_size: int | None = None, master_addr: str | None = None,
                       master_port: int | None = None, timeout: float = 60.0) -> ProcessGroup:
    """Join (or form) the process group of a distributed run and return its handle.

    Every process of the run calls it with its own ``rank``; it returns once all ``world_size``
    processes have met at ``master_addr:master_port`` (rank 0 hosts the rendezvous store), as
    ``torch.distributed.init_process_group`` does. Arguments default to torchrun's environment:
    ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, ``MASTER_PORT``; without them the
    group is the single process (rank 0 of 1, on a free local port).

    The engine follows the backend: ``torch`` uses ``torch.distributed`` with gloo on CPU devices
    and nccl on CUDA devices (pass the device, e.g. ``ember.backend("torch").device(f"cuda:{local_rank}")``:
    a backend name uses the backend's default device, the CPU for torch); ``numpy`` uses gloo through
    ``torch.distributed`` on zero-copy views (needs ember-backend-torch); ``jax`` uses
    ``jax.distributed`` and jax's collectives.

    Args:
        backend: a backend name, :class:`~ember.backend.Backend` or :class:`~ember.Device` (an
            autodiff one stands for its inner backend); default ``EMBER_BACKEND``, else numpy.
        rank: this process's rank (default ``RANK``, else 0).
        world_size: the number of processes (default ``WORLD_SIZE``, else 1).
        master_addr: the host of rank 0 (default ``MASTER_ADDR``, else ``127.0.0.1``).
        master_port: a free TCP port on that host (default ``MASTER_PORT``; required when
            ``world_size > 1``).
        timeout: seconds the rendezvous and each collective wait for the other ranks before
            failing (default 60), per engine: torch.distributed's gloo bounds the rendezvous and
            each collective (a ``CollectiveError`` after it, never a hang), nccl's watchdog aborts
            the process; jax bounds only the rendezvous (``jax.distributed.initialize``'s
            ``initialization_timeout``, whose expiry aborts the process rather than raise) and its
            collectives have no timeout: a rank whose peer died waits until it is stopped (run the
            ranks under a launcher that watches them, ``python -m ember_train.launch``).

    Returns:
        The :class:`ProcessGroup`, also the default group of every other function here.

    Raises:
        CollectiveError: a group is already initialized (call :func:`destroy_process_group`
            first); the backend has no collectives (the message names it and what to use instead)
            or its engine is not installed; rank / world size / port missing or out of range; the
            rendezvous failed or timed out.
        BackendError: no such backend.
    """
    global _GROUP
    if _GROUP is not None:
        raise CollectiveError(
            f"init_process_group: a process group is already initialized ({_GROUP!r}); call "
            "ember.distributed.destroy_process_group() first, or use the existing one "
            "(ember.distributed.get_process_group())."
        )
    b, dev = _resolve(backend)
    rank = rank if rank is not None else _env_int("RANK")
    world_size = world_size if world_size is not None else _env_int("WORLD_SIZE")
    if rank is None and world_size is None:
        rank, world_size = 0, 1
    if rank is None or world_size is None:
        raise CollectiveError(
            f"init_process_group: got rank={rank} and world_size={world_size}; give both (or set both RANK and "
            "WORLD_SIZE, as torchrun does)."
        )
    if world_size < 1 or not 0 <= rank < world_size:
        raise CollectiveError(
            f"init_process_group: expected world_size >= 1 and 0 <= rank < world_size, got rank={rank}, "
            f"world_size={world_size}."
        )
    if not timeout > 0:
        raise CollectiveError(f"init_process_group: timeout must be a positive number of seconds, got {timeout!r}.")
    local_rank = _env_int("LOCAL_RANK")
    if local_rank is None:
        local_rank = rank
    master_addr = master_addr or os.environ.get("MASTER_ADDR") or "127.0.0.1"
    master_port = master_port if master_port is not None else _env_int("MASTER_PORT")
    if master_port is None:
        if world_size > 1:
            raise CollectiveError(
                f"init_process_group: world_size={world_size} needs a rendezvous port on rank 0's host: pass "
                "master_port=..., set MASTER_PORT, or launch with torchrun (which sets it)."
            )
        master_port = _free_port()
    collectives = b.collectives()  # raises CollectiveError for a backend without collectives
    try:
        dev = collectives.init(rank=rank, world_size=world_size, local_rank=local_rank, master_addr=master_addr,
                               master_port=int(master_port), timeout=float(timeout), backend=b, device=dev)
    except CollectiveError:
        raise
    except Exception as exc:
        raise CollectiveError(
            f"init_process_group: the {b.name!r} backend's engine failed to form the group (rank {rank} "
            f"of {world_size} at {master_addr}:{master_port}, timeout {timeout} s): {type(exc).__name__}: {exc}. "
            "Check that every rank runs, uses the same address and port, and that the port is free."
        ) from exc
    _GROUP = ProcessGroup(rank=rank, world_size=world_size, local_rank=local_rank, device=dev,
                          timeout=float(timeout), collectives=collectives)
    return _GROUP


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Leave the process group and free its engine (default: the initialized group).

    Does nothing when no group is initialized (so it can sit in a ``finally``).

    Raises:
        CollectiveError: ``group`` is not the initialized group.
    """
    global _GROUP
    if group is not None and group is not _GROUP:
        if not group.is_alive:
            return
        raise CollectiveError(f"destroy_process_group: {group!r} is not this process's initialized group.")
    if _GROUP is None:
        return
    g, _GROUP = _GROUP, None
    g._alive = False
    g._collectives.destroy()


def is_initialized() -> bool:
    """Whether :func:`init_process_group` has run (and the group was not destroyed)."""
    return _GROUP is not None


def get_process_group() -> ProcessGroup | None:
    """The initialized group, or ``None``."""
    return _GROUP


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in ``group`` (default: the initialized group); 0 when none is initialized."""
    g = group if group is not None else _GROUP
    return 0 if g is None else g.rank


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of processes in ``group`` (default: the initialized group); 1 when none is initialized."""
    g = group if group is not None else _GROUP
    return 1 if g is None else g.world_size


def current_group(group: ProcessGroup | None, op: str) -> ProcessGroup:
    """``group``, else the initialized group, checked alive.

    Raises:
        CollectiveError: no group is initialized, or ``group`` was destroyed.
    """
    g = group if group is not None else _GROUP
    if g is None:
        raise CollectiveError(
            f"{op}: no process group is initialized; call ember.distributed.init_process_group() first "
            "(in every process of the run)."
        )
    if not g._alive:
        raise CollectiveError(f"{op}: {g!r} was destroyed; initialize a new group.")
    return g
