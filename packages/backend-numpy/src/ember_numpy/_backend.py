"""``NumpyBackend``: the backend contract on numpy arrays (CPU).

Primitives are ``numpy.ndarray`` (rank-0 results may be numpy scalars, which behave the same).
Every op is a vectorized numpy call; ops never write into their inputs.
"""

from __future__ import annotations

import warnings
from importlib.util import find_spec as _find_spec
from operator import attrgetter
from typing import Any

import numpy as np

from ember import BackendError, CollectiveError, ConfigError, DType
from ember.backend import Backend, Device

from ._activation import NumpyActivationOps
from ._attention import NumpyAttentionOps
from ._float import NumpyFloatOps
from ._intbool import NumpyIntBoolOps
from ._module import NumpyModuleOps
from ._numeric import NumpyNumericOps
from ._optim import NumpyOptimOps
from ._quant import NumpyQuantOps
from ._rnn import NumpyRnnOps
from ._shape import NumpyShapeOps

_NP: dict[DType, np.dtype[Any]] = {d: d.to_numpy() for d in DType if d is not DType.BFLOAT16}
_FROM_NP: dict[np.dtype[Any], DType] = {v: k for k, v in _NP.items()}


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return _find_spec(module) is not None
    except (ImportError, ValueError):  # a parent that is not a package, or a module set to None in sys.modules
        return False


