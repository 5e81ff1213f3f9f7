"""``TorchBackend``: the backend contract on ``torch.Tensor`` (any device torch offers).

Primitives are plain ``torch.Tensor`` objects that never require grad: the backend does not use
torch.autograd (``Autodiff(torch)`` records its own graph), so every op is a pure function of its
inputs. Views (reshape, permute, expand, slice, unfold) may share memory with their input, which
is safe because no primitive is ever written after it is returned.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import torch

from ember import BackendError, Distribution, DType, DTypeError
from ember.backend import Backend, Device

from . import _capture_rng, _capture_state
from ._activation import TorchActivationOps
from ._activation_grad import TorchActivationGradOps
from ._attention import TorchAttentionOps
from ._compile import compile as capture
from ._float import TorchFloatOps
from ._intbool import TorchIntBoolOps
from ._module import TorchModuleOps
from ._norm import TorchNormOps
from ._numeric import TorchNumericOps
from ._optim import TorchOptimOps
from ._quant import TorchQuantOps
from ._rnn import TorchRnnOps
from ._shape import TorchShapeOps

__all__ = ["TorchBackend"]

#: Ember element type -> torch dtype
TORCH_DTYPES: dict[DType, torch.dtype] = {
    DType.FLOAT64: torch.float64,
    DType.FLOAT32: torch.float32,
    DType.FLOAT16: torch.float16,
    DType.BFLOAT16: torch.bfloat16,
    DType.INT64: torch.int64,
    DType.INT32: torch.int32,
    DType.INT16: torch.int16,
    DType.INT8: torch.int8,
    DType.UINT8: torch.uint8,
    DType.BOOL: torch.bool,
}
_FROM_TORCH: dict[torch.dtype, DType] = {v: k for k, v in TORCH_DTYPES.items()}
# numpy dtype the host values are converted to before entering torch (bfloat16 is handled apart)
_HOST_NP = {d: d.to_numpy() for d in TORCH_DTYPES if d is not DType.BFLOAT16}


class TorchBackend(TorchNumericOps, TorchShapeOps, TorchFloatOps, TorchIntBoolOps, TorchActivationOps, TorchModuleOps,
                   TorchOptimOps, TorchNormOps, TorchRnnOps, TorchAttentionOps, TorchActivationGradOps, TorchQuantOps,
                   Backend):
    """The PyTorch backend: devices ``cpu`` (default, as Burn's ``LibTorchDevice::Cpu``),
    ``cuda:N`` and ``mps`` when the installed torch offers them.

    Float tensors are float32 (default), float64, float16 or bfloat16; Int tensors int64 (default)
    or int32 (``ember.backend("torch", float_dtype="bfloat16", int_dtype="int32")``). int16, int8,
    uint8 and bool are available as data types through ``Tensor.cast``. uint16, uint32 and uint64 are not:
    PyTorch keeps them as storage-only types without arithmetic, comparison or indexing kernels on the CPU
    (``"add_stub" not implemented for 'UInt32'`` in torch 2.13), so ``supported_dtypes`` leaves them out and
    asking for one raises ``DTypeError``; use the numpy or jax backend for such data, or cast to int64.

    Random numbers come from one ``torch.Generator`` per device, owned by the backend instance
    (two instances never share a stream); :meth:`seed` reseeds every one of them.

    DLPack: ``supports_dlpack`` is true, so ``Tensor.to_device`` between this backend and another
    DLPack backend (numpy, jax) on the CPU shares memory instead of copying.

    Device limits are torch's: MPS has no float64 (use float32), and on CUDA an out-of-range index
    value in ``gather``/``select`` is a device-side assertion that torch cannot turn into an
    ``IndexError`` (on the CPU it is one, as the contract asks).

    Threads: ``threads=N`` calls ``torch.set_num_threads(N)`` when the backend is created: the size of torch's
    intra-op thread pool, which runs each CPU op (its BLAS and oneDNN kernels included) on up to N threads. **The
    setting is process-wide** (it applies to torch code outside Ember too); torch's inter-op pool and CUDA kernels
    are left alone. ``None`` (default) keeps torch's setting (one thread per physical core). Example:
    ``ember.backend("torch", threads=1)``.

    Raises:
        DTypeError: an unsupported ``float_dtype`` / ``int_dtype`` option.
        ConfigError: ``threads`` is not a positive int.
    """

    name = "torch"
    supported_dtypes = frozenset(TORCH_DTYPES)
    supports_dlpack = True
    supports_native_autodiff = False
    #: collectives on torch.distributed: gloo on CPU, nccl on CUDA (``ember_torch._collectives``)
    supports_collectives = True
    #: ``compile`` captures a whole step as one aten graph (``ember_torch.compile``: replayed, or inductor)
    compiles_steps = True
    #: conformance tests this backend is known to fail, ``{pattern: reason}`` (none today).
    conformance_known_failures: ClassVar[dict[str, str]] = {}

    def __init__(self, float_dtype: DType | str = DType.FLOAT32, int_dtype: DType | str = DType.INT64,
                 threads: int | None = None) -> None:
        super().__init__(float_dtype, int_dtype)
        n = self._threads_option(threads)
        if n is not None:
            torch.set_num_threads(n)
        self._ftd: torch.dtype = TORCH_DTYPES[self.float_dtype]
        self._itd: torch.dtype = TORCH_DTYPES[self.int_dtype]
        # accumulator dtype of sum/prod/cumsum/cumprod: torch widens small ints (and bool) to
        # int64; Ember keeps the input's int type (numpy's ``dtype=a.dtype``) and sums bools as Int
        self._acc: dict[torch.dtype, torch.dtype] = {
            torch.int32: torch.int32, torch.int16: torch.int16, torch.int8: torch.int8,
            torch.uint8: torch.uint8, torch.bool: self._itd,
        }
        self._seed: int | None = None
        self._gens: dict[tuple[str, int], torch.Generator] = {}

    def collectives(self) -> Any:
        """A ``torch.distributed`` engine for :mod:`ember.distributed`: gloo for a group on the CPU, nccl
        for a group on a CUDA device (:class:`ember_torch._collectives.TorchDistributedCollectives`)."""
        from ._collectives import TorchDistributedCollectives

        return TorchDistributedCollectives()

    # ------------------------------------------------------------------ compilation
    def compile(self, fn: Any, **options: Any) -> Any:
        """``fn`` captured as one aten graph and replayed: :func:`ember_torch.compile` (``options``: its ``mode``,
        ``backend``, ``options``; without a ``mode``, inductor on CUDA and the captured graph alone elsewhere)."""
        return capture(fn, **options)

    def is_concrete(self, p: Any) -> bool:
        """``False`` while :func:`ember_torch.compile` captures a step (the tensors are fake: no values)."""
        return _capture_state.ACTIVE[0] == 0

    # ------------------------------------------------------------------ devices and seeding
    def checks_index_values(self, handle: Any) -> bool:
        """``False`` on CUDA: torch's CUDA kernels stop with a device-side assert on an index out of
        range (not catchable; the process's CUDA context is lost), and checking every index tensor
        first would cost a host synchronisation per op. The CPU kernels raise, and so does Ember."""
        return getattr(handle, "type", "cpu") != "cuda"

    def _device_names(self) -> list[str]:
        names = ["cpu"]
        if torch.cuda.is_available():
            names += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            names.append("mps")
        return names

    def _make_device(self, name: str) -> Device:
        available = self._device_names()
        try:
            handle = torch.device(name)
        except (RuntimeError, TypeError, ValueError):
            raise BackendError(
                f"torch backend: {name!r} is not a torch device name; available here: "
                f"{', '.join(available)}."
            ) from None
        if handle.type == "cuda":  # "cuda" means cuda:0, as torch allocates there by default
            handle = torch.device("cuda", 0 if handle.index is None else handle.index)
            canonical = f"cuda:{handle.index}"
        else:  # "cpu", "mps" (also spelled "cpu:0", "mps:0"): one device each
            canonical = handle.type
        if canonical not in available:
            raise BackendError(
                f"torch backend: device {name!r} is not available on this machine (torch "
                f"{torch.__version__}); available: {', '.join(available)}."
            )
        return Device(self, handle, canonical)

    def _gen(self, handle: torch.device) -> torch.Generator:
        key = (handle.type, handle.index or 0)  # "mps" and a tensor's "mps:0" are one device
        g = self._gens.get(key)
        if g is None:
            g = torch.Generator(device=handle)
            if self._seed is None:
                g.seed()
            else:
                g.manual_seed(self._seed)
            self._gens[key] = g
        return g

    def _draw_gen(self, handle: torch.device) -> torch.Generator | None:
        """The generator a random op passes to torch: the device's own, or ``None`` (torch's default generator)
        while ``ember_torch.compile`` captures a step, which lends this one's state to it at each replay
        (``_capture_rng``)."""
        g = self._gen(handle)
        if _capture_state.ACTIVE[0]:
            _capture_rng.note_draw(g, handle)
            return None
        return g

    def seed(self, seed: int) -> None:
        """Reseed the generator of every device of this backend instance with ``seed``: the
        random ops that follow are reproducible (same values for the same seed and call order)."""
        self._seed = int(seed)
        for g in self._gens.values():
            g.manual_seed(self._seed)

    def rng_state(self) -> Any:
        """``{"kind": "torch", "seed": <the last seed or None>, "generators": {"<type>:<index>": <hex of
        Generator.get_state()>}}``: every device generator made so far (one made later starts from ``seed``)."""
        gens = {f"{t}:{i}": bytes(g.get_state().numpy().tobytes()).hex() for (t, i), g in self._gens.items()}
        return {"kind": "torch", "seed": self._seed, "generators": gens}

    def set_rng_state(self, state: Any) -> None:
        """Restore :meth:`rng_state`: the saved generators get their states, the others are reseeded from the saved
        seed (as if made again when next used). The generator objects stay the same: a step captured by
        :func:`ember_torch.compile` holds them and lends their state to torch's default generator at each call.

        Raises:
            BackendError: not a torch backend's state.
        """
        gens = state.get("generators") if isinstance(state, dict) and state.get("kind") == "torch" else None
        seed = state.get("seed") if isinstance(state, dict) else None
        if not isinstance(gens, dict) or not (seed is None or isinstance(seed, int)):
            raise BackendError(
                "torch backend: set_rng_state expects the dict rng_state() returned ({'kind': 'torch', 'seed': ..., "
                f"'generators': {{...}}}}), found {str(state)[:120]}."
            )
        made: dict[tuple[str, int], torch.Generator] = {}
        for key, hexstate in gens.items():
            kind, _, index = str(key).partition(":")
            try:
                g = self._gens.get((kind, int(index))) or torch.Generator(
                    device=torch.device(kind, int(index)) if kind != "cpu" else "cpu")
                g.set_state(torch.frombuffer(bytearray(bytes.fromhex(hexstate)), dtype=torch.uint8))
            except (RuntimeError, ValueError, TypeError) as exc:
                raise BackendError(f"torch backend: set_rng_state: cannot restore the {key} generator: {exc}.") from exc
            made[(kind, int(index))] = g
        self._seed = seed
        for k, g in self._gens.items():  # dropped: as if made again from the saved seed (same object: a captured
            if k not in made:             # step holds the generator itself, see ember_torch._capture_rng)
                if seed is None:
                    g.seed()
                else:
                    g.manual_seed(seed)
                made[k] = g
        self._gens = made

    # ------------------------------------------------------------------ data and info
    def shape(self, p: Any) -> tuple[int, ...]:
        return tuple(p.shape)

    def dtype(self, p: Any) -> DType:
        try:
            return _FROM_TORCH[p.dtype]
        except KeyError:
            raise DTypeError(
                f"torch backend: tensors of {p.dtype} have no Ember element type; supported: "
                f"{', '.join(sorted(d.value for d in TORCH_DTYPES))}."
            ) from None

    def device_handle(self, p: Any) -> Any:
        return p.device

    def from_numpy(self, array: np.ndarray, dtype: DType, handle: Any) -> Any:
        """A new torch tensor with ``array``'s values as ``dtype`` on ``handle`` (always a copy:
        the caller's array may be written later)."""
        self.check_dtype(dtype)
        if dtype is DType.BFLOAT16:
            # one rounding, to nearest even (as ember.f32_to_bf16), from float32 or float64 values
            wide = np.float64 if array.dtype == np.float64 else np.float32
            t = torch.from_numpy(np.array(array, dtype=wide, order="C", copy=True)).to(torch.bfloat16)
        else:
            t = torch.from_numpy(np.array(array, dtype=_HOST_NP[dtype], order="C", copy=True))
        return t if handle.type == "cpu" else t.to(handle)

    def to_numpy(self, p: Any) -> np.ndarray:
        """The values as numpy; zero-copy for a CPU tensor (bfloat16 is widened to float32)."""
        if _capture_state.ACTIVE[0]:
            raise BackendError(
                f"torch backend: a host read (to_numpy) of a captured tensor. {_capture_state.HOST_READ_GUIDE}")
        if p.dtype is torch.bfloat16:
            p = p.float()
        return p.detach().cpu().numpy()  # type: ignore[no-any-return]

    def to_device(self, p: Any, handle: Any) -> Any:
        return p.to(handle)

    def from_dlpack(self, obj: Any) -> Any:
        """A torch tensor sharing memory with ``obj`` (numpy array, jax array, torch tensor ...)."""
        return torch.from_dlpack(obj)

    # ------------------------------------------------------------------ creation
    def full(self, shape: tuple[int, ...], value: Any, dtype: DType, handle: Any) -> Any:
        return torch.full(shape, value, dtype=TORCH_DTYPES[dtype], device=handle)

    def zeros(self, shape: tuple[int, ...], dtype: DType, handle: Any) -> Any:
        return torch.zeros(shape, dtype=TORCH_DTYPES[dtype], device=handle)

    def ones(self, shape: tuple[int, ...], dtype: DType, handle: Any) -> Any:
        return torch.ones(shape, dtype=TORCH_DTYPES[dtype], device=handle)

    def arange(self, start: Any, end: Any, step: Any, dtype: DType, handle: Any) -> Any:
        td = TORCH_DTYPES[dtype]
        if (end - start) * step <= 0:  # numpy gives an empty range where torch raises
            return torch.zeros((0,), dtype=td, device=handle)
        return torch.arange(start, end, step, dtype=td, device=handle)

    def random(self, shape: tuple[int, ...], distribution: Distribution, dtype: DType, handle: Any) -> Any:
        if distribution.kind == "bernoulli":
            # ``rand < p`` rather than torch.bernoulli: the latter takes a serial path on this
            # class of CPU (see PERF-NOTES) and the comparison is what the reference backend does
            u = torch.rand(shape, generator=self._draw_gen(handle), dtype=torch.float32, device=handle)
            return torch.lt(u, distribution.a).to(TORCH_DTYPES[dtype])
        return super().random(shape, distribution, dtype, handle)

    def random_uniform(self, shape: tuple[int, ...], low: float, high: float, dtype: DType, handle: Any) -> Any:
        td = TORCH_DTYPES[dtype]
        g = self._draw_gen(handle)
        if dtype.is_int:
            return torch.randint(int(low), int(high), shape, generator=g, dtype=td, device=handle)
        u = torch.rand(shape, generator=g, dtype=td, device=handle)
        if low != 0.0 or high != 1.0:
            u.mul_(high - low).add_(low)  # u is fresh: in-place is safe
        return u

    def random_normal(self, shape: tuple[int, ...], mean: float, std: float, dtype: DType, handle: Any) -> Any:
        z = torch.randn(shape, generator=self._draw_gen(handle), dtype=TORCH_DTYPES[dtype], device=handle)
        if std != 1.0 or mean != 0.0:
            z.mul_(std).add_(mean)
        return z

    # ------------------------------------------------------------------ casts
    def cast(self, p: Any, dtype: DType) -> Any:
        """``p`` as ``dtype``; floats to ints truncate toward zero (torch's and numpy's rule)."""
        td = TORCH_DTYPES[dtype]
        return p if p.dtype is td else p.to(td)

    def bitcast(self, p: Any, dtype: DType) -> Any:
        td = TORCH_DTYPES[dtype]
        return p if p.dtype is td else p.view(td)

    def int_into_float(self, p: Any) -> Any:
        return p.to(self._ftd)

    def bool_into_float(self, p: Any) -> Any:
        return p.to(self._ftd)

    def bool_into_int(self, p: Any) -> Any:
        return p.to(self._itd)

    def float_into_int(self, p: Any) -> Any:
        return p.to(self._itd)
