"""The order of a compiled step's outputs that lets XLA update donated buffers in place.

jax pairs each donated input buffer with an output of the same shape and dtype: per (shape, dtype), the donated
inputs in input order with the outputs in output order, first come first served (``jax._src.interpreters.mlir``,
``_set_up_aliases``). Nothing says which output is the input's new value, so when the order differs, the buffer of
a donated parameter goes to, say, the new Adam moment of the same shape. That parameter's old value is still read
by its own update after the moment is written, so XLA copies the buffers first: with ResNet-18's model and Adam
state donated (the Learner's step on accelerators) the optimized program held 325 copies, against 61 with the
outputs in the inputs' order (raw ``jax.jit``'s program: 60, XLA's own copies of parameters read before their
update), and its step took 118.5 ms against 112.2 ms on the CPU; on a GPU each copy is a kernel launch
(``bench/jax_programs.py --donate``, ``bench/README.md``).

:func:`reserve_donated` gives each donated input's new value its output position first, in the inputs' order,
before the results are walked (:class:`~._out.OutWalk` numbers outputs as they are first met).
"""

from __future__ import annotations

from typing import Any

from ember import Tensor
from ember.backend.contract import AutodiffPrimitive
from ember.backend.step_tree import Flat, Rebuild

from ._in_place import pair_donated_modules, pair_module
from ._out import OutWalk, pair_states

__all__ = ["reserve_donated"]


def _array(t: Any) -> Any:
    p = t.primitive
    return p.p if p.__class__ is AutodiffPrimitive else p


def reserve_donated(ow: OutWalk, result: Any, args: tuple[Any, ...], fl: Flat, rb: Rebuild,
                    donated: frozenset[int], modules: frozenset[int], keys: list[tuple[int, Any]]) -> None:
    """Reserve the first output positions of ``ow`` for the new values of the donated inputs, in input order.

    Args:
        ow: the output walk of this trace, before anything else takes a position.
        result: what the step returned.
        args: the caller's positional arguments.
        fl: the caller's flatten (objects and arrays numbered).
        rb: the rebuild of the arguments (its running-state cells and optimizer stand-ins).
        donated: the input indices whose buffers are donated.
        modules: the object numbers of the donated arguments (a donated module's new value is the result module
            of its class, :func:`~._in_place.pair_donated_modules`).
        keys: ``(input index, new key array)`` of the PRNG keys the step replaced.

    What pairs with what: a donated module's tensors with those of the result module of its class
    (:func:`~._in_place.pair_module`), each optimizer's state tensors with its new ones (:func:`~._out.pair_states`),
    each running-state cell's tensor with the one the step wrote, each PRNG key with its successor. Inputs
    without a pair keep jax's order; a wrong pair costs at most a copy, never a wrong result (jax's aliasing is
    decided on shapes and dtypes only)."""
    if not donated:
        return
    new: dict[int, Any] = {}

    def pair(old: Any, t: Any) -> None:
        i = fl.pmemo.get(id(_array(old)))
        if i is not None and i in donated and i not in new and t.__class__ is Tensor:
            new[i] = _array(t)

    def take(old: Any, new_module: Any) -> bool:
        tensors: dict[int, Any] = {}
        if not pair_module(old, new_module, fl.memo, {}, tensors):
            return False
        for n, t in tensors.items():
            pair(fl.objs[n], t)
        return True

    pair_donated_modules(result, args, fl.memo, modules, take)
    for n, cell, _initial in rb.cells:
        pair(fl.objs[n]._tensor, cell._tensor)
    for n, o in rb.optims:
        states: dict[int, Any] = {}
        if pair_states(fl.objs[n]._states, o._states, fl.memo, states, {}):
            for m, t in states.items():
                pair(fl.objs[m], t)
    for i, k in keys:
        if i in donated:
            new.setdefault(i, k)
    for i in sorted(new):
        ow.leaf(new[i])
