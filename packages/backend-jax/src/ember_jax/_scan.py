"""What a new argument structure holds, found once per structure: its devices (checked to be jax's), the jax
backends whose PRNG keys the call threads, what can be donated, and the path of a bad argument for errors."""

from __future__ import annotations

import dataclasses
from typing import Any

from ember import BackendError
from ember.backend import Device
from ember.backend.step_tree import (
    ALIAS,
    ARRAY,
    DCLASS,
    DICT,
    GRADS,
    MODULE,
    OPTIM,
    PARAM,
    REF,
    RSTATE,
    SEQ,
    STATIC,
    STATIC_ID,
    TENSOR,
    dc_fields,
)
from ember.module import Module, Param, RunningState
from ember.optim import GradientsParams, Optimizer

from ._devices import ForeignTensor, device_info

__all__ = ["Scan", "locate", "foreign_error"]


class Scan:
    """What a new structure holds, found by walking it once in flatten order: the devices (checked to be jax's
    by :meth:`backends`), and for donation the region of every leaf and object: ``("state", a)`` inside an
    optimizer's per-parameter state of top-level argument ``a``, ``("arg", a)`` elsewhere under argument ``a``
    (keyword arguments numbered -1, -2, ...), plus the back-references (``REF`` / ``ALIAS``), the running-state
    cells, the optimizers and the static values."""

    def __init__(self) -> None:
        self.devices: dict[Device, None] = {}
        self.obj_region: list[tuple[str, int]] = []
        self.leaf_region: list[tuple[str, int]] = []
        self.cells: list[int] = []
        self.optims: list[int] = []  # object numbers of the optimizers (their state is always written back)
        self.statics: list[Any] = []  # the static values met (checked for Ember objects they might freeze)
        self.links: list[tuple[str, int, tuple[str, int]]] = []  # ("obj" | "leaf", target, region of the link)
        self._region = ("arg", 0)

    def run(self, args_node: Any, kwargs_node: Any) -> None:
        for a, node in enumerate(args_node[2]):
            self._region = ("arg", a)
            self.visit(node)
        for i, node in enumerate(kwargs_node[3] if kwargs_node is not None else ()):
            self._region = ("arg", -1 - i)  # keyword arguments: never one of the donate_argnums (>= 0)
            self.visit(node)

    def _obj(self) -> None:
        self.obj_region.append(self._region)

    def visit(self, node: Any) -> None:  # noqa: C901 - one branch per tag
        tag = node[0]
        if tag == TENSOR or tag == ALIAS:
            self.devices[node[1]] = None
            self._obj()
            if tag == TENSOR:
                self.leaf_region.append(self._region)
            else:
                self.links.append(("leaf", node[4], self._region))
        elif tag == REF:
            self.links.append(("obj", node[1], self._region))
        elif tag == PARAM:
            self._obj()
            self.visit(node[3])
        elif tag == RSTATE:
            self.cells.append(len(self.obj_region))
            self._obj()
            self.visit(node[2])
        elif tag == MODULE:
            self._obj()
            for c in node[2]:
                self.visit(c)
        elif tag == OPTIM:
            self.optims.append(len(self.obj_region))
            self._obj()
            outer = self._region
            self._region = ("state", outer[1])
            for _pid, c in node[3]:
                self.visit(c)
            self._region = outer
        elif tag == GRADS:
            self._obj()
            for _pid, c in node[1]:
                self.visit(c)
        elif tag == SEQ or tag == DCLASS:
            for c in node[2]:
                self.visit(c)
        elif tag == DICT:
            for c in node[3]:
                self.visit(c)
        elif tag == STATIC:
            self.statics.append(node[2])
        elif tag == STATIC_ID:
            self.statics.append(node[1].obj)
        elif tag == ARRAY:
            if node[4] == len(self.leaf_region):
                self.leaf_region.append(self._region)
            else:
                self.links.append(("leaf", node[4], self._region))

    def backends(self) -> tuple[Any, ...]:
        """The jax backends of the devices met, in order.

        Raises:
            ForeignTensor: a device of another backend (``obj`` is ``None``; the caller locates the tensor).
        """
        out: dict[Any, None] = {}
        for dev in self.devices:
            out[device_info(dev)[1]] = None
        return tuple(out)

    def donation(self, state: bool, args: frozenset[int]) -> tuple[tuple[int, ...], frozenset[int], tuple[int, ...]]:
        """``(donated leaf indices, object numbers that must not be handed back as they are, cells to write back
        always)`` for donating the optimizer states (``state``) and the top-level arguments ``args``.

        Nothing is donated when an object or array of a donated region is also reachable from a region that is
        not donated (it would be deleted under the other owner's feet)."""
        def donated(region: tuple[str, int]) -> bool:
            return region[1] in args or (state and region[0] == "state")

        if not state and not args:
            return (), frozenset(), ()
        for kind, target, region in self.links:
            target_region = self.obj_region[target] if kind == "obj" else self.leaf_region[target]
            if donated(target_region) and not donated(region):
                return (), frozenset(), ()
        leaves = tuple(i for i, r in enumerate(self.leaf_region) if donated(r))
        cells = tuple(n for n in self.cells if donated(self.obj_region[n]))
        # an optimizer passed in a donated argument is still the caller's object: its state is written back
        keep_out = frozenset(n for n, r in enumerate(self.obj_region) if donated(r)) - frozenset(cells) - frozenset(
            self.optims)
        return leaves, keep_out, cells


# ---------------------------------------------------------------------- error paths
def locate(root: Any, target: Any, path: str = "") -> str | None:
    """The path of ``target`` (by identity) under ``root`` (``"args[1].layers[0].weight"``), for error messages."""
    if root is target:
        return path
    if isinstance(root, (Param, RunningState)):
        return locate(root._tensor, target, path)
    if isinstance(root, Module):
        items: list[tuple[str, Any]] = [(f".{f}", getattr(root, f)) for f in root.__class__.__ember_fields__]
    elif isinstance(root, Optimizer):
        items = [(f"._states[{k}]", v) for k, v in root._states.items()]
    elif isinstance(root, GradientsParams):
        items = [(f"[{k}]", v) for k, v in root._grads.items()]
    elif isinstance(root, dict):
        items = [(f"[{k!r}]", v) for k, v in root.items()]
    elif isinstance(root, (list, tuple)):
        items = [(f"[{i}]", v) for i, v in enumerate(root)]
    elif dataclasses.is_dataclass(root) and not isinstance(root, type):
        items = [(f".{f}", getattr(root, f)) for f in dc_fields(root.__class__)]
    else:
        return None
    for suffix, v in items:
        found = locate(v, target, path + suffix)
        if found is not None:
            return found
    return None


def foreign_error(exc: ForeignTensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> BackendError:
    """The BackendError for a tensor of another backend met among the arguments (its path named)."""
    t = exc.obj
    where = locate(args, t, "args") or locate(kwargs, t, "kwargs")
    dev = getattr(t, "device", None)
    name = dev.backend.name if dev is not None else "?"
    return BackendError(
        f"ember_jax.jit: {where or 'an argument'} is a tensor on {dev} (the {name!r} backend); a compiled step "
        "takes tensors of the jax backend (or Autodiff(jax)) only. Move it first with "
        "tensor.to_device(jax_device) (a module: module.to_device(jax_device)), or run the step eagerly."
    )
