"""``ember.backend.step_tree``'s results flattened ahead by position (:func:`pool_spec`) and the shared code
generator (:class:`CodeGen`), on the numpy backend with a step tree of numpy arrays."""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor
from ember.backend.step_tree import CodeGen, Flat, StepTree, fast_spec, flatten, pool_spec
from ember.module import Module, Param, RunningState

DEV = ember.backend("numpy").device()
TREE = StepTree("test", array_types=(np.ndarray,), array_extra=lambda a: None, default_device=lambda: DEV)


class Norm(Module):
    weight: Param
    mean: RunningState


def norm() -> Norm:
    return Norm(weight=Param(Tensor.from_data(np.ones(3), DEV)), mean=RunningState(Tensor.from_data(np.zeros(3), DEV)))


def test_positions_take_what_a_walk_takes() -> None:
    m = norm()
    spec = fast_spec(TREE, m)
    assert spec is not None
    node, free, objs, leaves = spec
    # objects in walk order: the module, the Param, its tensor, the cell, its tensor
    assert [type(o).__name__ for o in objs] == ["Norm", "Param", "Tensor", "RunningState", "Tensor"]
    pool = ["padding", *reversed(objs)]  # anywhere in the pool
    arrays = [np.empty(0), *leaves]
    got = pool_spec(spec, {id(o): i for i, o in enumerate(pool)}, {id(a): i for i, a in enumerate(arrays)})
    assert got is not None
    g_node, g_free, op, lp, cp, vp = got
    assert g_node == node and g_free == free is True
    assert [pool[i] for i in op] == objs and all(arrays[i] is a for i, a in zip(lp, leaves))
    # the cell guard: the RunningState and the tensor it holds
    assert [pool[i] for i in cp] == [m.mean] and [pool[i] for i in vp] == [m.mean._tensor]
    # the structure is the one a complete walk gives
    fl = Flat(TREE)
    assert flatten(fl, m) == node and fl.objs == objs


def test_an_object_outside_the_pool_gives_none() -> None:
    m = norm()
    spec = fast_spec(TREE, m)
    assert spec is not None
    _node, _free, objs, leaves = spec
    leaves_at = {id(a): i for i, a in enumerate(leaves)}
    assert pool_spec(spec, {id(o): i for i, o in enumerate(objs[:-1])}, leaves_at) is None  # a tensor missing
    assert pool_spec(spec, {id(o): i for i, o in enumerate(objs)}, {}) is None  # the arrays missing


def test_codegen_constants_and_function() -> None:
    g = CodeGen()
    obj = object()
    assert g.const(3) == "3" and g.const("a") == "'a'" and g.const(None) == "None"
    name = g.const(obj)
    assert g.const(obj) == name and g.ns[name] is obj  # one name per object
    v = g.var()
    g.emit(f"{v} = _new(_Param); _Pid({v}, {g.const(ember.ParamId(7))}); _Prg({v}, False); _Pt({v}, t)")
    fn, src = g.function("make(t)", f"{v}, {name}", "<test>")
    t = Tensor.from_data(np.ones(2), DEV)
    p, o = fn(t)
    assert isinstance(p, Param) and p.id == ember.ParamId(7) and p.require_grad is False and p.val() is t
    assert o is obj and src.startswith("def make(t):")
