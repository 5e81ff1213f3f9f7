"""``JaxBackend``: the backend contract on ``jax.Array`` (any device jax offers).

Primitives are ``jax.Array`` values (or jax tracers while a function is traced). jax arrays are
immutable, so every op is a pure function and the "in-place" Burn ops (``slice_assign``,
``select_assign``, ``scatter``, the mask ops) are functional ``.at[...]`` updates. Every
primitive is one call of a compiled kernel (see :mod:`._kernel`).
"""

from __future__ import annotations

from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from ember import BackendError, Distribution, DType, DTypeError
from ember.backend import Backend, Device

from . import _pytree, _random
from ._activation import JaxActivationOps
from ._float import JaxFloatOps
from ._host import host_read_error
from ._intbool import JaxIntBoolOps
from ._kernel import FROM_JNP, JNP, is_tracer, kernel, require, x64
from ._module import JaxModuleOps
from ._numeric import JaxNumericOps
from ._optim import JaxOptimOps
from ._quant import JaxQuantOps
from ._rnn import JaxRnnOps
from ._shape import JaxShapeOps
from ._threads import apply_threads

__all__ = ["JaxBackend"]

@kernel(1)
def _cast(p: Any, dtype: np.dtype) -> Any:
    return p.astype(dtype)


@kernel(0, 1)
def _full(shape: tuple[int, ...], dtype: np.dtype, value: Any) -> Any:
    return jnp.full(shape, value, dtype)


def _device_name(d: Any) -> str:
    return f"{d.platform}:{d.id}"


