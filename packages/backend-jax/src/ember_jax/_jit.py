"""``ember_jax.jit``: compile a whole step (forward, Ember's backward, optimizer update) with ``jax.jit``.

One call:

1. the arguments are flattened (:mod:`ember.backend.step_tree`, with the jax hooks of :mod:`._tree`) into jax
   arrays (the dynamic leaves) and a nested tuple of plain values (the structure: classes, devices, shapes,
   dtypes, ``ParamId`` s, static values). The structure and the jax backends involved are the cache key;
2. on a cache miss a new entry is made: a ``jax.jit`` of a function that, while jax traces it, rebuilds the
   arguments with tracers, puts a traced PRNG key into each backend, runs the step, and walks its results and
   the state to write back into output arrays and generated rebuilding code (:mod:`._out`);
3. the entry's compiled program runs on the leaves and the PRNG keys;
4. the generated code rebuilds the results and writes the state back (optimizer states, running-state cells,
   PRNG keys).

See ``docs/jax.md`` for the user's view (what is static, state write-back, random numbers, errors, limits).
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import jax

from ember import BackendError, Tensor
from ember.backend.step_tree import Flat, Rebuild, cell_guards, fast_spec, rebuild, shift_spec
from ember.backend.step_tree import flatten_dict as _flat_dict
from ember.backend.step_tree import flatten_seq as _flat_seq
from ember.module import Module

from ._array_backend import JaxArrayBackend
from ._devices import ForeignTensor
from ._donation_order import reserve_donated
from ._in_place import pair_donated_modules
from ._out import OutWalk, generate, holds_ember
from ._private import private_copy
from ._scan import Scan, foreign_error
from ._sharding import put
from ._tree import TREE

__all__ = ["jit", "CompiledStep"]

_JAX_READ_ERRORS: tuple[type[BaseException], ...] = tuple(
    e for e in (
        getattr(jax.errors, "ConcretizationTypeError", None),
        getattr(jax.errors, "TracerBoolConversionError", None),
        getattr(jax.errors, "TracerIntegerConversionError", None),
        getattr(jax.errors, "TracerArrayConversionError", None),
    ) if e is not None
)

_GUIDE = (
    "Inside a compiled step the tensors hold no values yet (jax traces the step once, then runs the compiled "
    "program). Return the tensor from the step and read it after the call, and write value-dependent logic "
    "with tensor ops (mask_where, clamp, max_pair ...) instead of Python if/while on tensor values."
)


class _Entry:
    """One argument structure: its compiled program, the jax backends whose keys it threads, and the code
    rebuilding its results."""

    __slots__ = ("jitted", "build", "source", "traces", "keys", "n_leaves", "keep_out", "cells", "rekeyed", "make",
                 "key_sharding")

    def __init__(self) -> None:
        self.jitted: Any = None
        self.build: Callable[[Any, list[Any]], Any] | None = None
        self.source = ""
        self.traces = 0
        self.keys: tuple[Any, ...] = ()  # the KeyState of each backend
        self.n_leaves = 0
        self.keep_out: frozenset[int] = frozenset()
        self.cells: tuple[int, ...] = ()
        self.rekeyed = 0
        #: makes ``jitted`` from the complete leaves of the first call (see :func:`_shardings`)
        self.make: Callable[[list[Any]], Any] | None = None
        #: where the PRNG keys go when the inputs span several devices (see :func:`_mesh_key_sharding`)
        self.key_sharding: Any = None


class CompiledStep:
    """A step function compiled by :func:`jit` (callable like the function).

    Attributes:
        fn: the original function.
        trace_count: how many times the step was traced (once per new argument structure: shapes, dtypes,
            static values, parameter ids, optimizer-state layout).
        donate_state: the optimizers' per-parameter state buffers are donated (see :func:`jit`).
        donate_argnums: the positional arguments whose buffers are donated.
        copy_donated: a donated argument that is not one of the previous call's results is copied first (see
            :func:`jit`).
    """

    #: no results flattened ahead (while a call runs, or after one failed): the next call walks completely
    _fast: Any = MappingProxyType({})

    def __init__(self, fn: Callable[..., Any], donate_state: bool = True, donate_argnums: Any = (),
                 copy_donated: bool = False) -> None:
        if not callable(fn):
            raise TypeError(f"ember_jax.jit: expected a function, got {type(fn).__name__}.")
        nums = (donate_argnums,) if isinstance(donate_argnums, int) else tuple(donate_argnums)
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in nums):
            raise TypeError(f"ember_jax.jit: donate_argnums must be non-negative ints, got {donate_argnums!r}.")
        self.fn = fn
        self.donate_state = bool(donate_state)
        self.donate_argnums = frozenset(nums)
        self.copy_donated = bool(copy_donated)
        #: the previous call's top-level results (``copy_donated``: the arguments donated without a copy)
        self._own: tuple[Any, ...] = ()
        self.trace_count = 0
        self._cache: dict[Any, _Entry] = {}
        #: the last call's results flattened ahead (see ember.backend.step_tree.fast_spec); the next call pops it
        self._fast: dict[int, Any] = {}
        self._tls = threading.local()
        functools.update_wrapper(self, fn, updated=())

    # ------------------------------------------------------------------ info
    @property
    def cache_size(self) -> int:
        """The number of argument structures compiled so far."""
        return len(self._cache)

    def clear_cache(self) -> None:
        """Forget every compiled structure (the next call traces again) and the last call's results."""
        self._cache.clear()
        self._fast = {}
        self._own = ()

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        return f"ember_jax.jit({name}, structures={len(self._cache)}, traces={self.trace_count})"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """Decorating a method: the instance is passed as the first argument (walked like the others)."""
        if obj is None:
            return self
        return functools.partial(self, obj)

    # ------------------------------------------------------------------ call
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the step: traced and compiled at the first call of each argument structure, the compiled program
        afterwards; the state of the arguments (optimizer states, running states, PRNG keys) is written back.

        Returns:
            What ``fn`` returns, rebuilt around the program's outputs.

        Raises:
            See :func:`jit`.
        """
        if self.copy_donated:
            args = self._private(args)
        # the last call's results flattened ahead are taken by this call (one atomic pop: a call in another
        # thread walks completely), their lists becoming this walk's own; a call that fails leaves none
        fl = Flat(TREE, self.__dict__.pop("_fast", None), own=True)
        key = (_flat_seq(fl, args), _flat_dict(fl, kwargs) if kwargs else None)
        found = self._cache.get(key)
        if found is not None and fl.hits and found.rekeyed < 3:
            # store this key instead: its structures of results flattened ahead are the objects the next calls
            # bring again, so comparing keys then finds the same objects at once (done for the first few calls,
            # until the steady state)
            del self._cache[key]
            self._cache[key] = found
            found.rekeyed += 1
        if found is None and fl.hits:
            # walk everything: the entry may be new, and tracing needs complete memos
            fl = Flat(TREE)
            key = (_flat_seq(fl, args), _flat_dict(fl, kwargs) if kwargs else None)
            found = self._cache.get(key)
        new = found is None
        entry = self._new_entry(key, args, kwargs, fl) if found is None else found
        leaves = fl.leaves
        for ks in entry.keys:
            k = ks.key
            leaves.append(k if k is not None else ks.current())
        if new:
            entry.jitted = entry.make(leaves)  # type: ignore[misc]
        ksh = entry.key_sharding
        if ksh is not None:  # inputs over several devices: the keys join them (only after a seed, or at first)
            for j in range(len(leaves) - len(entry.keys), len(leaves)):
                if leaves[j].sharding != ksh:
                    leaves[j] = put(leaves[j], ksh)
        tls = self._tls
        tls.call = (args, kwargs, fl, entry)
        try:
            out = entry.jitted(*leaves)
        finally:
            tls.call = None
        if new:  # cached once the trace worked
            self._cache[key] = entry
        build: Any = entry.build
        if gc.isenabled():
            # the rebuilt results are hundreds of new objects for a real model: without the pause they trigger
            # collections of the whole heap (jax's included) that cost more than building them
            gc.disable()
            try:
                result, self._fast = build(out, fl.objs)
            finally:
                gc.enable()
        else:
            result, self._fast = build(out, fl.objs)
        if self.copy_donated:
            self._own = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        return result

    def _private(self, args: tuple[Any, ...]) -> tuple[Any, ...]:
        """``args`` with each donated argument that is not one of the previous call's results replaced by a
        private copy (:func:`~ember_jax._private.private_copy`), so that the caller's buffers are never donated."""
        own = self._own
        out: list[Any] | None = None
        for i in self.donate_argnums:
            if i < len(args):
                a = args[i]
                for o in own:
                    if a is o:
                        break
                else:
                    if out is None:
                        out = list(args)
                    out[i] = private_copy(a)
        return args if out is None else tuple(out)

    def _new_entry(self, key: Any, args: tuple[Any, ...], kwargs: dict[str, Any], fl: Flat) -> _Entry:
        scan = Scan()
        scan.run(*key)
        try:
            backends = scan.backends()
        except ForeignTensor:
            bad = next(t for t in fl.objs if isinstance(t, Tensor) and not _is_jax(t))
            raise foreign_error(ForeignTensor(bad), args, kwargs) from None
        for x in scan.statics:
            if holds_ember(x):
                raise TypeError(
                    f"ember_jax.jit: an argument of type {type(x).__name__} holds tensors or modules in its "
                    "attributes, but a plain object is a static value of the compiled step (part of the cache key): "
                    "its tensors would be constants of the program and later changes to them unseen. Make it a "
                    "Module or a dataclass (both are walked), or pass its tensors as arguments."
                )
        entry = _Entry()
        entry.keys = tuple(b._keys for b in backends)
        entry.n_leaves = len(fl.leaves)
        donated, entry.keep_out, entry.cells = scan.donation(self.donate_state, self.donate_argnums)
        donated_set = frozenset(donated)
        fn = self.fn
        tls = self._tls

        def traced(*leaves: Any) -> tuple[Any, ...]:
            args, kwargs, fl, entry = tls.call
            if fl.hits:  # objects taken from the fast path are not in the memos that rebuilding needs: walk again
                fl = Flat(TREE)
                _flat_seq(fl, args)
                if kwargs:
                    _flat_dict(fl, kwargs)
            self.trace_count += 1
            entry.traces += 1
            rb = Rebuild(leaves, fl)
            a = rebuild(rb, args)
            kw = rebuild(rb, kwargs) if kwargs else {}
            keys_in = leaves[entry.n_leaves:]
            states = entry.keys
            saved = [s.key for s in states]
            for s, k in zip(states, keys_in):
                s.key = k
            try:
                try:
                    result = fn(*a, **kw)
                except _JAX_READ_ERRORS as exc:
                    first = str(exc).splitlines()[0] if str(exc) else ""
                    raise BackendError(
                        f"ember_jax.jit: the step needed the value of a traced tensor ({type(exc).__name__}: "
                        f"{first}). {_GUIDE}"
                    ) from exc
                keys_out = [s.key for s in states]
            finally:
                for s, k in zip(states, saved):
                    s.key = k
            ow = OutWalk(rb, entry.keep_out)
            # the donated buffers' new values first, in the inputs' order (else XLA copies; _donation_order)
            reserve_donated(ow, result, args, fl, rb, donated_set, entry.keep_out, [
                (entry.n_leaves + j, k) for j, (k, k0) in enumerate(zip(keys_out, keys_in)) if k is not k0])
            for _n, o in rb.optims:
                ow.reserve(o._states)
            writes = _modules_in_place(ow, result, args, fl, entry.keep_out)
            rnode = ow.walk(result, "result")
            cells = [(n, node) for n, node in (
                (n, ow.tensor(cell._tensor, f"running state {cell.id}"))
                for n, cell, initial in rb.cells if cell._tensor is not initial or n in entry.cells)
                # a cell of a module written in place already holds its own tensor, now holding the new array
                if node != ("IN", fl.memo.get(id(fl.objs[n]._tensor)))]
            optims = []
            for n, o in rb.optims:
                into = ow.state_in_place(fl.objs[n]._states, o._states, rb.memo)
                optims.append((n, ("INTO", into) if into is not None else ow.state(o._states, None, "optimizer state")))
            keys = [(s, ow.leaf(k)) for s, k, k0 in zip(states, keys_out, keys_in) if k is not k0]
            entry.build, entry.source = generate(rnode, cells, optims, keys, _fast_entries(ow, result, rb, fl), writes)
            return tuple(ow.leaves)

        def make(leaves: list[Any]) -> Any:
            shardings = _shardings(leaves)
            if shardings is None:
                return jax.jit(traced, donate_argnums=donated)
            n_keys = len(entry.keys)
            entry.key_sharding = _mesh_key_sharding(shardings[:len(shardings) - n_keys])
            if entry.key_sharding is not None:
                shardings = shardings[:len(shardings) - n_keys] + (entry.key_sharding,) * n_keys
            return jax.jit(traced, donate_argnums=donated, in_shardings=shardings)

        entry.make = make
        return entry


