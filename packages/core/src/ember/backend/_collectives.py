"""Collective ops in the backend contract (ARCHITECTURE.md, "Distributed training"; after Burn's ``burn-collective``).

A backend that can run collectives sets ``supports_collectives = True`` and returns, from
:meth:`CollectiveOps.collectives`, a :class:`Collectives` engine: a thin mapping of primitives onto
an existing engine (``torch.distributed`` with gloo or nccl, ``jax.distributed`` with jax's own
collectives). Everything else (argument checks, the torchrun environment, the process-group
handle, ``mean``, bucketing, byte counts, Autodiff unwrapping) lives once in
:mod:`ember.distributed`, which is the API users call.

Engine conventions, on the backend's primitives (never ``ember.Tensor``):

- ``all_reduce`` sums element-wise over the ranks; ``broadcast`` and ``all_gather`` copy values.
  Inputs have the same shape and dtype on every rank (the caller's contract, as in
  ``torch.distributed``); the engine may hang or raise when they do not, within the group timeout.
- Results are new primitives: an input is never written, except that ``all_reduce(p, owned=True)``
  may reduce in ``p``'s own memory (the core passes ``owned=True`` for the buckets it has just
  built, saving a copy).
- Every rank calls the same collectives in the same order (the engines' rule).
- ``all_reduce_async`` launches the same sum and returns a :class:`Work` at once; ``Work.wait()``
  gives the result. An engine that can overlap (``supports_async = True``: torch.distributed with
  ``async_op=True``, on gloo's worker threads or nccl's stream) runs the collective while the
  caller computes (the backward pass of overlapped data-parallel training). The default
  (jax's multi-process engine: its collectives are compiled programs that block the caller) defers
  the synchronous ``all_reduce`` to ``wait()``: same results, no overlap. The input of an async
  reduce must not be written before ``wait()``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from .._errors import CollectiveError
from ._device import Device

__all__ = ["Collectives", "CollectiveOps", "Work"]


class Work:
    """A launched collective (torch's ``Work``): :meth:`wait` blocks until it is done and returns its
    result (a primitive). This base class is a deferred call: ``fn()`` runs at the first ``wait()``
    (the engines without asynchronous collectives); later calls return the same result."""

    __slots__ = ("_fn", "_result", "_done")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self._fn = fn
        self._result: Any = None
        self._done = False

    def wait(self) -> Any:
        """The collective's result, once it is done.

        Raises:
            Exception: whatever the engine raises (``ember.distributed`` turns it into ``CollectiveError``).
        """
        if not self._done:
            self._result = self._fn()
            self._done = True
            self._fn = _spent
        return self._result


def _spent() -> Any:  # pragma: no cover - never called: _done is set
    return None


class Collectives:
    """A backend's collective engine for one process group (one per initialized group).

    Subclasses set ``engine`` in :meth:`init` (``"gloo"``, ``"nccl"``, ``"jax"``) and implement
    every method. Instances are created by :meth:`CollectiveOps.collectives` and driven by
    :mod:`ember.distributed`; users never call them.
    """

    #: the engine that runs the collectives, set by :meth:`init`
    engine: str = "none"
    #: ``all_reduce_async`` really runs in the background (else it is deferred to ``Work.wait``)
    supports_async: bool = False

    def init(self, *, rank: int, world_size: int, local_rank: int, master_addr: str, master_port: int,
             timeout: float, backend: Any, device: Device | None) -> Device:
        """Join the group: rendezvous with the other ``world_size - 1`` processes at
        ``master_addr:master_port`` (rank 0 hosts the store), within ``timeout`` seconds.

        ``backend`` is the (inner) :class:`~ember.backend.Backend` (typed ``Any``: this op group sits below the
        ``Backend`` class that mixes it in; an engine may annotate it ``Backend``); ``device`` the group's device
        if the caller gave one (its handle may pick the engine: nccl for a CUDA device in torch), else ``None``:
        the engine takes the backend's default device, after joining (jax must join before any device exists).

        Returns:
            The group's device.

        Raises:
            CollectiveError: the engine is unavailable or the rendezvous failed.
        """
        raise NotImplementedError

    def destroy(self) -> None:
        """Leave the group and free the engine's resources (idempotent)."""
        raise NotImplementedError

    def all_reduce(self, p: Any, *, owned: bool = False) -> Any:
        """The element-wise sum of ``p`` over every rank (same shape and dtype as ``p``).

        ``owned=True``: the caller gives up ``p``, which may be reduced in place and returned.
        """
        raise NotImplementedError

    def all_reduce_async(self, p: Any, *, owned: bool = False) -> Work:
        """Launch :meth:`all_reduce` of ``p``; ``wait()`` on the result gives the sum.

        The default defers the synchronous :meth:`all_reduce` to ``wait()`` (no overlap); an engine
        with ``supports_async = True`` overrides it to start the collective now. Collectives are
        launched (and, deferred, run at ``wait()``) in the same order on every rank.
        """
        return Work(lambda: self.all_reduce(p, owned=owned))

    def broadcast(self, p: Any, src: int) -> Any:
        """Rank ``src``'s ``p`` on every rank (``p`` gives the shape and dtype elsewhere)."""
        raise NotImplementedError

    def all_gather(self, p: Any) -> list[Any]:
        """Every rank's ``p``, in rank order (``world_size`` primitives)."""
        raise NotImplementedError

    def barrier(self) -> None:
        """Return once every rank has called it."""
        raise NotImplementedError


class CollectiveOps:
    """The collectives capability of a backend (mixed into :class:`~ember.backend.Backend`)."""

    name: ClassVar[str]
    #: the backend maps collective ops onto an engine (see :meth:`collectives`)
    supports_collectives: ClassVar[bool] = False

    def collectives(self) -> Collectives:
        """A new :class:`Collectives` engine for a process group on this backend.

        The default raises: a backend without collectives says so when a distributed strategy
        asks for one.

        Raises:
            CollectiveError: the backend has no collectives (or, in a backend that has them, the
                engine's library is not installed).
        """
        from .._install import install_command

        raise CollectiveError(
            f"backend {self.name!r} has no collective ops, so it cannot run a distributed (multi-process) "
            "strategy. Use a backend that has them: 'torch' (torch.distributed: gloo on CPU, nccl on CUDA), "
            "'jax' (jax.distributed) or 'numpy' with ember-backend-torch installed (gloo: "
            f"`{install_command('ember-backend-torch')}`); or train on a single process."
        )
