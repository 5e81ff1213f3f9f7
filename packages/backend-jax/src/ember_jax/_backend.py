"""``JaxBackend``: the backend contract on ``jax.Array`` (any device jax offers), with whole-step compilation and
collectives.

The op groups, devices and data live in :class:`~._array_backend.JaxArrayBackend`, the layer below the tree walks
and compilation; this class adds what is built on them: ``compile`` (:func:`ember_jax.jit`), ``collectives``
(:mod:`._collectives`) and joining a launcher's run before the first device.
"""

from __future__ import annotations

from typing import Any

from ._array_backend import JaxArrayBackend
from ._collectives import JaxCollectives, auto_join
from ._jit import jit
from ._mesh import JaxMesh
from ._sharding import mesh, process_mesh

__all__ = ["JaxBackend"]


class JaxBackend(JaxArrayBackend):
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

    #: collectives through jax.distributed and compiled jax programs (:mod:`ember_jax._collectives`)
    supports_collectives = True
    #: ``compile`` is ``ember_jax.jit`` (the whole step one XLA program), which GSPMD partitions over a mesh of this
    #: process's devices (``device_mesh``) or of the processes of a ``jax.distributed`` run (``process_mesh``)
    compiles_steps = True
    #: ``compile`` takes ``donate_argnums`` and ``copy_donated`` (see :attr:`ember.backend.BackendCapabilities`)
    donates_args = True
    spmd_devices = True
    spmd_processes = True

    def _before_first_device(self) -> None:
        # under a launcher (WORLD_SIZE > 1) jax joins the run before it touches a device
        auto_join(self)

    def collectives(self) -> Any:
        """The jax engine of :mod:`ember.distributed`: ``jax.distributed`` across processes, compiled programs
        over a mesh of one device per process (:class:`ember_jax._collectives.JaxCollectives`)."""
        return JaxCollectives()

    def device_mesh(self, devices: Any) -> Any:
        """An :class:`ember.backend.DeviceMesh` over ``devices`` (this process's jax devices; autodiff ones stand
        for their inner devices): :func:`ember_jax.mesh` behind :class:`ember_jax._mesh.JaxMesh`.

        Raises:
            BackendError: an empty list, a device twice, or a device of another backend.
        """
        return JaxMesh(mesh(devices), self)

    def process_mesh(self, device: Any) -> Any:
        """An :class:`ember.backend.DeviceMesh` over the processes of a ``jax.distributed`` run, one device each
        (:func:`ember_jax.process_mesh` of ``device``).

        Raises:
            BackendError: ``device`` belongs to another process, or another process lacks a device at its local
                index.
        """
        return JaxMesh(process_mesh(device), self)

    def compile(self, fn: Any, **options: Any) -> Any:
        """``ember_jax.jit(fn, **options)``: the whole step compiled by XLA (see :func:`ember_jax.jit`).

        Options: ``donate_state`` (default ``True``), ``donate_argnums`` (default ``()``) and ``copy_donated``
        (default ``False``), as in :func:`ember_jax.jit`.

        Raises:
            TypeError: an unknown option.
        """
        unknown = sorted(set(options) - {"donate_state", "donate_argnums", "copy_donated"})
        if unknown:
            raise TypeError(
                "jax backend: compile() options are donate_state, donate_argnums and copy_donated, got "
                f"{', '.join(unknown)}."
            )
        return jit(fn, **options)
