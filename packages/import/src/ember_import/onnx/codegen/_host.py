"""The backend a generation traces on.

The trace computes every value of the model on the host (:func:`~.._program.host_device`, Ember's numpy
backend), so a model with an element type numpy lacks (bfloat16) could not be traced there although the backends
its generated code runs on may have it. Such a model is traced on the first installed CPU backend that has the
type (torch; :func:`~.._program.host_override`). The generated code is the same whichever backend traced
it: it is the converters' Tensor-API calls, recorded; the host only gives the trace its concrete shapes, dtypes
and the values folded into constants (computed as the runtime computes them on the device it runs on).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

import ember
from ember.backend import Device

from .._program import host_device, host_override
from ._errors import ModelGenError

__all__ = ["HostDTypeError", "on_a_host"]

T = TypeVar("T")

#: the backends tried, in order, when numpy's lacks an element type of the model (not jax: its int64 needs x64
#: mode, a process-wide switch)
_WIDER = ("torch",)


class HostDTypeError(ModelGenError):
    """The backend tracing the model lacks one of its element types."""


def _wider_hosts() -> Iterator[Device]:
    for name in _WIDER:
        try:
            dev = ember.backend(name).device("cpu")
        except Exception:  # noqa: BLE001 - a backend that is not installed is skipped
            continue
        yield dev


def on_a_host(run: Callable[[], T]) -> tuple[T, Device]:
    """``run()`` on the numpy host, else (on :class:`HostDTypeError`) on the first wider CPU backend where it
    succeeds. Returns its result and the host it ran on.

    Raises:
        HostDTypeError: no installed backend has every element type of the model (the numpy host's message).
    """
    try:
        return run(), host_device()
    except HostDTypeError as exc:
        first = exc
    for dev in _wider_hosts():
        with host_override(dev):
            try:
                return run(), dev
            except HostDTypeError:
                continue
    raise first