def _modules_in_place(ow: OutWalk, result: Any, args: tuple[Any, ...], fl: Flat, donated: frozenset[int]
                      ) -> list[tuple[int, int, bool]]:
    """The writes that hand each donated module argument back as the result module of its class (the first that
    pairs with it, among the top-level results), its tensors holding the new arrays (see
    :meth:`OutWalk.module_in_place`): jax deleted its arrays, so no one can read the old values anyway, and the
    result costs no new objects."""
    writes: list[tuple[int, int, bool]] = []

    def take(old: Any, new: Any) -> bool:
        w = ow.module_in_place(old, new, fl.memo, fl.objs)
        if w is not None:
            writes.extend(w)
        return w is not None

    if donated:
        pair_donated_modules(result, args, fl.memo, donated, take)
    return writes


def _fast_entries(ow: OutWalk, result: Any, rb: Rebuild, fl: Flat) -> list[tuple[str, Any, Any]]:
    """The results the next call can take without walking them: the result's top-level modules and each
    optimizer's new state (see :func:`~ember.backend.step_tree.fast_spec`; a state with back-references, such as
    the step counter all parameters share, is taken only at the position where this call walked it, see
    :func:`~ember.backend.step_tree.shift_spec`)."""
    out: list[tuple[str, Any, Any]] = []
    tops = list(result) if isinstance(result, (tuple, list)) else [result]
    for x in tops:
        if isinstance(x, Module):
            spec = fast_spec(TREE, x)
            e = ow.expr(x)
            fe = ow.fast_entry(spec) if spec is not None and e is not None else None
            ge = ow.guard_exprs(cell_guards(spec[2])) if fe is not None and spec is not None else None
            if fe is not None and spec is not None and ge is not None:
                out.append(("module", e, (fe[0], spec[1], fe[1], fe[2], ge[0], ge[1])))
    for n, o in rb.optims:
        try:
            spec = fast_spec(TREE, o._states)
        except Exception:  # a Python number or TensorData in the state: this call's results take the walk
            spec = None
        pos = None
        if spec is not None and not spec[1]:
            pos = fl.marks.get(id(fl.objs[n]))
            spec = shift_spec(spec, pos) if pos is not None else None
        fe = ow.fast_entry(spec) if spec is not None else None
        if fe is not None:
            out.append(("optim", n, (*fe, pos)))
    return out