class JaxBackend(
    JaxNumericOps, JaxShapeOps, JaxFloatOps, JaxIntBoolOps, JaxActivationOps, JaxModuleOps, JaxOptimOps, JaxRnnOps,
    JaxQuantOps, Backend
):
    """The JAX backend: the devices of ``jax.local_devices()`` (this process's; the default one first, named
    ``"<platform>:<id>"`` as jax prints them: ``"cpu:0"``, ``"gpu:0"``, ``"tpu:0"``), then the CPU
    devices when the default platform is an accelerator. A platform name alone (``"cpu"``,
    ``"gpu"``) means its first device; ``"cuda:N"`` and ``"rocm:N"`` mean ``"gpu:N"``.

    Element types: float32 (default), float16, bfloat16, and float64; Int tensors are int64 by
    default when jax's x64 mode is on and int32 otherwise (jax's own default integer), or as
    given (``ember.backend("jax", int_dtype="int32")``). Asking for float64 or int64 turns x64 on
    for the whole process (``jax.config.update("jax_enable_x64", True)``): see
    :mod:`ember_jax._kernel`. int16, int8, uint8, uint16, uint32, uint64 and bool are available
    through ``Tensor.cast`` (uint64, like int64, turns x64 on).

    Multi-process runs: under a launcher (``WORLD_SIZE > 1`` in the environment) the first device the backend
    makes joins the run with ``ember.distributed.init_process_group`` (``jax.distributed``), which jax requires
    before any device is used (see :func:`ember_jax._collectives.auto_join`).

    Random numbers: a functional threefry key owned by the backend instance, split by every random
    op (:mod:`ember_jax._random`); :meth:`seed` resets it.

    Index values: jax never raises for an out-of-range index (a gather fills the result with NaN,
    or the smallest integer, and a scatter drops the update). When the indices are concrete (not
    traced) the backend checks them first and raises ``IndexError`` (``ember.IndexError`` at the
    tensor level); the check reads the indices on the host (about 2 µs on the CPU, a
    device-to-host copy on an accelerator). Under ``jax.jit`` there is no check: jax's fill/drop
    behaviour applies.

    Data-dependent shapes: ``nonzero`` and ``argwhere`` need concrete values; they run eagerly and
    raise ``BackendError`` under tracing.

    DLPack: ``supports_dlpack`` is true (``jax.dlpack.from_dlpack`` takes numpy arrays and torch
    tensors, and jax arrays export ``__dlpack__``).

    Threads: ``threads=1`` makes XLA's CPU kernels single-threaded (``--xla_cpu_multi_thread_eigen=false`` added
    to ``XLA_FLAGS``); **process-wide**, and only before jax starts its backends (the first jax device or array of
    the process), as XLA reads its flags then; GPU and TPU kernels are not affected. ``None`` (default) leaves XLA
    on all cores. XLA has no setting for another count (see :mod:`ember_jax._threads`).

    Raises:
        DTypeError: an unsupported ``float_dtype`` / ``int_dtype`` option.
        ConfigError: ``threads`` other than 1, or ``threads=1`` after jax has started (the message says what to do).
    """

    name = "jax"
    supported_dtypes = frozenset(JNP)
    supports_dlpack = True
    supports_native_autodiff = False
    #: collectives through jax.distributed and compiled jax programs (:mod:`ember_jax._collectives`)
    supports_collectives = True
    #: conformance tests this backend is known to fail, ``{pattern: reason}`` (none today).
    conformance_known_failures: ClassVar[dict[str, str]] = {}

    def __init__(self, float_dtype: DType | str = DType.FLOAT32, int_dtype: DType | str | None = None,
                 threads: int | None = None) -> None:
        fd = DType.parse(float_dtype)
        if fd in self.supported_dtypes:
            require(fd)  # float64 turns x64 on first, which makes int64 the default Int type
        if int_dtype is None:
            int_dtype = DType.INT64 if x64() else DType.INT32
        super().__init__(fd, int_dtype)
        require(self.int_dtype)
        self._fdt: np.dtype = JNP[self.float_dtype]
        self._idt: np.dtype = JNP[self.int_dtype]
        self._keys = _random.KeyState()
        self._jax_devices: dict[str, Any] | None = None
        self._default_handle: Any = None
        n = self._threads_option(threads)
        if n is not None:
            apply_threads(n)

    # ------------------------------------------------------------------ devices and seeding
    def _by_name(self) -> dict[str, Any]:
        if self._jax_devices is None:
            # under a launcher (WORLD_SIZE > 1) jax joins the run before it touches a device
            from ._collectives import auto_join

            auto_join(self)
        if self._jax_devices is None:
            # this process's devices: in a multi-process run (jax.distributed) jax.devices() also lists the
            # other processes' devices, which this process cannot hold arrays on
            devs = list(jax.local_devices())
            if devs[0].platform != "cpu":
                try:
                    devs += list(jax.local_devices(backend="cpu"))
                except RuntimeError:  # pragma: no cover - a jax without a CPU client
                    pass
            self._jax_devices = {_device_name(d): d for d in devs}
            self._default_handle = devs[0]
        return self._jax_devices

    def _device_names(self) -> list[str]:
        return list(self._by_name())

    def _make_device(self, name: str) -> Device:
        by_name = self._by_name()
        key = name.lower()
        for alias in ("cuda:", "rocm:"):
            if key.startswith(alias):
                key = "gpu:" + key[len(alias):]
        if key in ("gpu", "cuda", "rocm", "tpu", "cpu"):
            plat = {"gpu": ("gpu", "cuda", "rocm")}.get(key, (key,))
            key = next((n for n, d in by_name.items() if d.platform in plat), key)
        handle = by_name.get(key)
        if handle is None:
            raise BackendError(
                f"jax backend: device {name!r} is not available on this machine (jax {jax.__version__}); "
                f"available: {', '.join(by_name)}."
            )
        return Device(self, handle, key)

    def collectives(self) -> Any:
        """The jax engine of :mod:`ember.distributed`: ``jax.distributed`` across processes, compiled programs
        over a mesh of one device per process (:class:`ember_jax._collectives.JaxCollectives`)."""
        from ._collectives import JaxCollectives

        return JaxCollectives()

    def compile(self, fn: Any, **options: Any) -> Any:
        """``ember_jax.jit(fn, **options)``: the whole step compiled by XLA (see :func:`ember_jax.jit`).

        Options: ``donate_state`` (default ``True``) and ``donate_argnums`` (default ``()``), as in
        :func:`ember_jax.jit`.

        Raises:
            TypeError: an unknown option.
        """
        unknown = sorted(set(options) - {"donate_state", "donate_argnums"})
        if unknown:
            raise TypeError(
                f"jax backend: compile() options are donate_state and donate_argnums, got {', '.join(unknown)}."
            )
        from ._jit import jit

        return jit(fn, **options)

    def is_concrete(self, p: Any) -> bool:
        """``False`` for a jax tracer (inside ``ember_jax.jit`` / ``jax.jit``): its values cannot be read."""
        return not is_tracer(p)

    def seed(self, seed: int) -> None:
        """Reset the backend's PRNG key to ``seed`` (modulo ``2**64``): the random ops that follow
        are reproducible (same values for the same seed and call order)."""
        self._keys.seed(seed)

    def rng_state(self) -> Any:
        """``{"kind": "jax", "key": [two uint32 words] or None}``: the threefry key (``None`` before the first random
        op of an unseeded backend)."""
        return {"kind": "jax", "key": self._keys.state()}

    def set_rng_state(self, state: Any) -> None:
        """Restore :meth:`rng_state`.

        Raises:
            BackendError: not a jax backend's state.
        """
        key = state.get("key", 0) if isinstance(state, dict) and state.get("kind") == "jax" else 0
        try:
            self._keys.set_state(key)
        except (TypeError, ValueError) as exc:
            raise BackendError(
                "jax backend: set_rng_state expects the dict rng_state() returned ({'kind': 'jax', 'key': [w0, w1] "
                f"or None}}), found {str(state)[:120]}."
            ) from exc

    # ------------------------------------------------------------------ data and info
    def shape(self, p: Any) -> tuple[int, ...]:
        return p.shape  # type: ignore[no-any-return]

    def dtype(self, p: Any) -> DType:
        try:
            return FROM_JNP[p.dtype]
        except KeyError:
            raise DTypeError(
                f"jax backend: arrays of {p.dtype} have no Ember element type; supported: "
                f"{', '.join(sorted(d.value for d in JNP))}."
            ) from None

    def device_handle(self, p: Any) -> Any:
        """The jax Device of ``p``; the default device for a traced value (placement inside a
        compiled function is jax's)."""
        try:
            return p.device
        except AttributeError:
            self._by_name()
            return self._default_handle

    def _place(self, p: Any, handle: Any) -> Any:
        """``p`` on ``handle`` (a no-op on the default device, where kernels put their results)."""
        if handle is None or handle is self._default_handle or is_tracer(p):
            return p
        return jax.device_put(p, handle)

    def from_numpy(self, array: np.ndarray, dtype: DType, handle: Any) -> Any:
        """A jax array with ``array``'s values as ``dtype`` on ``handle``; bfloat16 is rounded to
        nearest even on the host (ml_dtypes).

        ``jax.device_put`` may alias host memory on the CPU and copies asynchronously (even with
        ``may_alias=False`` the copy can happen after the call returns), so the values are first
        copied on the host unless the dtype conversion already made a new array: a caller writing
        ``array`` later never changes the tensor."""
        self.check_dtype(dtype)
        require(dtype)
        nd = JNP[dtype]
        host = np.asarray(array, dtype=nd)
        if np.may_share_memory(host, array):
            host = np.array(host, copy=True)
        return jax.device_put(host, handle)

    def to_numpy(self, p: Any) -> np.ndarray:
        """The values as numpy (``np.asarray``: no copy on the CPU); bfloat16 is widened to
        float32.

        Raises:
            BackendError: ``p`` is traced (inside ``jax.jit``): its values do not exist yet.
        """
        if is_tracer(p):
            raise host_read_error()
        a = np.asarray(p)
        return a.astype(np.float32) if a.dtype == JNP[DType.BFLOAT16] else a

    def to_device(self, p: Any, handle: Any) -> Any:
        return jax.device_put(p, handle)

    def from_dlpack(self, obj: Any) -> Any:
        """A jax array sharing memory with ``obj`` where jax can (numpy arrays, torch tensors)."""
        return jax.dlpack.from_dlpack(obj)

    # ------------------------------------------------------------------ creation
    def full(self, shape: tuple[int, ...], value: Any, dtype: DType, handle: Any) -> Any:
        require(dtype)
        return self._place(_full(shape, JNP[dtype], value), handle)

    def zeros(self, shape: tuple[int, ...], dtype: DType, handle: Any) -> Any:
        return self.full(shape, 0, dtype, handle)

    def ones(self, shape: tuple[int, ...], dtype: DType, handle: Any) -> Any:
        return self.full(shape, 1, dtype, handle)

    def arange(self, start: Any, end: Any, step: Any, dtype: DType, handle: Any) -> Any:
        """numpy.arange's values (length ``ceil((end - start) / step)``), computed on the host:
        the length is a static shape anyway."""
        wide = np.float64 if dtype.is_float else np.int64
        return self.from_numpy(np.arange(start, end, step, dtype=wide), dtype, handle)

    def random(self, shape: tuple[int, ...], distribution: Distribution, dtype: DType, handle: Any) -> Any:
        require(dtype)
        if distribution.kind == "bernoulli":
            return self._place(_random.bernoulli(self._keys, shape, JNP[dtype], distribution.a), handle)
        return super().random(shape, distribution, dtype, handle)

    def random_uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: DType, handle: Any) -> Any:
        require(dtype)
        if dtype.is_int:
            out = _random.randint(self._keys, shape, JNP[dtype], int(low), int(high))
        else:
            out = _random.uniform(self._keys, shape, JNP[dtype], float(low), float(high))
        return self._place(out, handle)

    def random_normal(self, shape: tuple[int, ...], mean: float, std: float, dtype: DType, handle: Any) -> Any:
        require(dtype)
        return self._place(_random.normal(self._keys, shape, JNP[dtype], float(mean), float(std)), handle)

    # ------------------------------------------------------------------ casts
    def cast(self, p: Any, dtype: DType) -> Any:
        """``p`` as ``dtype``; floats to ints truncate toward zero (XLA's convert, as numpy)."""
        nd = JNP[dtype]
        if p.dtype == nd:
            return p
        require(dtype)
        return _cast(p, nd)

    def bitcast(self, p: Any, dtype: DType) -> Any:
        nd = JNP[dtype]
        if p.dtype == nd:
            return p
        require(dtype)
        return jax.lax.bitcast_convert_type(p, nd)

    def int_into_float(self, p: Any) -> Any:
        return _cast(p, self._fdt)

    def bool_into_float(self, p: Any) -> Any:
        return _cast(p, self._fdt)

    def bool_into_int(self, p: Any) -> Any:
        return _cast(p, self._idt)

    def float_into_int(self, p: Any) -> Any:
        return _cast(p, self._idt)


_pytree.register()  # Ember's objects are JAX pytrees once the backend is loaded
