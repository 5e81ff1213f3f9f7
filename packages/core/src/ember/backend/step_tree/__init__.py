"""The step tree: the arguments of a compiled step as (leaves, structure), for every backend that compiles steps.

A backend that compiles whole steps (``ember_jax.jit``, ``ember_torch.compile``) walks the step's arguments at
every call: the modules, optimizers, tensors and plain values they nest become the backend's arrays (the
*leaves*, the program's inputs) and a hashable nested tuple (the *structure*, the cache key). While the backend
traces the step it rebuilds the same objects around its tracers. This module holds that walk once; a backend
gives only its array-specific hooks in a :class:`StepTree` (its raw array classes, what a raw array's structure
records, where new state tensors go) and keeps its results' code (jax: generated code; torch: builder nodes).

What is what (by type, not annotation; :meth:`StepTree.kind_of`):

=======================  ==============================================================================
``Tensor``               one leaf (the inner array for a Float tensor on an ``Autodiff`` device); the
                         structure keeps the device, kind, tracking flag, shape and dtype.
``Param``                its value; the ``ParamId`` and ``require_grad`` are static.
``RunningState``         its tensor; the cell is rebuilt, and a new value set inside is written back.
``Module``               its fields (``__ember_fields__``), walked; the class is static.
``Optimizer``            its per-parameter ``_states`` (tensors are leaves; a Python int/float becomes an
                         Int/Float ``[1]`` tensor first, :func:`normalize_states`); other attributes static.
``GradientsParams``      its tensors; the ids are static.
dataclass instances      their fields, walked (batches, outputs).
list, tuple, namedtuple  their items; dict: its values (keys static).
raw arrays               the backend's own array classes (``StepTree.array_types``): a leaf.
anything else            static: hashed by value (a float by its bits), or by identity when unhashable.
=======================  ==============================================================================

Objects met twice (a ``Param`` shared by two layers, one tensor at two places) are walked once: later
occurrences are a back-reference (``(REF, n)``; one array reached twice: ``(ALIAS, ..., leaf index)``), so they
stay one leaf and one object inside the step. Every object with an identity gets a number ``n`` in walk order;
``Flat.objs[n]`` is the caller's object, which the backend uses to hand back inputs the step returns unchanged
and to write state back (``Rebuild.cells``, ``Rebuild.optims``).

Use (a backend)::

    TREE = StepTree("mybackend.compile", array_types=(MyArray,), array_extra=lambda a: a.device,
                    default_device=lambda: ember.backend("mybackend").device())
    fl = Flat(TREE)
    key = (flatten_seq(fl, args), flatten_dict(fl, kwargs))   # fl.leaves: the program's inputs
    ...                                                       # on a cache miss, while tracing:
    rb = Rebuild(tracers, fl)
    a, kw = rebuild(rb, args), rebuild(rb, kwargs)

The fast path (:func:`fast_spec`, :class:`Hashed`, :func:`cell_guards`, :func:`shift_spec`, :func:`pool_spec`):
a backend that records its results' structures per call hands them to the next call's ``Flat(tree, fast)``, whose
walk then takes a returned module or optimizer state as it is, after identity checks, instead of walking it
(``ember_jax.jit`` records them with generated code, ``ember_torch.compile`` by positions, :func:`pool_spec`).
:class:`CodeGen` is the shared part of the backends' generated result builders.
"""

from __future__ import annotations

from ._codegen import CodeGen
from ._fast import Hashed, cell_guards, fast_spec, pool_spec, shift_spec
from ._flat import Flat, rewind
from ._flatten import flatten, flatten_dict, flatten_seq, flatten_state
from ._kinds import (
    ALIAS,
    ARRAY,
    DCLASS,
    DICT,
    GRADS,
    KINDS,
    MODULE,
    NONE,
    OPTIM,
    PARAM,
    REF,
    RSTATE,
    SEQ,
    STATIC,
    STATIC_ID,
    TENSOR,
    Id,
    StepTree,
    dc_fields,
    static_key,
)
from ._rebuild import Rebuild, copy_dclass, rebuild, same_seq
from ._states import normalize_states, number_tensor

__all__ = [
    "StepTree", "Flat", "flatten", "flatten_seq", "flatten_dict", "flatten_state", "rewind", "Rebuild", "rebuild",
    "same_seq", "copy_dclass", "normalize_states", "number_tensor", "Hashed", "fast_spec", "cell_guards",
    "shift_spec", "pool_spec", "CodeGen", "static_key", "dc_fields", "Id", "KINDS",
    "TENSOR", "ALIAS", "REF", "PARAM", "RSTATE", "MODULE", "OPTIM", "GRADS", "SEQ", "DICT", "DCLASS", "STATIC",
    "STATIC_ID", "ARRAY", "NONE",
]
