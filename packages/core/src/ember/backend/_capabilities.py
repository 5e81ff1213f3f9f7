"""``BackendCapabilities``: what a backend can do, asked by callers instead of testing its name.

A training loop (``ember_train``'s learning strategies), a benchmark or a user asks ``backend.capabilities`` (an
``Autodiff`` backend answers for its inner backend) before it picks a path: compile the step or run it eagerly,
split the batch over several devices inside one program or start one process per device, average gradients with
collectives. A backend declares its answers with the class flags the property reads (``compiles_steps``,
``spmd_devices``, ``spmd_processes``, ``supports_collectives`` ...); the conformance suite checks that each flag
matches what the backend does.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._dtype import DType

__all__ = ["BackendCapabilities"]


@dataclass(frozen=True)
class BackendCapabilities:
    """What a backend can do (:attr:`ember.backend.Backend.capabilities`).

    Attributes:
        compiles_steps: :meth:`~ember.backend.Backend.compile` traces a whole step (forward, backward, optimizer
            update) into one compiled program (jax: ``ember_jax.jit``); ``False``: it returns the step unchanged
            and the step runs eagerly, op by op.
        spmd_devices: one compiled program can run over several devices of this process, the batch split along
            dim 0 and the gradients all-reduced inside the program (SPMD; jax's GSPMD):
            :meth:`~ember.backend.Backend.device_mesh` gives the :class:`~ember.backend.DeviceMesh` to place tensors
            on. Implies ``compiles_steps``.
        donates_args: :meth:`~ember.backend.Backend.compile` takes ``donate_argnums=(i, ...)`` and
            ``copy_donated=True``: the buffers of those arguments are given to the compiled program, which updates
            them in place, and an argument that is not the step's own previous result is copied first, so the
            caller's objects keep their values (jax: ``ember_jax.jit``). The Learner's training step donates the
            model this way. Implies ``compiles_steps``.
        spmd_processes: the same over the processes of a multi-process run, one device each
            (:meth:`~ember.backend.Backend.process_mesh`; jax under ``jax.distributed``).
        collectives: the backend has collective ops (``all_reduce``, ``broadcast``, ``all_gather`` ... over a
            process group, :mod:`ember.distributed`); mirrors ``supports_collectives``.
        native_autodiff: the array library has its own autodiff usable behind ``Autodiff``
            (``supports_native_autodiff``).
        dlpack: primitives can be exchanged without a copy through DLPack (``supports_dlpack``).
        dtypes: the element types the backend can hold (``supported_dtypes``).
    """

    compiles_steps: bool = False
    donates_args: bool = False
    spmd_devices: bool = False
    spmd_processes: bool = False
    collectives: bool = False
    native_autodiff: bool = False
    dlpack: bool = False
    dtypes: frozenset[DType] = frozenset()
