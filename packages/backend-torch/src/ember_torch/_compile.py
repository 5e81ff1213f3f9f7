"""``ember_torch.compile``: capture a whole Ember step (forward, Ember's backward, optimizer update, running-state
updates) as one graph of aten operations, and replay it (optionally compiled by ``torch.compile``).

One call:

1. the arguments are flattened (:mod:`ember.backend.step_tree`, torch's hooks in :mod:`._capture_flatten`) into
   torch tensors (the graph's inputs) and a hashable structure (classes, devices, kinds, shapes, dtypes, parameter
   ids, optimizer-state layout, plain values): the cache key; a new structure's tensors are checked to be torch's;
2. on a cache miss the step is captured: ``torch.fx.experimental.proxy_tensor.make_fx`` (fake tensors) runs a
   function that rebuilds the arguments around proxy tensors, runs the step once (Ember's Python: tensor wrappers,
   the autodiff tape, module walks), and returns as graph outputs the tensors of the results and the state to write
   back (optimizer states, new running-state values). The ``GraphModule`` is kept as it is (``mode="capture"``) or
   compiled by inductor directly (``torch._inductor.compile``, no TorchDynamo: :mod:`._capture_inductor`; on CUDA
   optionally with CUDA graphs), or by ``torch.compile`` with another ``backend`` or with frozen weights;
3. every call runs the graph on the leaves, builds the results around its outputs and writes the state back
   (generated straight-line code, :mod:`._capture_codegen`), and records the result modules and optimizer states
   flattened ahead, so that the next call's flatten takes them as they are (:mod:`._capture_ahead`).

Random numbers: the graph draws from torch's default generator of the device, to which each replay lends the
state of the backend's generator (:mod:`._capture_rng`), so a replay draws the numbers the eager step would: the
same numbers for the same seed, new ones at every step.

See ``docs/torch.md`` ("Compiled steps") for the user's view.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import torch

from ember import BackendError
from ember.backend.step_tree import Flat, Rebuild, flatten, rebuild

from . import _capture_rng, _capture_state
from ._capture_ahead import Plan, ahead, plan
from ._capture_codegen import generate
from ._capture_flatten import TREE, ForeignTensor, check_devices
from ._capture_freeze import FrozenRun, weight_leaves
from ._capture_inductor import CompileFailed, InductorRun
from ._capture_tree import OutWalk

__all__ = ["compile", "CompiledStep", "MODES"]

#: the modes: ``"capture"`` replays the captured graph as it is; the others are ``torch.compile``'s modes
MODES = ("capture", "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_CUDA_GRAPH_MODES = ("reduce-overhead", "max-autotune")


class _Entry:
    """One argument structure: the captured graph, what runs it, and the builders of results and state."""

    __slots__ = ("gm", "run", "result", "cells", "optims", "slots", "mode", "capture_seconds", "draws", "build",
                 "source", "plan", "planned", "rekeyed", "weights")

    def __init__(self) -> None:
        self.gm: Any = None
        self.run: Callable[..., Any] | None = None
        self.result: Any = None
        self.cells: list[tuple[int, Any]] = []
        self.optims: list[tuple[int, list[tuple[Any, Any]]]] = []
        self.slots = 0
        self.mode = "capture"
        self.capture_seconds = 0.0
        self.draws: list[tuple[Any, Any]] = []
        #: the generated builder of the results (:mod:`._capture_codegen`) and its source
        self.build: Callable[..., Any] | None = None
        self.source = ""
        #: the results flattened ahead for the next call (:mod:`._capture_ahead`)
        self.plan: Plan | None = None
        self.planned = False
        self.rekeyed = 0
        #: the leaves compiled as constants (``options={"freezing": True}``, :mod:`._capture_freeze`)
        self.weights: list[int] = []


def default_mode(leaves: list[Any]) -> str:
    """The mode used when none is given: ``"default"`` (inductor) when a graph input is on CUDA, else ``"capture"``.

    On a CPU the inductor compile of a training step takes tens of seconds (20-70 s for small models on a loaded
    2-core machine), again for each new shape, which short runs never earn back; the captured graph alone removes
    Ember's Python per step for the cost of one eager step (``mode="default"`` is the choice for long CPU runs of
    small models). On CUDA the compile pays back after a few hundred steps (fused kernels, fewer launches)."""
    return "default" if any(getattr(p, "is_cuda", False) for p in leaves) else "capture"


class CompiledStep:
    """A step captured by :func:`compile` (callable like the function).

    Attributes:
        fn: the original function.
        mode: the mode asked for (``None``: per device, see :func:`default_mode`).
        trace_count: how many times the step was captured (once per argument structure).
    """

    def __init__(self, fn: Callable[..., Any], mode: str | None = None, backend: Any = "inductor",
                 options: dict[str, Any] | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"ember_torch.compile: expected a function, got {type(fn).__name__}.")
        if mode is not None and mode not in MODES:
            raise ValueError(f"ember_torch.compile: mode must be one of {', '.join(MODES)} or None, got {mode!r}.")
        if options is not None and not isinstance(options, dict):
            raise TypeError(f"ember_torch.compile: options must be a dict of inductor options, got {options!r}.")
        self.fn = fn
        self.mode = mode
        self.backend = backend
        self.options = options
        self.trace_count = 0
        self._cache: dict[Any, _Entry] = {}
        #: the last call's results flattened ahead (see ._capture_ahead)
        self._fast: dict[int, Any] = {}
        functools.update_wrapper(self, fn, updated=())

    @property
    def cache_size(self) -> int:
        """The number of argument structures captured so far."""
        return len(self._cache)

    def clear_cache(self) -> None:
        """Forget every captured structure (the next call captures again)."""
        self._cache.clear()
        self._fast = {}

    def graph(self, *args: Any, **kwargs: Any) -> Any:
        """The ``torch.fx.GraphModule`` captured for these arguments' structure (captured now if new; nothing runs)."""
        fl = Flat(TREE)
        key = (flatten(fl, args), flatten(fl, kwargs))
        entry = self._cache.get(key)
        if entry is None:
            _check_devices(fl)
            with _quiet_torch():
                entry = self._cache[key] = self._capture(fl, args, kwargs)
        return entry.gm

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", repr(self.fn))
        return f"ember_torch.compile({name}, mode={self.mode!r}, structures={len(self._cache)})"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Run the step: captured at the first call of each argument structure, replayed afterwards; the state of
        the arguments (optimizer states, running states) is written back. Returns what ``fn`` returns."""
        fl = Flat(TREE, self._fast)
        key = (flatten(fl, args), flatten(fl, kwargs))
        entry = self._cache.get(key)
        if entry is not None and fl.hits and entry.rekeyed < 3:
            # store this key instead: its structures of results flattened ahead are the objects the next calls
            # bring again, so comparing keys then finds the same objects at once (the first few calls)
            del self._cache[key]
            self._cache[key] = entry
            entry.rekeyed += 1
        if entry is None and fl.hits:  # walk everything: the entry may be new, and capturing needs complete memos
            fl = Flat(TREE)
            key = (flatten(fl, args), flatten(fl, kwargs))
            entry = self._cache.get(key)
        if entry is None:
            _check_devices(fl)
            with _quiet_torch():
                entry = self._capture(fl, args, kwargs)
                try:
                    outs = _first_run(entry, fl.leaves)
                except _Refused as exc:
                    if self.mode is not None:  # the mode was asked for: the caller decides
                        raise
                    outs = self._fall_back(entry, fl.leaves, exc)
            self._cache[key] = entry
        else:
            outs = entry.run(*fl.leaves)  # type: ignore[misc]
        objs = fl.objs
        build: Any = entry.build
        if gc.isenabled():
            # the results are hundreds of new objects for a real model: without the pause they trigger collections
            # of the whole heap that cost more than building them
            gc.disable()
            try:
                result, made = build(outs, objs)
            finally:
                gc.enable()
        else:
            result, made = build(outs, objs)
        if not entry.planned and not fl.hits:  # the first run of the entry (also after graph(), which only captures)
            entry.plan = plan(result, made, fl, outs, [n for n, _s in entry.optims])
            entry.planned = True
        p = entry.plan
        self._fast = ahead(p, made, objs, outs, fl.leaves) if p is not None else {}
        return result

    # ------------------------------------------------------------------ capture
    def _capture(self, fl: Flat, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Entry:
        from torch.fx.experimental.proxy_tensor import make_fx

        entry = _Entry()
        fn = self.fn

        def traced(*proxies: Any) -> tuple[Any, ...]:
            rb = Rebuild(proxies, fl)
            a = rebuild(rb, args)
            kw = rebuild(rb, kwargs)
            result = fn(*a, **kw)
            ow = OutWalk(rb)
            entry.result = ow.walk(result, "result")
            entry.cells = [(n, ow.walk(cell._tensor, f"running state {cell.id}"))
                           for n, cell, initial in rb.cells if cell._tensor is not initial]
            entry.optims = [(n, [(pid, ow.walk(st, "optimizer state")) for pid, st in o._states.items()])
                            for n, o in rb.optims]
            entry.slots = ow.slots
            entry.build, entry.source = generate(entry.result, entry.cells, entry.optims)
            return tuple(ow.outputs)

        t0 = time.perf_counter()
        entry.mode = self.mode if self.mode is not None else default_mode(fl.leaves)
        _capture_state.ACTIVE[0] += 1
        _capture_rng.DRAWS.clear()
        try:
            with _kernels_for(entry.mode, fl.leaves):
                entry.gm = make_fx(traced, tracing_mode="fake", _allow_non_fake_inputs=True)(*fl.leaves)
            entry.draws = list(_capture_rng.DRAWS)
        except BackendError:
            raise
        except Exception as exc:
            if _is_host_read(exc):
                first = str(exc).splitlines()[0] if str(exc) else ""
                raise BackendError(
                    f"ember_torch.compile: the step needed the value of a captured tensor ({type(exc).__name__}: "
                    f"{first}). {_capture_state.HOST_READ_GUIDE}"
                ) from exc
            raise
        finally:
            _capture_state.ACTIVE[0] -= 1
            _capture_rng.DRAWS.clear()
        self.trace_count += 1
        if entry.mode != "capture" and (self.options or {}).get("freezing") and not entry.cells and not entry.optims:
            entry.weights = weight_leaves(fl)
        entry.run = self._runner(entry, fl.leaves)
        entry.capture_seconds = time.perf_counter() - t0
        return entry

    def _fall_back(self, entry: _Entry, leaves: list[Any], exc: _Refused) -> Any:
        """The device's default mode refused by ``torch.compile`` (which raised before running anything): the
        entry runs its captured graph as it is (``"capture"``, the same numbers), with a warning naming torch's
        reason, rather than a training run stopping at its first step."""
        warnings.warn(
            f"{exc.reason}: this step runs its captured graph without torch's compiler (mode='capture', the same "
            "results, no compile). Pass mode='capture' to silence this, or report the step (issue 32).",
            RuntimeWarning,
            stacklevel=3,
        )
        entry.mode = "capture"
        entry.weights = []
        entry.run = self._runner(entry, leaves)
        return entry.run(*leaves)  # type: ignore[misc]

    def _runner(self, entry: _Entry, leaves: list[Any]) -> Callable[..., Any]:
        run = self._compiled(entry, leaves)
        return _capture_rng.lending(run, entry.draws) if entry.draws else run

    def _compiled(self, entry: _Entry, leaves: list[Any]) -> Callable[..., Any]:
        mode = entry.mode
        if mode == "capture":
            return entry.gm  # type: ignore[no-any-return]
        if mode in _CUDA_GRAPH_MODES and not any(getattr(p, "is_cuda", False) for p in leaves):
            raise BackendError(
                f"ember_torch.compile: mode={mode!r} records CUDA graphs, which need the step's tensors on a CUDA "
                f"device; found them on {leaves[0].device if leaves else 'no device'}. Use mode='default' (inductor "
                "without CUDA graphs) or mode='capture' on this device."
            )
        if self.backend != "inductor":
            return torch.compile(entry.gm, mode=mode, backend=self.backend,  # type: ignore[no-any-return]
                                 options=self.options, fullgraph=True, dynamic=False)
        # torch.compile takes a mode or options, not both: the mode's inductor options (what torch itself uses for
        # it), the caller's over them, and for a step that draws, fallback_random (inductor's own random kernels
        # draw other numbers than eager aten.rand; the eager step's numbers are the contract)
        from torch._inductor import list_mode_options

        options = {**list_mode_options(mode, dynamic=False), **(self.options or {})}
        if entry.draws:
            options.setdefault("fallback_random", True)
        if not entry.weights and not any(getattr(p, "is_cuda", False) for p in leaves):
            # a training step on the CPU keeps torch's layouts: inductor's layout optimization (channels-last
            # convolutions) made the Adam update of the convolution weights read their gradients transposed, tile
            # by tile; ResNet-18 (batch 8, 1 thread): 231 -> 121 ms a step without it (bench/README.md, issue 32)
            options.setdefault("layout_optimization", _CPU_LAYOUT_OPTIMIZATION[0])
        if entry.weights:
            return FrozenRun(entry.gm, entry.weights, leaves,
                             lambda m: torch.compile(m, backend="inductor", options=options, fullgraph=True,
                                                     dynamic=False))
        # inductor compiles the captured aten graph as it is, without TorchDynamo re-tracing it and checking its
        # guards at every call (the entry's key is the guard; _capture_inductor.py)
        return InductorRun(entry.gm, options)


#: inductor's ``layout_optimization`` for a step on the CPU without ``freezing`` (a caller's option wins)
_CPU_LAYOUT_OPTIMIZATION = [False]


def _kernels_for(mode: str, leaves: list[Any]) -> contextlib.ExitStack:
    """The kernels the capture may record for ``mode``: with CUDA tensors, none of cuDNN's
    (``torch.backends.cudnn`` off while capturing); for ``"capture"`` on the CPU, Ember's LSTM as
    ``torch._VF.lstm``'s own ops (``_capture_state.RNN_OPS`` off), else as the custom ops ``ember::lstm`` and
    ``ember::lstm_backward`` (``_rnn_op.py``).

    The custom ops are one node each for the forward and the backward; their implementation calls
    ``torch._VF.lstm`` when the graph runs, outside this context, so it runs on oneDNN's kernel on the CPU and
    cuDNN's on CUDA in every mode, and inductor never sees the unrolled cells (issue 32); the backward runs the
    forward once more (its residual cannot be torch's autograd graph). Traced instead, ``torch._VF.lstm`` records
    oneDNN's ``aten.mkldnn_rnn_layer`` (float32) or its cells (float64): AOTAutograd runs a graph with autograd off,
    where that layer's backward workspace is undefined (oneDNN was off while capturing for ``torch.compile``
    before the custom ops, and the LSTM was unrolled: a 9-minute compile for the benchmark's LSTM); a graph
    replayed as is (``"capture"``) runs with autograd on and keeps it, so that mode records the eager step's
    kernels with no second forward. On CUDA the LSTM is always the custom ops: cuDNN's RNN packs weights through
    an ``UntypedStorage``, which ``make_fx`` cannot record (``NotImplementedError`` on an H200 with torch 2.11).

    cuDNN stays off while capturing on CUDA, though the LSTM no longer needs it: other composite ops choose cuDNN
    variants while recording (``aten.batch_norm`` records ``cudnn_batch_norm``; grid sampling, CTC loss), and the
    captures verified on a GPU were all made with it off; dropping it waits for a GPU run. Only choices made
    while recording change: ``aten.convolution`` is recorded as such and runs on cuDNN, as do the LSTM's ops."""
    stack = contextlib.ExitStack()
    if any(getattr(p, "is_cuda", False) for p in leaves):
        stack.enter_context(_no_cudnn())
    elif mode == "capture":
        stack.enter_context(_traced_rnn())
    return stack


@contextlib.contextmanager
def _traced_rnn() -> Iterator[None]:
    """``_capture_state.RNN_OPS`` off inside: the LSTM is traced as ``torch._VF.lstm``'s aten ops."""
    was = _capture_state.RNN_OPS[0]
    _capture_state.RNN_OPS[0] = False
    try:
        yield
    finally:
        _capture_state.RNN_OPS[0] = was


@contextlib.contextmanager
def _no_cudnn() -> Iterator[None]:
    """``torch.backends.cudnn`` off inside (its ``flags`` context would also reset benchmark and TF32 flags)."""
    was = torch._C._get_cudnn_enabled()
    torch._C._set_cudnn_enabled(False)
    try:
        yield
    finally:
        torch._C._set_cudnn_enabled(was)


def _first_run(entry: _Entry, leaves: list[Any]) -> Any:
    """Run a new entry once (for a compiled mode, the call that compiles): a refusal of torch's compiler (an error
    of TorchDynamo or inductor, or :class:`~._capture_inductor.CompileFailed`) becomes a ``BackendError`` that names
    the step's mode, torch's reason, and what to do."""
    if entry.mode == "capture":
        return entry.run(*leaves)  # type: ignore[misc]
    try:
        return entry.run(*leaves)  # type: ignore[misc]
    except BackendError:
        raise
    except Exception as exc:
        if not isinstance(exc, CompileFailed) and not type(exc).__module__.startswith(
            ("torch._dynamo", "torch._inductor")
        ):
            raise
        causes = [exc]
        while causes[-1].__cause__ is not None or causes[-1].__context__ is not None:
            nxt = causes[-1].__cause__ or causes[-1].__context__
            if nxt in causes:
                break
            causes.append(nxt)  # type: ignore[arg-type]
        reason = "; ".join(f"{type(c).__name__}: {(str(c).splitlines() or [''])[0]}" for c in reversed(causes))
        raise _Refused(
            f"ember_torch.compile: torch's compiler (mode={entry.mode!r}) refused the captured step ({reason})"
        ) from exc


class _Refused(BackendError):
    """``torch.compile`` refused a captured step (:func:`_first_run`); ``reason`` is the first sentence."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}. The captured graph runs without torch's compiler: use mode='capture' for this "
                         "step; please report the step (issue 32).")
        self.reason = reason


def _check_devices(fl: Flat) -> None:
    """Every tensor of a new structure on the torch backend, else a ``BackendError`` (devices are part of the
    structure, so a structure found in the cache was checked when it was captured)."""
    try:
        check_devices(fl)
    except ForeignTensor as exc:
        raise BackendError(
            f"ember_torch.compile: a tensor of the {exc.obj.device} device is among the arguments; a compiled "
            "step takes tensors of the torch backend (or Autodiff(torch)) only: move it with .to_device(...)."
        ) from None


@contextlib.contextmanager
def _quiet_torch() -> Iterator[None]:
    """torch.compile imports inductor and its first call compiles: torch's own deprecation warnings from there
    (``torch.jit.script_method`` in ``torch.utils.mkldnn``) say nothing to an Ember user, and are silenced here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch(\.|$)")
        warnings.filterwarnings("ignore", message=r".*torch\.jit\..*deprecated", category=DeprecationWarning)
        yield


def _is_host_read(exc: BaseException) -> bool:
    """Whether ``exc`` is torch's answer to a read of a fake tensor's values during capture."""
    names = {c.__name__ for c in type(exc).__mro__}
    if names & {"GuardOnDataDependentSymNode", "DataDependentOutputException", "DynamicOutputShapeException",
                "UnsupportedFakeTensorException"}:
        return True
    msg = str(exc)
    return ".numpy() is not supported for tensor subclasses" in msg or "data-dependent" in msg


def compile(fn: Callable[..., Any] | None = None, *, mode: str | None = None, backend: Any = "inductor",
            options: dict[str, Any] | None = None) -> Any:
    """Capture a whole step function of Ember objects as one aten graph, and replay it (issue 32).

    ::

        @ember_torch.compile
        def train_step(model, optim, batch, lr):
            out = model.train_step(batch)               # forward + Ember's backward on Autodiff(torch)
            model = optim.step(lr, model, out.grads)    # Ember's optimizer
            return model, out.item

        model, item = train_step(model, optim, batch, lr)   # lr: a Float tensor [1] (dynamic)

    Arguments and results may nest ``Tensor``, ``Param``, ``RunningState``, ``Module``, ``Optimizer``,
    ``GradientsParams``, dataclass instances, lists, tuples, namedtuples, dicts, ``None``, plain values and raw
    ``torch.Tensor`` s. Tensors are dynamic (graph inputs); plain values (int, float, bool, str, configs) are
    static: part of the cache key, so a new value captures again (pass values that change every step, such as the
    learning rate, as tensors). The step is captured once per argument structure (shapes, dtypes, devices, static
    values, parameter ids, optimizer-state layout): Ember's Python (wrappers, the autodiff tape, module walks, the
    optimizer's loop over parameters) runs at capture only, as do the step's Python side effects (prints).

    State is written back after each call: each optimizer's per-parameter state (a Python int/float in it, e.g.
    Adam's step count, becomes an Int/Float ``[1]`` tensor first and stays one), and new ``RunningState`` values
    (BatchNorm's running statistics). Random ops draw from torch's default generator of the device, to which each
    call lends the state of the backend's generator (and takes it back), so a compiled step draws the numbers the
    eager step would draw after the same seed (Dropout: a new mask at every call), also under inductor (whose
    ``fallback_random`` option is on for a step that draws, unless ``options`` sets it).

    Args:
        fn: the step function.
        mode: ``"capture"``: replay the captured aten graph (``torch.fx.GraphModule``) as it is: no compile time,
            one aten call per op and no Ember Python; ``"default"``, ``"reduce-overhead"`` (CUDA graphs, CUDA
            only), ``"max-autotune"`` (CUDA only), ``"max-autotune-no-cudagraphs"``: inductor compiles the graph
            with the mode's options (C++/OpenMP kernels on the CPU, Triton on CUDA; tens of seconds per capture on
            a small CPU): directly (``torch._inductor.compile``, without TorchDynamo's re-trace and per-call
            guards; once more for arguments with new strides), or, for another ``backend`` or with ``freezing``,
            through ``torch.compile(graph, ..., fullgraph=True, dynamic=False)``. ``None`` (default):
            ``"default"`` when the step's tensors are on CUDA, ``"capture"`` elsewhere; a step that torch's compiler
            refuses then runs as ``"capture"``, with a ``RuntimeWarning`` that gives torch's reason (a mode asked
            for raises ``BackendError`` instead).
        backend: the ``torch.compile`` backend for the modes other than ``"capture"`` (default ``"inductor"``;
            ``"aot_eager"`` runs the compile pipeline without generating code).
        options: inductor options (``torch._inductor.config`` keys, ``torch.compile``'s ``options``), over the
            mode's own (``torch._inductor.list_mode_options(mode)``): a mode and options combine, which
            ``torch.compile`` itself refuses. A step that draws random numbers gets ``fallback_random=True``
            unless set here; a step on the CPU (without ``freezing``) gets ``layout_optimization=False`` unless
            set here (inductor's channels-last convolutions slowed ResNet-18's training step 1.7x there,
            ``docs/torch.md``).
            ``{"freezing": True}`` for inference: in a step that writes no state back, the plain-tensor values of
            the ``Param`` s and ``RunningState`` s among the arguments are compiled as constants (inductor's
            freezing: prepacked oneDNN/MKL convolution and linear weights, fused Conv+activation), the graph runs
            under ``torch.no_grad()``, and a call with other weights (other tensors, or changed in place)
            compiles again; ``Autodiff`` parameters (fine-tuning) stay inputs (:mod:`._capture_freeze`).

    Returns:
        A :class:`CompiledStep` (callable; ``trace_count``, ``cache_size``, ``clear_cache()``, ``graph(*args)``).

    Raises:
        BackendError: at call time, a tensor of another backend among the arguments; at capture, a host read of a
            captured value (``into_scalar``, ``to_data``, ``bool(tensor)``, a Python branch on a value), with what
            to do instead; a CUDA-graph mode for tensors not on CUDA; at the first call of a structure, a step
            that ``torch.compile`` refuses under a ``mode`` asked for (torch's reason in the message).
        ValueError: an unknown ``mode``.
        TypeError: ``fn`` is not callable; a ``Gradients`` among the arguments or results.
    """
    if fn is None:
        return functools.partial(compile, mode=mode, backend=backend, options=options)
    return CompiledStep(fn, mode=mode, backend=backend, options=options)

