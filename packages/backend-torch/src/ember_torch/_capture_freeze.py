"""Inference steps compiled with inductor's ``freezing`` (``ember_torch.compile(..., options={"freezing": True})``,
issue 32): the step's weights become constants of the compiled graph.

A captured graph takes every tensor of the arguments as an input, weights included; inductor's freezing folds
only the parameters and buffers of the module it compiles, and only when dynamo traces that module with
``torch._inductor.config.freezing`` on and autograd off (``torch._dynamo.utils.is_parameter_freezing``). Here the
weights' placeholders of the captured graph become ``get_attr`` nodes of a new ``GraphModule`` whose buffers are the
weights (:func:`frozen_graph`); :class:`FrozenRun` compiles that module and runs it with freezing on and autograd
off. Inductor then constant-folds what depends on the weights only, prepacks the convolution and linear weights
for oneDNN / MKL (``mkldnn._convolution_pointwise`` with the following ReLU/hardswish fused, ``mkl._mkl_linear``)
and picks channels-last layouts for the convolutions (``torch._inductor.freezing``).

Which leaves are weights (:func:`weight_leaves`): the values of the ``Param`` s and ``RunningState`` s among the
arguments that are plain tensors of the torch backend (not ``Autodiff`` tensors: a parameter being trained stays
an input), in a step that writes no state back (no optimizer, no new running state: an inference step). The
constants are the tensors of the call that compiled; each later call checks that the same tensor objects, not
changed in place (``Tensor._version``), are still there, and compiles again around the new ones if not (a model
with new weights: tens of seconds, as the first call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ember import Tensor
from ember.backend.contract import AutodiffPrimitive as AP
from ember.backend.step_tree import Flat
from ember.module import Param, RunningState

__all__ = ["weight_leaves", "frozen_graph", "FrozenRun"]


def weight_leaves(fl: Flat) -> list[int]:
    """The indices in ``fl.leaves`` of the plain (non-``Autodiff``) tensor values of the ``Param`` s and
    ``RunningState`` s walked in ``fl`` (a complete walk: its ``pmemo`` maps every leaf)."""
    out: set[int] = set()
    for o in fl.objs:
        c = o.__class__
        if c is not Param and c is not RunningState:
            continue
        t = o._tensor
        if t.__class__ is not Tensor or t.primitive.__class__ is AP:
            continue
        i = fl.pmemo.get(id(t.primitive))
        if i is not None:
            out.add(i)
    return sorted(out)


def frozen_graph(gm: torch.fx.GraphModule, weights: dict[int, torch.Tensor]) -> torch.fx.GraphModule:
    """A copy of ``gm`` whose placeholders at the positions of ``weights`` (placeholder index -> tensor) read
    buffers of the new module instead (``get_attr``); the other placeholders stay, in their order."""
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    attrs: dict[str, Any] = {}
    k = 0
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            if k in weights:
                name = f"_ember_weight{k}"
                attrs[name] = weights[k]
                env[node] = graph.get_attr(name)
            else:
                env[node] = graph.placeholder(node.name)
            env[node].meta = dict(node.meta)
            k += 1
            continue
        if node.op == "get_attr":
            attrs[node.target] = _get_attr(gm, node.target)
        env[node] = graph.node_copy(node, env.__getitem__)
    return torch.fx.GraphModule(attrs, graph)


def _get_attr(gm: torch.nn.Module, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


class FrozenRun:
    """Runs a captured graph compiled with its weights as constants; called with all the leaves, as the graph.

    Args:
        gm: the captured graph.
        weights: the indices of the weight leaves (:func:`weight_leaves`).
        leaves: the leaves of the call that compiles (their weights are the constants).
        compile_fn: ``torch.compile`` with the step's options, applied to the frozen module.

    Attributes:
        compiles: how many times the weights were frozen (1, plus one per change of weights).
    """

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        weights: list[int],
        leaves: list[Any],
        compile_fn: Callable[[torch.nn.Module], Callable[..., Any]],
    ) -> None:
        self.gm = gm
        self.weights = weights
        wset = set(weights)
        self.dynamic = [i for i in range(len(leaves)) if i not in wset]
        self.compile_fn = compile_fn
        self.compiles = 0
        self._freeze(leaves)

    def _freeze(self, leaves: list[Any]) -> None:
        self.held = [leaves[i] for i in self.weights]
        self.versions = [t._version for t in self.held]
        self.fn = self.compile_fn(frozen_graph(self.gm, {i: leaves[i] for i in self.weights}))
        self.fresh = True
        self.compiles += 1

    def __call__(self, *leaves: Any) -> Any:
        held = self.held
        for j, i in enumerate(self.weights):
            t = leaves[i]
            if t is not held[j] or t._version != self.versions[j]:
                self._freeze(list(leaves))
                break
        dynamic = [leaves[i] for i in self.dynamic]
        if self.fresh:
            # the call that traces: dynamo makes the module's buffers graph attributes only with the flag on (the
            # flag costs ~30 us per call, so later calls run without it; autograd stays off, a guard of the graph)
            from torch._inductor import config

            with torch.no_grad(), config.patch(freezing=True):
                out = self.fn(*dynamic)
            self.fresh = False
            return out
        with torch.no_grad():
            return self.fn(*dynamic)
