"""The arguments of a compiled step flattened into (leaves, hashable structure): :func:`flatten`, the hot path of
every compiled call, on every backend."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ..._tensor_data import TensorData
from ...autodiff._graph import AutodiffPrimitive as AP
from ...module import Param, RunningState
from ...optim import GradientsParams, Optimizer
from ...tensor import Tensor
from ._flat import Flat, rewind
from ._kinds import (
    ALIAS,
    ARRAY,
    DCLASS,
    DICT,
    GRADS,
    MODULE,
    NONE,
    OPTIM,
    PARAM,
    REF,
    RSTATE,
    SEQ,
    STATIC,
    TENSOR,
    StepTree,
    dc_fields,
    static_key,
)
from ._states import normalize_states

__all__ = ["flatten", "flatten_seq", "flatten_dict", "flatten_state"]

Handler = Callable[["Flat", Any], Any]


def _enter(fl: Flat, x: Any) -> Any:
    """Number ``x`` (its first visit: ``None``) or its back-reference ``(REF, n)`` when already walked."""
    memo = fl.memo
    n = memo.get(id(x))
    if n is not None:
        return (REF, n)
    memo[id(x)] = len(fl.objs)
    fl.objs.append(x)
    return None


# The structure of a tensor names its device, kind and tracking flag (0 plain, 1 untracked autodiff, 2 tracked)
# and either the shape and dtype of a new leaf or the index of an earlier leaf holding the same array. Whether the
# devices belong to the backend is for the backend to check, once per new structure.
def flatten(fl: Flat, x: Any) -> Any:
    """The structure of ``x``; its leaves are appended to ``fl.leaves`` and its objects to ``fl.objs``."""
    h = fl.h.get(x.__class__)
    if h is None:
        h = _classify(fl.tree, x.__class__)
    return h(fl, x)


def _f_tensor(fl: Flat, t: Any) -> Any:
    memo = fl.memo
    k = id(t)
    n = memo.get(k)
    if n is not None:
        return (REF, n)
    objs = fl.objs
    memo[k] = len(objs)
    objs.append(t)
    p = t.primitive
    if p.__class__ is AP:
        flag = 1 if p.node is None else 2
        p = p.p
    else:
        flag = 0
    pm = fl.pmemo
    j = pm.get(id(p))
    if j is not None:
        return (ALIAS, t.device, t.kind, flag, j)
    leaves = fl.leaves
    pm[id(p)] = len(leaves)
    leaves.append(p)
    return (TENSOR, t.device, t.kind, flag, p.shape, p.dtype)


def _f_value(fl: Flat, t: Any) -> Any:
    """The structure of a parameter's value: a tensor, or another object a Param may hold (an
    ``ember.quantization.QuantizedTensor``, a dataclass of tensors)."""
    return _f_tensor(fl, t) if t.__class__ is Tensor else flatten(fl, t)


def _f_param(fl: Flat, x: Param) -> Any:
    ref = _enter(fl, x)
    if ref is not None:
        return ref
    return (PARAM, x.id._value, x.require_grad, _f_value(fl, x._tensor))


def _f_state(fl: Flat, x: RunningState) -> Any:
    ref = _enter(fl, x)
    if ref is not None:
        return ref
    return (RSTATE, x.id._value, _f_tensor(fl, x._tensor))


_FIELDS_MISSING = object()
_is = operator.is_
_cell_value = operator.attrgetter("_tensor")


def _f_module(fl: Flat, m: Any) -> Any:
    memo = fl.memo
    k = id(m)
    n = memo.get(k)
    if n is not None:
        return (REF, n)
    objs = fl.objs
    fast = fl.fast
    if fast is not None:
        c = fast.get(k)
        if (c is not None and c[0] is m and (c[2] or (not objs and not fl.leaves))
                and (not c[5] or all(map(_is, map(_cell_value, c[5]), c[6])))):
            memo[k] = len(objs)
            if fl.own and not objs and not fl.leaves:  # the first argument: its lists become the walk's own
                fl.objs = c[3] if c[3].__class__ is list else list(c[3])
                fl.leaves = c[4] if c[4].__class__ is list else list(c[4])
            else:
                objs.extend(c[3])
                fl.leaves.extend(c[4])
            fl.hits += 1
            return c[1]
    memo[k] = len(objs)
    objs.append(m)
    cls = m.__class__
    d = m.__dict__
    hs = fl.h
    out: list[Any] = []
    for f in cls.__ember_fields__:
        v = d.get(f, _FIELDS_MISSING)
        if v is _FIELDS_MISSING:
            v = getattr(m, f)
        c = v.__class__
        if c is Param:  # inlined _f_param: most fields of most modules
            k = id(v)
            n = memo.get(k)
            if n is not None:
                out.append((REF, n))
                continue
            memo[k] = len(objs)
            objs.append(v)
            out.append((PARAM, v.id._value, v.require_grad, _f_value(fl, v._tensor)))
            continue
        h = hs.get(c)
        if h is None:
            h = _classify(fl.tree, c)
        out.append(h(fl, v))
    return (MODULE, cls, tuple(out))


class _Normalize(Exception):
    """Internal: an optimizer state holds a Python number or TensorData (normalize, then flatten again)."""


def _f_optim(fl: Flat, o: Optimizer) -> Any:
    ref = _enter(fl, o)
    if ref is not None:
        return ref
    objs = fl.objs
    k = id(o)
    d = o.__dict__
    attrs = tuple([(a, static_key(v)) for a, v in d.items() if a != "_states"])
    fast = fl.fast
    if fast is not None:
        c = fast.get(k)
        if (c is not None and c[0] is o and c[1] is o._states and _same_values(o._states, c[2])
                and (c[6] is None or c[6] == (len(objs), len(fl.leaves)))):
            objs.extend(c[4])
            fl.leaves.extend(c[5])
            fl.hits += 1
            return (OPTIM, o.__class__, attrs, c[3])
    mark = fl.marks[k] = (len(objs), len(fl.leaves))
    try:
        states = tuple([(pid._value, flatten_state(fl, st)) for pid, st in o._states.items()])
    except _Normalize:
        rewind(fl, mark)
        normalize_states(o, fl)
        states = tuple([(pid._value, flatten_state(fl, st)) for pid, st in o._states.items()])
    return (OPTIM, o.__class__, attrs, states)


def _same_values(d: dict[Any, Any], values: tuple[Any, ...]) -> bool:
    """Whether ``d`` holds exactly ``values`` (the same objects, in order); compared by C code, not a Python loop."""
    return len(d) == len(values) and all(map(_is, d.values(), values))


def flatten_state(fl: Flat, x: Any) -> Any:
    """The structure of a per-parameter optimizer state: dicts / lists of tensors and ``None``."""
    c = x.__class__
    if c is dict:
        nodes = [_f_tensor(fl, v) if v.__class__ is Tensor else flatten_state(fl, v) for v in x.values()]
        return (DICT, dict, tuple(x), tuple(nodes))
    if c is int or c is float or c is TensorData:
        raise _Normalize
    if c is list or c is tuple:
        return (SEQ, c, tuple([flatten_state(fl, v) for v in x]))
    return flatten(fl, x)


def _f_grads(fl: Flat, g: GradientsParams) -> Any:
    ref = _enter(fl, g)
    if ref is not None:
        return ref
    return (GRADS, tuple([(pid._value, _f_tensor(fl, t)) for pid, t in g._grads.items()]))


def flatten_seq(fl: Flat, x: Any) -> Any:
    """The structure of a list, tuple or namedtuple (the positional arguments of a call)."""
    return (SEQ, x.__class__, tuple([flatten(fl, v) for v in x]))


def flatten_dict(fl: Flat, x: dict[Any, Any]) -> Any:
    """The structure of a dict (the keyword arguments of a call)."""
    return (DICT, x.__class__, tuple(x), tuple([flatten(fl, v) for v in x.values()]))


def _f_dclass(fl: Flat, x: Any) -> Any:
    cls = x.__class__
    return (DCLASS, cls, tuple([flatten(fl, getattr(x, f)) for f in dc_fields(cls)]))


def _f_array(fl: Flat, x: Any) -> Any:
    pm = fl.pmemo
    j = pm.get(id(x))
    if j is None:
        j = pm[id(x)] = len(fl.leaves)
        fl.leaves.append(x)
    return (ARRAY, x.__class__, x.shape, x.dtype, j, fl.tree.array_extra(x))


def _f_plain(fl: Flat, x: Any) -> Any:
    if x.__class__ is float:  # by its bits: 0.0 and -0.0 differ, a NaN equals itself
        return (STATIC, float, x.hex())
    return (STATIC, x.__class__, x)


_NONE_NODE = (NONE,)


def _f_none(fl: Flat, x: Any) -> Any:
    return _NONE_NODE


def _f_static(fl: Flat, x: Any) -> Any:
    return static_key(x)


def _f_gradients(fl: Flat, x: Any) -> Any:
    raise TypeError(
        f"{fl.tree.name}: an ember.autodiff.Gradients (the result of loss.backward()) cannot cross the boundary of "
        "a compiled step: it is keyed by the graph of the computation that made it. Convert it with "
        "GradientsParams.from_grads(grads, model) and pass or return that, or compute the loss inside the step."
    )


_F_BY_KIND: dict[str, Handler] = {
    "tensor": _f_tensor, "param": _f_param, "state": _f_state, "module": _f_module, "optim": _f_optim,
    "grads": _f_grads, "gradients": _f_gradients, "none": _f_none, "plain": _f_plain, "seq": flatten_seq,
    "dict": flatten_dict, "array": _f_array, "dclass": _f_dclass, "static": _f_static,
}


def _classify(tree: StepTree, cls: type) -> Handler:
    """The flatten handler of a class for ``tree``, cached there."""
    h = tree.flat[cls] = _F_BY_KIND[tree.kind_of(cls)]
    return h