class NumpyBackend(NumpyNumericOps, NumpyShapeOps, NumpyFloatOps, NumpyIntBoolOps, NumpyActivationOps, NumpyModuleOps,
                   NumpyOptimOps, NumpyRnnOps, NumpyAttentionOps, NumpyQuantOps, Backend):
    """The numpy backend: one device, ``cpu``; float32 (default), float64, float16; int64
    (default), int32.

    Random numbers come from a ``numpy.random.Generator`` (PCG64) owned by the backend instance;
    :meth:`seed` resets it.

    Args:
        float_dtype: as for every backend (:class:`ember.backend.Backend`).
        int_dtype: as for every backend (:class:`ember.backend.Backend`).
        threads: if given, the number of threads of the BLAS library numpy uses for matmul and the other
            linear-algebra kernels (OpenBLAS, MKL...), set with ``threadpoolctl`` when the backend is created (the
            rest of numpy, element-wise ops and reductions, runs on one thread anyway). **The setting is
            process-wide** (BLAS libraries have one thread pool per process), so it also applies to numpy code
            outside Ember. ``None`` (default) leaves it alone. On small or skinny matmuls (MLPs, small batches)
            ``threads=1`` is usually fastest: a second BLAS thread gains nothing there and spins on the core the
            element-wise work needs (measured 1.85x slower on a 2-core machine). Example:
            ``ember.backend("numpy", threads=1)``. Every backend takes ``threads``, with its library's meaning.
        blas_threads: the former name of ``threads``, deprecated (a ``DeprecationWarning``); it goes in the next
            release.

    Raises:
        ConfigError: ``threads`` is not a positive int, or both ``threads`` and ``blas_threads`` are given.
    """

    name = "numpy"
    supported_dtypes = frozenset(
        {DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.INT64, DType.INT32, DType.INT16,
         DType.INT8, DType.UINT8, DType.UINT16, DType.UINT32, DType.UINT64, DType.BOOL}
    )
    supports_dlpack = True
    #: collectives through gloo (``torch.distributed``) when ember-backend-torch is installed; see :meth:`collectives`
    supports_collectives = _installed("ember_torch") and _installed("torch")

    def __init__(self, float_dtype: DType | str = DType.FLOAT32, int_dtype: DType | str = DType.INT64,
                 threads: int | None = None, blas_threads: int | None = None) -> None:
        super().__init__(float_dtype, int_dtype)
        self._rng = np.random.default_rng()
        self._fdt = _NP[self.float_dtype]
        self._idt = _NP[self.int_dtype]
        if blas_threads is not None:
            if threads is not None:
                raise ConfigError(
                    f"numpy backend: got threads={threads!r} and blas_threads={blas_threads!r}; blas_threads is the "
                    "former name of threads: give threads only."
                )
            warnings.warn(
                "ember.backend('numpy', blas_threads=N) is deprecated and goes in the next release: write "
                "ember.backend('numpy', threads=N), the option every backend takes.",
                DeprecationWarning, stacklevel=5,  # the caller of ember.backend(...)
            )
            threads = blas_threads
        n = self._threads_option(threads)
        if n is not None:
            from threadpoolctl import threadpool_limits

            threadpool_limits(limits=n, user_api="blas")

    #: the shape of an ndarray (or numpy scalar) is already a tuple of ints: no Python frame
    shape = staticmethod(attrgetter("shape"))  # type: ignore[assignment]

    # ---- devices and seeding
    def _make_device(self, name: str) -> Device:
        if name != "cpu":
            raise BackendError(f"numpy backend has one device, 'cpu'; got {name!r}.")
        return Device(self, "cpu", "cpu")

    def seed(self, seed: int) -> None:
        self._rng = np.random.default_rng(seed)

    def rng_state(self) -> Any:
        """``{"kind": "numpy", "bit_generator": <numpy's bit_generator.state dict>}`` (PCG64: 128-bit ints)."""
        return {"kind": "numpy", "bit_generator": self._rng.bit_generator.state}

    def set_rng_state(self, state: Any) -> None:
        """Restore :meth:`rng_state`.

        Raises:
            BackendError: not a numpy backend's state.
        """
        st: Any = state.get("bit_generator") if isinstance(state, dict) and state.get("kind") == "numpy" else None
        name = st.get("bit_generator") if isinstance(st, dict) else None
        bitgen = getattr(np.random, name, None) if isinstance(name, str) else None
        if bitgen is None or not isinstance(bitgen, type) or not issubclass(bitgen, np.random.BitGenerator):
            raise BackendError(
                "numpy backend: set_rng_state expects the dict rng_state() returned ({'kind': 'numpy', "
                f"'bit_generator': {{'bit_generator': 'PCG64', ...}}}}), found {str(state)[:120]}."
            )
        gen = bitgen()
        try:
            gen.state = dict(st)
        except (TypeError, ValueError, KeyError) as exc:
            raise BackendError(f"numpy backend: set_rng_state: the {name} state is invalid: {exc}.") from exc
        self._rng = np.random.Generator(gen)

    def collectives(self) -> Any:
        """The collective engine of :mod:`ember.distributed` on numpy: gloo through ``torch.distributed`` on
        zero-copy ``torch.from_numpy`` views (:mod:`ember_numpy._collectives` says why gloo).

        Raises:
            CollectiveError: ember-backend-torch (and so torch) is not installed.
        """
        try:
            from ._collectives import NumpyGlooCollectives
        except ImportError as exc:
            from ember import install_command

            raise CollectiveError(
                "the numpy backend runs its collectives with gloo through torch.distributed, which needs "
                f"ember-backend-torch and torch ({exc}); install them with "
                f"`{install_command('ember-backend-torch')}`, or use the torch or jax backend."
            ) from exc
        return NumpyGlooCollectives()

    # ---- data and info
    def dtype(self, p: Any) -> DType:
        return _FROM_NP[p.dtype]

    def device_handle(self, p: Any) -> Any:
        return "cpu"

    def from_numpy(self, array: np.ndarray, dtype: DType, handle: Any) -> Any:
        """Zero-copy for read-only arrays of the right dtype (records, other tensors' data):
        nobody can write them, so sharing is safe. Writable arrays (the user's) are copied, so
        later writes to them never change the tensor."""
        self.check_dtype(dtype)
        nd = _NP[dtype]
        if not array.flags.writeable and array.dtype == nd and array.flags.c_contiguous:
            return array
        return np.array(array, dtype=nd, copy=True, order="C")

    def to_numpy(self, p: Any) -> np.ndarray:
        return np.asarray(p)

    def from_dlpack(self, obj: Any) -> Any:
        return np.from_dlpack(obj)

    # ---- creation
    def full(self, shape: tuple[int, ...], value: Any, dtype: DType, handle: Any) -> Any:
        return np.full(shape, value, dtype=_NP[dtype])

    def zeros(self, shape: tuple[int, ...], dtype: DType, handle: Any) -> Any:
        return np.zeros(shape, dtype=_NP[dtype])

    def ones(self, shape: tuple[int, ...], dtype: DType, handle: Any) -> Any:
        out = np.empty(shape, dtype=_NP[dtype])  # np.ones is a Python function: 1 µs more
        out.fill(1)
        return out

    def arange(self, start: Any, end: Any, step: Any, dtype: DType, handle: Any) -> Any:
        return np.arange(start, end, step, dtype=_NP[dtype])

    def random_uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: DType, handle: Any) -> Any:
        nd = _NP[dtype]
        if dtype.is_int:
            return self._rng.integers(int(low), int(high), size=shape, dtype=nd)
        if nd in (np.float32, np.float64):
            u = self._rng.random(shape, dtype=nd)
        else:
            u = self._rng.random(shape, dtype=np.float32)
        if low != 0.0 or high != 1.0:
            u = u * (high - low) + low
        return u.astype(nd, copy=False)

    def random_normal(self, shape: tuple[int, ...], mean: float, std: float, dtype: DType, handle: Any) -> Any:
        nd = _NP[dtype]
        z = self._rng.standard_normal(shape, dtype=nd if nd in (np.float32, np.float64) else np.float32)
        if std != 1.0 or mean != 0.0:
            z = z * std + mean
        return z.astype(nd, copy=False)

    # ---- casts
    def cast(self, p: Any, dtype: DType) -> Any:
        nd = _NP[dtype]
        if p.dtype == nd:
            return p
        if dtype.is_int and p.dtype.kind == "f":
            return np.trunc(p).astype(nd)
        return np.asarray(p).astype(nd)

    def bitcast(self, p: Any, dtype: DType) -> Any:
        return np.asarray(p).view(_NP[dtype])

