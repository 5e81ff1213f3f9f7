"""Random numbers in a captured step (:func:`ember_torch.compile`) without a ``torch.Generator`` in the graph.

While a step is captured, the backend's random ops (``random``, ``random_uniform``, ``random_normal``: Dropout,
``random_like`` ...) pass no generator, so the graph records ``aten.rand`` / ``aten.randn`` / ``aten.randint`` of
the device's *default* generator, and the capture notes which of the backend's generators the step draws from.
Each replay then lends the backend generator's state to the device's default generator, runs the graph, and takes
the advanced state back (the default generator gets its own state back): the replay draws exactly the numbers the
eager step would draw from the backend's generator, new ones at every call, reproducible from ``backend.seed``.

Why not the generator object itself: ``make_fx`` of torch before 2.13 refuses a ``torch.Generator`` argument
(``NotImplementedError: argument of type: <class 'torch._C.Generator'>``, seen with torch 2.11 on CUDA), and
dynamo cannot put one in its graphs, so a compiled step broke into pieces around each draw. With the default
generator the step is one graph for ``torch.compile`` (inductor's ``fallback_random`` keeps eager's numbers).

The swap is two ``get_state``/``set_state`` pairs per generator and call (16 bytes on CUDA, 5 KB of Mersenne
Twister state on the CPU: a few microseconds). A thread that draws from torch's default generator of the same
device *during* a replay on another thread interleaves with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ember import BackendError

__all__ = ["DRAWS", "note_draw", "default_generator", "lending"]

#: ``(backend generator, device)`` pairs drawn from during the capture in progress (``ember_torch.compile`` clears
#: and reads it around each capture; captures run on one thread at a time, see ``_capture_state``)
DRAWS: list[tuple[torch.Generator, torch.device]] = []


def note_draw(gen: torch.Generator, handle: torch.device) -> None:
    """Record that the step being captured draws from ``gen`` (the backend's generator of ``handle``)."""
    if not any(g is gen for g, _ in DRAWS):
        DRAWS.append((gen, handle))


def default_generator(handle: torch.device) -> torch.Generator:
    """torch's default generator of ``handle``'s device: the one ``aten.rand`` without a generator draws from.

    Raises:
        BackendError: a device type other than cpu, cuda and mps.
    """
    if handle.type == "cpu":
        return torch.default_generator
    if handle.type == "cuda":
        torch.cuda.init()
        return torch.cuda.default_generators[handle.index or 0]
    if handle.type == "mps":
        from torch import mps

        return mps._get_default_mps_generator()  # type: ignore[attr-defined,no-any-return]
    raise BackendError(f"ember_torch.compile: random numbers on a {handle.type} device are not supported in a "
                       "compiled step; run this step eagerly or on cpu/cuda/mps.")


def lending(run: Callable[..., Any], draws: list[tuple[torch.Generator, torch.device]]) -> Callable[..., Any]:
    """``run`` wrapped so that each call draws from the backend's generators in ``draws`` (see the module)."""
    pairs = [(gen, default_generator(handle)) for gen, handle in draws]

    def call(*leaves: Any) -> Any:
        saved = [d.get_state() for _, d in pairs]
        for gen, d in pairs:
            d.set_state(gen.get_state())
        try:
            return run(*leaves)
        finally:
            for (gen, d), own in zip(pairs, saved):
                gen.set_state(d.get_state())
                d.set_state(own)

    return call