def _shardings(leaves: list[Any]) -> tuple[Any, ...] | None:
    """The sharding of each input, to compile the program for: the placement the next calls bring.

    Arrays made by jax ops outside any ``jit`` (a new model's weights, ``zeros_like`` moments) are *uncommitted*,
    while the program's outputs, the next call's inputs, are committed to their device; without explicit input
    shardings jax compiles the program a second time for the committed inputs (seconds for a real model). With
    them an uncommitted input is placed as given and both calls share one executable. ``None`` (jax decides)
    when an input has no sharding (a numpy array)."""
    out = []
    for x in leaves:
        sh = getattr(x, "sharding", None)
        if sh is None:
            return None
        out.append(sh)
    return tuple(out)


def _mesh_key_sharding(shardings: tuple[Any, ...]) -> Any:
    """``None`` when every input lives on one device; when some are replicated or sharded over several
    (:func:`ember_jax.replicate`, :func:`ember_jax.shard_batch`), the replicated sharding over their mesh, where
    the backends' PRNG keys (made on one device by ``seed``) must go too: jax refuses to mix the two.

    Raises:
        BackendError: other inputs live on one device only (the message says how to place them).
    """
    spread = next((s for s in shardings if len(s.device_set) > 1), None)
    if spread is None:
        return None
    single = [s for s in shardings if len(s.device_set) == 1]
    if single:
        raise BackendError(
            f"ember_jax.jit: some inputs are spread over the devices {sorted(d.id for d in spread.device_set)} "
            f"while {len(single)} live on one device only ({next(iter(single[0].device_set))}); one compiled step "
            "runs on one set of devices: place every tensor argument with ember_jax.replicate(x, devices) (models, "
            "optimizers, scalars such as a learning-rate tensor) or ember_jax.shard_batch(x, devices) (batches)."
        )
    mesh = getattr(spread, "mesh", None)
    if mesh is None:  # pragma: no cover - not a NamedSharding: jax places the keys (or says why it cannot)
        return None
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())


