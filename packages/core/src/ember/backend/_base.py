"""The backend contract: ``Backend``, the base every backend (and ``Autodiff``) derives from.

A backend maps Ember's primitive ops onto an array library. Conventions for every op method:

- A *primitive* (``p``) is the array library's own array (``numpy.ndarray``, ``torch.Tensor``,
  ``jax.Array``) or, for ``Autodiff``, its wrapper. Backends never see ``ember.Tensor``.
- The core validates and normalizes arguments before calling: dims are non-negative ints in
  range, shapes are tuples of ints, slices are ``slice`` objects with non-negative bounds and a
  positive step. A backend does not re-check them.
- Binary element-wise ops take a primitive or a Python scalar as second operand and broadcast as
  numpy does; the result keeps the first operand's element type.
- Ops never mutate their inputs (JAX arrays are immutable): ``slice_assign`` and friends return a
  new primitive. The one exception: the fused optimizer updates (:mod:`._ops_optim`) may overwrite the
  optimizer's state buffers they are given.
- Reductions over the whole tensor return shape ``(1,)`` (Burn's convention); ``*_dim``
  reductions keep the reduced dim with size 1.
- Int results (``argmax``, ``argsort`` ...) have the backend's ``int_dtype``; comparisons give
  ``bool``.

Required ops raise ``NotImplementedError`` here; the others have defaults written with the
required ones, which a backend overrides where the library has a faster kernel. The op groups
follow Burn: core (this file: data, creation, casts), :mod:`._ops_numeric`,
:mod:`._ops_shape`, :mod:`._ops_float`, :mod:`._ops_intbool`, :mod:`._ops_activation`,
:mod:`._ops_module`, :mod:`._ops_activation_grad` (activation gradients), :mod:`._ops_norm`
(normalization), :mod:`._ops_rnn` (a whole LSTM layer), :mod:`._ops_optim` (fused optimizer updates, which
may update the optimizer's state buffers in place), :mod:`._ops_quant` (quantize, dequantize, int8 matmul),
:mod:`._collectives` (the collective engine behind
:mod:`ember.distributed`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from .._distribution import Distribution
from .._dtype import DType
from .._errors import BackendError, ConfigError, DTypeError
from ._capabilities import BackendCapabilities
from ._collectives import CollectiveOps
from ._device import Device
from ._mesh import DeviceMesh
from ._ops_activation import ActivationOps
from ._ops_activation_grad import ActivationGradOps
from ._ops_attention import AttentionOps
from ._ops_float import FloatOps
from ._ops_intbool import IntBoolOps
from ._ops_module import ModuleOps
from ._ops_norm import NormOps
from ._ops_numeric import NumericOps
from ._ops_optim import OptimOps
from ._ops_quant import QuantOps
from ._ops_rnn import RnnOps
from ._ops_shape import ShapeOps

__all__ = ["Backend", "required"]


def required(name: str) -> Any:
    raise NotImplementedError(
        f"this backend does not implement the required primitive {name!r}; see "
        "ember.backend.Backend for the contract"
    )


class Backend(NumericOps, ShapeOps, FloatOps, IntBoolOps, ActivationOps, ModuleOps, OptimOps,
              NormOps, RnnOps, AttentionOps, ActivationGradOps, QuantOps, CollectiveOps):
    """Base class of every backend.

    Subclasses set ``name`` and the capability flags, implement the required primitives and
    ``_make_devices``. Users get instances from :func:`ember.backend`, never by constructing.

    Args:
        float_dtype: element type of Float tensors (``"float32"`` default; ``"float64"``,
            ``"float16"``, ``"bfloat16"`` where ``supported_dtypes`` has it).
        int_dtype: element type of Int tensors (``"int64"`` default, or ``"int32"``).

    Raises:
        DTypeError: a dtype the backend does not support, or of the wrong kind.
    """

    name: ClassVar[str] = "abstract"
    #: element types this backend can hold
    supported_dtypes: ClassVar[frozenset[DType]] = frozenset(
        {DType.FLOAT32, DType.FLOAT64, DType.INT64, DType.INT32, DType.BOOL}
    )
    #: the backend has its own autodiff (torch.autograd, jax.grad) usable behind ``Autodiff``
    supports_native_autodiff: ClassVar[bool] = False
    #: primitives can be exchanged without a copy through DLPack
    supports_dlpack: ClassVar[bool] = False
    #: ``True`` only for ``ember.autodiff.Autodiff``
    is_autodiff: ClassVar[bool] = False
    #: :meth:`compile` traces a whole step into one program (see :class:`BackendCapabilities`)
    compiles_steps: ClassVar[bool] = False
    #: :meth:`compile` takes ``donate_argnums`` and ``copy_donated`` (see :class:`BackendCapabilities`)
    donates_args: ClassVar[bool] = False
    #: :meth:`device_mesh` gives a mesh of several devices of this process that one compiled program spans
    spmd_devices: ClassVar[bool] = False
    #: :meth:`process_mesh` gives a mesh of the processes of a multi-process run that one compiled program spans
    spmd_processes: ClassVar[bool] = False

    bool_dtype = DType.BOOL

    def __init__(self, float_dtype: DType | str = DType.FLOAT32, int_dtype: DType | str = DType.INT64) -> None:
        fd, idt = DType.parse(float_dtype), DType.parse(int_dtype)
        if not fd.is_float:
            raise DTypeError(f"{self.name} backend: float_dtype must be a float type, got {fd}.")
        if idt.kind != "int":
            raise DTypeError(f"{self.name} backend: int_dtype must be a signed int type, got {idt}.")
        for d in (fd, idt):
            if d not in self.supported_dtypes:
                raise DTypeError(
                    f"{self.name} backend does not support {d}; supported: "
                    f"{', '.join(sorted(x.value for x in self.supported_dtypes))}."
                )
        self.float_dtype: DType = fd
        self.int_dtype: DType = idt
        self.options: dict[str, Any] = {"float_dtype": fd.value, "int_dtype": idt.value}
        self._devices: dict[str, Device] = {}

    def _threads_option(self, threads: Any) -> int | None:
        """Check the ``threads`` option every backend takes (``None``: leave the library's setting alone) and record
        it in :attr:`options`; the backend then applies it to its library (each backend's docstring says how).

        Raises:
            ConfigError: ``threads`` is not a positive int or ``None``.
        """
        if threads is None:
            return None
        if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
            raise ConfigError(
                f"{self.name} backend: threads must be a positive int (or None to leave the library's setting alone), "
                f"got {threads!r}; e.g. ember.backend({self.name!r}, threads=1)."
            )
        self.options["threads"] = threads
        return threads

    # ------------------------------------------------------------------ devices
    def _make_device(self, name: str) -> Device:
        """Create the Device called ``name`` (e.g. ``"cpu"``, ``"cuda:0"``).

        Raises:
            BackendError: no such device here.
        """
        raise NotImplementedError

    def _device_names(self) -> list[str]:
        """Names of the devices available on this machine, default first."""
        return ["cpu"]

    def device(self, name: str | None = None) -> Device:
        """The device called ``name`` (default: the backend's default device).

        Raises:
            BackendError: the device does not exist on this machine; the message lists those that do.
        """
        key = name if name is not None else self._device_names()[0]
        dev = self._devices.get(key)
        if dev is None:
            dev = self._make_device(key)
            # an alias ("cpu" for "cpu:0") resolves to the device already made under its canonical name:
            # one Device object per device, so ``is`` comparisons (and Autodiff's ``inner``) keep holding
            dev = self._devices.setdefault(dev.name, dev)
            self._devices[key] = dev
        return dev

    def devices(self) -> list[Device]:
        """Every device of this backend on this machine."""
        return [self.device(n) for n in self._device_names()]

    def seed(self, seed: int) -> None:
        """Seed the backend's random generator: every random op after it is reproducible."""
        required("seed")

    def rng_state(self) -> Any:
        """The state of the backend's random generator(s) as plain JSON data (dicts, lists, str, int, float, bool,
        ``None``): what :meth:`set_rng_state` takes back, so that the random ops after it draw the numbers they would
        have drawn after this call. A checkpoint saves it (the Learner's resume is bitwise with dropout).

        The default returns ``None``: the backend cannot save its random state (a resumed run then draws other
        random numbers than an uninterrupted one; the Learner logs it).
        """
        return None

    def set_rng_state(self, state: Any) -> None:
        """Restore a state returned by :meth:`rng_state` of a backend of the same kind.

        Raises:
            BackendError: the state is not one of this backend's (names what was expected and found).
        """
        if state is not None:
            raise BackendError(
                f"{self.name} backend: cannot restore a random-generator state (it saves none: rng_state() returns "
                f"None), found {type(state).__name__}; implement rng_state/set_rng_state in the backend."
            )

    @property
    def capabilities(self) -> BackendCapabilities:
        """What this backend can do (:class:`~ember.backend.BackendCapabilities`): whether :meth:`compile` compiles
        whole steps, whether one program can span several devices or processes (:meth:`device_mesh`,
        :meth:`process_mesh`), whether it has collectives, DLPack, its dtypes. Read from the backend's class flags
        (``compiles_steps``, ``spmd_devices``, ``spmd_processes``, ``supports_collectives`` ...); an ``Autodiff``
        backend gives its inner backend's. Ask it instead of testing the backend's ``name``.

        >>> import ember
        >>> ember.backend("numpy").capabilities.compiles_steps
        False
        """
        return BackendCapabilities(
            compiles_steps=self.compiles_steps, donates_args=self.donates_args, spmd_devices=self.spmd_devices,
            spmd_processes=self.spmd_processes,
            collectives=self.supports_collectives, native_autodiff=self.supports_native_autodiff,
            dlpack=self.supports_dlpack, dtypes=frozenset(self.supported_dtypes))

    def device_mesh(self, devices: Sequence[Device]) -> DeviceMesh:
        """The :class:`~ember.backend.DeviceMesh` over ``devices`` (two or more devices of this backend in this
        process) that one compiled step spans: replicate the model on it, shard each batch over it, and the step
        compiled by :meth:`compile` runs as one program over the devices (SPMD), gradients all-reduced inside.

        Raises:
            BackendError: the backend cannot (``capabilities.spmd_devices`` is false: the default), or ``devices``
                are not distinct devices of this backend.
        """
        raise BackendError(
            f"{self.name} backend: one compiled program cannot span several devices here (capabilities.spmd_devices "
            "is false); train with one process per device (ember.distributed) instead."
        )

    def process_mesh(self, device: Device) -> DeviceMesh:
        """The :class:`~ember.backend.DeviceMesh` of a multi-process run (one device per process, ``device``'s
        local index in each) that one compiled step spans; each process's batch is its block of the global batch.

        Raises:
            BackendError: the backend cannot (``capabilities.spmd_processes`` is false: the default), or ``device``
                is not one of this process's devices of this backend.
        """
        raise BackendError(
            f"{self.name} backend: one compiled program cannot span the processes of a run here "
            "(capabilities.spmd_processes is false); average the gradients with ember.distributed's collectives."
        )

    def compile(self, fn: Any, **options: Any) -> Any:
        """A compiled version of ``fn``, a whole step (forward, backward, optimizer update, or a
        validation step) taking and returning Ember objects (tensors, modules, optimizers,
        batches, outputs).

        Backends that compile (jax: :func:`ember_jax.jit`; torch: :func:`ember_torch.compile`, one
        captured aten graph) trace ``fn`` once per argument structure and run the compiled program
        afterwards; mutable state (optimizer state, ``RunningState`` values, the backend's random key)
        is carried through the call and written back. ``options`` are the backend's own (jax:
        ``donate_state``, ``donate_argnums``; torch: ``mode``, ``backend``, ``options``). The default,
        used by eager backends (numpy), returns ``fn`` unchanged and ignores ``options``, so callers
        can always write
        ``step = device.backend.compile(step)``.

        Returns:
            A callable with ``fn``'s signature (``fn`` itself on eager backends).
        """
        return fn

    def is_concrete(self, p: Any) -> bool:
        """Whether primitive ``p`` holds concrete values that the host can read now.

        ``False`` only inside a compiled step (a jax tracer, a torch capture): data-dependent checks (``to_data``,
        value validation, Python branches on values) must then be skipped or written with tensor
        ops. Default: ``True`` (eager backends always hold values).
        """
        return True

    def checks_index_values(self, handle: Any) -> bool:
        """Whether index values out of range on the device ``handle`` are reported as ``ember.IndexError``.

        The contract: every Tensor op that takes indices (gathers, selects, scatters, ``take``,
        ``embedding``, ``one_hot``, ``CrossEntropyLoss`` targets) rejects an index outside ``[0, size)``,
        negative ones included, with ``ember.IndexError``. The core checks that before calling the backend
        (:mod:`ember.tensor._index_check`: one :meth:`index_bounds` reduction and a read of two scalars), so
        backends need not check in their kernels. A backend returns ``False`` for a device where that read
        would cost a host synchronisation per op: the core then skips the check and the library's own
        behaviour applies (PyTorch on CUDA stops with a device-side assert, which also leaves the CUDA
        context unusable, exactly as it does in raw PyTorch). Default: ``True``.
        """
        return True

    def dtype_for(self, kind_index: int) -> DType:
        """Element type of the kind with index ``kind_index`` (0 Float, 1 Int, 2 Bool)."""
        return (self.float_dtype, self.int_dtype, DType.BOOL)[kind_index]

    def check_dtype(self, dtype: DType) -> None:
        if dtype not in self.supported_dtypes:
            raise DTypeError(
                f"{self.name} backend does not support {dtype}; supported: "
                f"{', '.join(sorted(x.value for x in self.supported_dtypes))}."
            )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(float_dtype={self.float_dtype}, int_dtype={self.int_dtype})"

    # ------------------------------------------------------------------ data and info
    def shape(self, p: Any) -> tuple[int, ...]:
        """Shape of a primitive as a tuple of ints."""
        return tuple(p.shape)

    def dtype(self, p: Any) -> DType:
        """Element type of a primitive."""
        return required("dtype")

    def device_handle(self, p: Any) -> Any:
        """The device handle a primitive lives on (compare with ``Device.handle``)."""
        return required("device_handle")

    def from_numpy(self, array: np.ndarray, dtype: DType, handle: Any) -> Any:
        """A primitive holding ``array``'s values as ``dtype`` on device ``handle``.

        ``array`` is any numpy array (float64 from Python lists, or the user's own array); for
        ``BFLOAT16`` it holds float32 values. A *writable* array may be the user's and written
        later, so the backend must copy it; a read-only array (a record, another tensor's
        ``to_numpy()``) may be shared without a copy.
        """
        return required("from_numpy")

    def to_numpy(self, p: Any) -> np.ndarray:
        """The values of ``p`` as a numpy array on the host (bfloat16 widened to float32)."""
        return required("to_numpy")

    def to_device(self, p: Any, handle: Any) -> Any:
        """``p`` moved to another device of the same backend."""
        return p

    def from_dlpack(self, obj: Any) -> Any:
        """A primitive sharing memory with a DLPack-capable object (only if ``supports_dlpack``)."""
        raise BackendError(f"{self.name} backend does not support DLPack")

    # ------------------------------------------------------------------ creation
    def full(self, shape: tuple[int, ...], value: float | int | bool, dtype: DType, handle: Any) -> Any:
        """A primitive of ``shape`` filled with ``value``."""
        return required("full")

    def zeros(self, shape: tuple[int, ...], dtype: DType, handle: Any) -> Any:
        return self.full(shape, 0, dtype, handle)

    def ones(self, shape: tuple[int, ...], dtype: DType, handle: Any) -> Any:
        return self.full(shape, 1, dtype, handle)

    def empty(self, shape: tuple[int, ...], dtype: DType, handle: Any) -> Any:
        """Uninitialized values are never exposed: the default is zeros."""
        return self.zeros(shape, dtype, handle)

    def arange(self, start: int | float, end: int | float, step: int | float, dtype: DType, handle: Any) -> Any:
        """``[start, start+step, ...)`` up to ``end`` excluded, 1-D (numpy.arange semantics)."""
        return required("arange")

    def random(self, shape: tuple[int, ...], distribution: Distribution, dtype: DType, handle: Any) -> Any:
        """Samples of ``distribution`` with ``shape``.

        Default: ``default``/``uniform`` via :meth:`random_uniform`, ``normal`` via
        :meth:`random_normal`, ``bernoulli`` as ``uniform < prob``.
        """
        k = distribution.kind
        if k in ("default", "uniform"):
            return self.random_uniform(shape, distribution.a, distribution.b, dtype, handle)
        if k == "normal":
            return self.random_normal(shape, distribution.a, distribution.b, dtype, handle)
        if k == "bernoulli":
            u = self.random_uniform(shape, 0.0, 1.0, self.float_dtype, handle)
            return self.cast(self.lower(u, distribution.a), dtype)
        raise BackendError(f"unknown distribution kind {k!r}")

    def random_uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: DType, handle: Any) -> Any:
        """Uniform samples on ``[low, high)`` (ints: integers in ``[low, high)``)."""
        return required("random_uniform")

    def random_normal(self, shape: tuple[int, ...], mean: float, std: float, dtype: DType, handle: Any) -> Any:
        """Normal samples with ``mean`` and standard deviation ``std``."""
        return required("random_normal")

    # ------------------------------------------------------------------ casts between kinds
    def cast(self, p: Any, dtype: DType) -> Any:
        """``p`` converted to ``dtype`` (floats to ints truncate toward zero; bools become 0/1)."""
        return required("cast")

    def bitcast(self, p: Any, dtype: DType) -> Any:
        """``p``'s bits read as ``dtype``, which has the same item size and is not bool (``Tensor.bitcast``
        handles bool); little-endian, shape unchanged. XLA's ``bitcast_convert_type``, numpy's ``view``,
        torch's ``Tensor.view(dtype)``."""
        return required("bitcast")

    def int_into_float(self, p: Any) -> Any:
        """An Int primitive as a Float primitive of the backend's float dtype (on Float ops)."""
        return self.cast(p, self.float_dtype)

    def bool_into_float(self, p: Any) -> Any:
        """A Bool primitive as Float 0/1 (called on Float ops)."""
        return self.cast(p, self.float_dtype)

    def bool_into_int(self, p: Any) -> Any:
        """A Bool primitive as Int 0/1."""
        return self.cast(p, self.int_dtype)

    def float_into_int(self, p: Any) -> Any:
        """A Float primitive truncated toward zero into Int (called on Float ops)."""
        return self.cast(p, self.int_dtype)

    def detach(self, p: Any) -> Any:
        """``p`` cut from any autodiff graph (identity on plain backends)."""
        return p

    def inner(self, p: Any) -> Any:
        """The inner backend's primitive of ``p`` (``Autodiff`` unwraps; identity otherwise)."""
        return p

    def from_inner(self, p: Any) -> Any:
        """An inner backend's primitive as this backend's, untracked (identity on plain backends)."""
        return p

    def cast_list(self, ps: Sequence[Any], dtype: DType) -> list[Any]:
        return [self.cast(p, dtype) for p in ps]
