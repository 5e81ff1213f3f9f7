"""Collectives on ``torch.distributed``: gloo on CPU, nccl on CUDA (the engine of
:mod:`ember.distributed` for the torch backend, and for the numpy backend through zero-copy views).

The engine is chosen by the group's device: a CUDA device (``ember.backend("torch").device("cuda:1")``)
gives nccl, after ``torch.cuda.set_device`` (one GPU a process: pass ``cuda:{local_rank}``); anything
else gives gloo. The rendezvous is ``tcp://MASTER_ADDR:MASTER_PORT``, torchrun's. If
``torch.distributed`` is already initialized (by the user or a launcher) with the same rank and
world size, the engine uses that default group and leaves it alone on ``destroy``.

Element types: gloo (2.13) reduces float64/32/16, bfloat16, int64/32/8, uint8 and bool, but not
int16 (``Invalid scalar type``); int16, uint16 and uint32 are reduced in a wider int type and cast
back (wrapping as the narrow type would), uint64 as its int64 bits. ``broadcast`` and ``all_gather``
move any other type as its bytes. The nccl path is written to the same rules but is not tested on
this project's CPU-only machines.

``all_reduce_async`` (``supports_async``) launches ``dist.all_reduce(..., async_op=True)`` and returns
at once: gloo reduces on its own threads, nccl on its stream, so a data-parallel step overlaps the
gradient reduction with the rest of the backward pass; the synchronous ``all_reduce`` is the same
launch followed by ``wait()``.

Subclasses convert primitives to torch tensors and back (:meth:`_torch`, :meth:`_back`): the numpy
backend's engine (``ember_numpy._collectives``) is this class on ``torch.from_numpy`` views.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from ember import CollectiveError
from ember.backend import Backend, Collectives, Device, Work

__all__ = ["TorchDistributedCollectives"]

#: element types gloo and nccl reduce, broadcast and gather natively
_NATIVE = frozenset({torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32,
                     torch.int8, torch.uint8, torch.bool})
#: the types ``all_reduce`` reduces in a wider one (sums wrap modulo 2**bits when cast back, like the narrow type)
_WIDER = {torch.int16: torch.int32, torch.uint16: torch.int32, torch.uint32: torch.int64}


def _as_bytes(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).view(torch.uint8)


class _TorchWork(Work):
    """A ``torch.distributed`` work handle; ``finish()`` turns the reduced buffer into the result."""

    __slots__ = ("_work",)

    def __init__(self, work: Any, finish: Callable[[], Any]) -> None:
        super().__init__(finish)
        self._work = work

    def wait(self) -> Any:
        if not self._done:
            self._work.wait()
        return super().wait()


class TorchDistributedCollectives(Collectives):
    """The ``torch.distributed`` engine on torch primitives (see the module docstring)."""

    supports_async = True

    def __init__(self) -> None:
        self.engine = "gloo"
        self._owns = False
        self._device_ids: list[int] | None = None

    # ---- conversions (overridden by the numpy engine)
    def _torch(self, p: Any, copy: bool) -> torch.Tensor:
        """A contiguous torch tensor with ``p``'s values; a fresh one the engine may write when ``copy``."""
        return p.clone(memory_format=torch.contiguous_format) if copy else p.contiguous()

    def _back(self, t: torch.Tensor) -> Any:
        """The primitive holding ``t``'s values (no copy)."""
        return t

    # ---- group
    def init(self, *, rank: int, world_size: int, local_rank: int, master_addr: str, master_port: int,
             timeout: float, backend: Backend, device: Device | None) -> Device:
        if device is None:
            device = backend.device()
        if not dist.is_available():
            raise CollectiveError("this torch build has no torch.distributed; install a torch wheel that has it.")
        handle = device.handle
        cuda = isinstance(handle, torch.device) and handle.type == "cuda"
        self.engine = "nccl" if cuda else "gloo"
        available = dist.is_nccl_available() if cuda else dist.is_gloo_available()
        if not available:
            raise CollectiveError(
                f"torch.distributed in this torch build has no {self.engine} engine, needed for collectives on "
                f"{device}; install a torch build with it."
            )
        if dist.is_initialized():
            found = (dist.get_rank(), dist.get_world_size())
            if found != (rank, world_size):
                raise CollectiveError(
                    f"torch.distributed is already initialized as rank {found[0]} of {found[1]}, but the group asked "
                    f"for rank {rank} of {world_size}; destroy it (torch.distributed.destroy_process_group()) or "
                    "ask for the same rank and world size."
                )
            self.engine = dist.get_backend()
            self._owns = False
        else:
            host = f"[{master_addr}]" if ":" in master_addr else master_addr
            kwargs: dict[str, Any] = {}
            if cuda:
                torch.cuda.set_device(handle)
                kwargs["device_id"] = handle
                self._device_ids = [handle.index if handle.index is not None else torch.cuda.current_device()]
            dist.init_process_group(backend=self.engine, init_method=f"tcp://{host}:{master_port}", rank=rank,
                                    world_size=world_size, timeout=datetime.timedelta(seconds=timeout), **kwargs)
            self._owns = True
        return device

    def destroy(self) -> None:
        if self._owns and dist.is_initialized():
            dist.destroy_process_group()
        self._owns = False

    # ---- collectives
    def all_reduce(self, p: Any, *, owned: bool = False) -> Any:
        return self.all_reduce_async(p, owned=owned).wait()

    def all_reduce_async(self, p: Any, *, owned: bool = False) -> Work:
        """``dist.all_reduce(..., async_op=True)``: gloo runs it on its worker threads, nccl on its stream, while
        the caller goes on (the overlap of ``ember.distributed.Bucketer``); ``wait()`` gives the sum."""
        t = self._torch(p, copy=not owned)
        if t.dtype in _NATIVE:
            return _TorchWork(dist.all_reduce(t, async_op=True), lambda: self._back(t))
        if t.dtype == torch.uint64:  # the same bits: the sum modulo 2**64 is the same
            return _TorchWork(dist.all_reduce(t.view(torch.int64), async_op=True), lambda: self._back(t))
        if t.dtype in _WIDER:
            w = t.to(_WIDER[t.dtype])

            def back() -> Any:
                t.copy_(w)  # a cast back that wraps, as the narrow type's own sum would
                return self._back(t)

            return _TorchWork(dist.all_reduce(w, async_op=True), back)
        raise CollectiveError(f"all_reduce: torch.distributed cannot reduce {t.dtype} tensors.")

    def broadcast(self, p: Any, src: int) -> Any:
        t = self._torch(p, copy=True)
        dist.broadcast(t if t.dtype in _NATIVE else _as_bytes(t), src)
        return self._back(t)

    def all_gather(self, p: Any) -> list[Any]:
        t = self._torch(p, copy=False)
        wire = t if t.dtype in _NATIVE else _as_bytes(t)
        outs = [torch.empty_like(wire) for _ in range(dist.get_world_size())]
        dist.all_gather(outs, wire)
        if wire is not t:
            outs = [o.view(t.dtype).reshape(t.shape) for o in outs]
        return [self._back(o) for o in outs]

    def barrier(self) -> None:
        if self._device_ids is not None:
            dist.barrier(device_ids=self._device_ids)
        else:
            dist.barrier()