def _is_jax(t: Any) -> bool:
    return isinstance(t.device.inner.backend, JaxArrayBackend)


def jit(fn: Callable[..., Any] | None = None, *, donate_state: bool = True, donate_argnums: Any = (),
        copy_donated: bool = False) -> Any:
    """Compile a whole step function of Ember objects with ``jax.jit`` (issue 10).

    ::

        @ember_jax.jit
        def train_step(model, optim, batch, lr):
            out = model.train_step(batch)               # forward + Ember's backward on Autodiff(jax)
            model = optim.step(lr, model, out.grads)    # Ember's optimizer
            return model, out.item

        model, item = train_step(model, optim, batch, lr)   # lr: a Float tensor [1] (dynamic)

    Arguments and results may nest ``Tensor``, ``Param``, ``RunningState``, ``Module``, ``Optimizer``,
    ``GradientsParams``, dataclass instances, lists, tuples, namedtuples, dicts, ``None`` and plain values.
    Tensors are dynamic (traced); plain values (int, float, bool, str, configs) are static: part of the cache
    key, so a new value compiles again (pass values that change every step, such as the learning rate, as
    tensors). Tensors must be on the jax backend or ``Autodiff(jax)``.

    State is carried through the call and written back afterwards: each optimizer's per-parameter state (a
    Python int/float in it, e.g. Adam's step count, becomes an Int/Float ``[1]`` tensor and stays one), new
    ``RunningState`` values (BatchNorm's running statistics), and the PRNG key of each jax backend of the
    arguments, so the random ops of the step draw the numbers the same ops would draw eagerly.

    The step is traced once per argument structure (shapes, dtypes, static values, parameter ids, optimizer
    state layout); later calls run the compiled program and rebuild the results with generated code. Python
    side effects of the step (prints, appends) therefore happen at tracing only.
    An optimizer whose states are still empty changes layout after the first call (a second trace); call
    ``optim.init_states(model)`` before the first call to start from the rule's initial state (Adam: zeros).

    Args:
        fn: the step function.
        donate_state: give the optimizers' per-parameter state buffers to the compiled program, which updates
            them in place (default ``True``); ``optim.state(id)`` and ``optim.to_record()`` hand out copies, so
            what was read before a call stays valid (read again after the call for the new values).
        donate_argnums: positional arguments whose buffers are given to the program as well, e.g. ``(0,)`` for
            the model of ``step(model, optim, batch, lr)``: faster (no new allocation per step). A donated
            module comes back as the same object, its tensors holding the new arrays (no new object tree per
            call; a parameter keeps its autodiff wrapper and graph leaf, as a parameter updated in place), when
            the returned module pairs object for object with it (what ``optim.step`` returns);
            otherwise it is rebuilt and the module passed in can no longer be read (jax raises
            ``RuntimeError: Array has been deleted``). Nothing is donated when a donated buffer is also
            reachable from an argument that is not donated.
        copy_donated: donate only buffers the step owns: a donated argument that is not one of the previous
            call's top-level results (compared by identity) is copied first (its arrays, by one device copy; its
            modules, params and tensors rebuilt around them), and the copy is donated, so the objects the caller
            passed keep their values and stay readable. Passing the returned model back (``model, item =
            step(model, ...)``) donates it as it is: one copy at the first call, none afterwards (what the
            Learner's training step does). Default ``False``.

    Returns:
        A :class:`CompiledStep` (callable; ``trace_count`` counts the traces).

    Raises:
        BackendError: at call time, a tensor of another backend among the arguments; inside the step, a host
            read of a traced value (``into_scalar``, ``to_data``, ``bool(tensor)`` ...), with what to do instead,
            or a random op on a jax backend none of whose tensors are among the arguments.
        TypeError: ``fn`` is not callable; ``donate_argnums`` is not non-negative ints; a plain (static) argument
            holds tensors or modules in its attributes; the step returned something that cannot leave it (e.g. a
            ``Gradients``).
    """
    if fn is None:
        return functools.partial(jit, donate_state=donate_state, donate_argnums=donate_argnums,
                                 copy_donated=copy_donated)
    return CompiledStep(fn, donate_state=donate_state, donate_argnums=donate_argnums, copy_donated=copy_donated)
