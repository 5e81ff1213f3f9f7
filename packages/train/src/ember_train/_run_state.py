"""The run state a checkpoint saves beside the records so that resuming is bitwise: every random state the run uses
and the data order (ARCHITECTURE.md, "Trust").

Saved per process (under ``DistributedDataParallel`` every rank's, gathered by rank 0), as plain JSON data:

- the training backend's random generator(s) (``Backend.rng_state``: numpy's bit generator, torch's device
  generators, jax's key): dropout and every other random op of the steps;
- Python's ``random`` and numpy's global generator (``np.random``), which batchers and datasets may use;
- the training loader's shuffle seed and size: the order of an epoch is a function of the seed and the epoch
  (``DataLoader``), so the seed is what must match (a resume with another seed is reported).

Restoring states instead of replaying the skipped iterations' draws makes a mid-epoch resume exact whatever the
steps draw.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from ._app_logger import LOGGER

__all__ = ["capture", "restore_rngs", "loader_info", "check_loader"]


def _np_global_state() -> dict[str, Any]:
    st = np.random.get_state(legacy=False)
    st = dict(st)
    st["state"] = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in st["state"].items()}
    return st


def _set_np_global_state(st: dict[str, Any]) -> None:
    st = dict(st)
    st["state"] = {k: (np.asarray(v, dtype=np.uint32) if k == "key" else v) for k, v in st["state"].items()}
    np.random.set_state(st)


def capture(backend: Any) -> dict[str, Any]:
    """This process's random states: the training backend's (``None`` when it cannot save it: logged),
    Python's ``random`` and numpy's global generator."""
    name = getattr(backend, "name", type(backend).__name__)
    try:
        rng = backend.rng_state()
    except Exception as exc:  # noqa: BLE001 - e.g. a jax key spread over processes; reported
        LOGGER.warning("The checkpoint saves no random state of the %s backend (%s): a resumed run will draw other "
                       "random numbers than an uninterrupted one.", name, exc)
        rng = None
    else:
        if rng is None:
            LOGGER.info("The %s backend cannot save its random state (Backend.rng_state): random ops of a resumed "
                        "run will differ from an uninterrupted run's.", name)
    version, internal, gauss = random.getstate()
    return {"backend": name, "rng": rng, "python": [version, list(internal), gauss], "numpy": _np_global_state()}


def restore_rngs(backend: Any, state: dict[str, Any], which: str) -> None:
    """Restore what :func:`capture` saved: ``which`` is ``"backend"`` (the backend's generators only), ``"host"``
    (Python's and numpy's global generators) or ``"all"``."""
    if which in ("backend", "all") and state.get("rng") is not None:
        backend.set_rng_state(state["rng"])
    if which in ("host", "all"):
        py = state.get("python")
        if py is not None:
            random.setstate((py[0], tuple(py[1]), py[2]))
        if state.get("numpy") is not None:
            _set_np_global_state(state["numpy"])


def loader_info(loader: Any) -> dict[str, Any]:
    """What fixes the training data's order: the shuffle seed and the numbers of batches and items."""
    info: dict[str, Any] = {}
    for name in ("seed", "num_items", "global_batch_size"):
        v = getattr(loader, name, None)
        v = v() if callable(v) else v
        if v is None or isinstance(v, (int, str)):
            info[name] = v
    if hasattr(loader, "__len__"):
        info["batches"] = len(loader)
    return info


def check_loader(saved: dict[str, Any], loader: Any, note: Any) -> None:
    """Report (``note(text)``: a warning) when the training loader's order differs from the checkpoint's."""
    if not saved:
        return
    now = loader_info(loader)
    # (another batch size or number of ranks keeps the order: the Learner skips the items already trained on)
    diff = [f"{k} {saved[k]!r} then, {now[k]!r} now" for k in ("seed", "num_items")
            if k in saved and k in now and saved[k] != now[k]]
    if diff:
        note("Warning: the training data loader differs from the checkpoint's (" + "; ".join(diff) + "): the resumed "
             "run visits other items in another order than an uninterrupted run would. Resume with the loader "
             "the checkpoint was written with for an identical run.")
