"""Fused optimizer updates on jax (issue 22): each update of all the parameters of a step is one compiled program.

The program is the composite default of :mod:`ember.backend._ops_optim` (the backend's own kernels, inlined)
under one ``jax.jit``, with the hyper-parameters static and the optimizer's state buffers donated: XLA fuses the
element-wise chain of every parameter and writes the new states into the old buffers (the contract's in-place
rule; the parameters and gradients are not donated, so a module the user keeps stays valid). Inside a compiled
step (``ember_jax.jit``) the program is inlined into the step's own and donation is the outer program's business.
The learning rate and the bias-correction terms are traced arguments, so a new value never recompiles.
"""

from __future__ import annotations

import functools
from typing import Any

import jax

from ember.backend.contract import OptimOps, Prims

__all__ = ["JaxOptimOps"]

#: per primitive: (the hyper-parameters passed static, the state arguments donated)
_SIGNATURES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "fused_adam": (("beta_1", "beta_2", "penalty"), ("moment_1", "moment_2", "max_moment_2")),
    "fused_sgd": (("penalty", "momentum", "dampening", "nesterov", "first"), ("velocity",)),
    "fused_rmsprop": (("alpha", "epsilon", "momentum", "penalty"), ("square_avg", "grad_avg", "momentum_buf")),
    "fused_lion": (("beta_1", "beta_2"), ("momentum",)),
}


def _states_first(update: Any) -> Any:
    """``update`` returning ``(new states, new params)`` instead of ``(new params, *new states)``.

    jax hands each donated buffer to the first output of its shape and dtype, in output order: with the new
    parameters first, a parameter's new value took its first moment's buffer, that moment's new value the second
    moment's, and the last state a new allocation (and XLA inserted copies). States first, each buffer takes its
    own new value. The signature stays ``update``'s (``functools.wraps``), so ``donate_argnames`` still finds the
    state arguments."""

    @functools.wraps(update)
    def run(*args: Any, **kwargs: Any) -> Any:
        new_p, *states = update(*args, **kwargs)
        return tuple(states), new_p

    return run


class JaxOptimOps(OptimOps):
    """The composite updates, each compiled as one program per backend (cached on first use)."""

    def _program(self, name: str) -> Any:
        cache: dict[str, Any] = self.__dict__.setdefault("_optim_programs", {})
        fn = cache.get(name)
        if fn is None:
            static, donate = _SIGNATURES[name]
            update = _states_first(functools.partial(getattr(OptimOps, name), self))
            update.__name__ = update.__qualname__ = name  # the program's name in profiles and XLA dumps
            fn = cache[name] = jax.jit(update, static_argnames=static, donate_argnames=donate)
        return fn

    def _run(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """The update's results in the contract's order: ``(new params, *new states)``."""
        states, new_p = self._program(name)(*args, **kwargs)
        return (new_p, *states)

    def fused_adam(self, params: Prims, grads: Prims, moment_1: Prims, moment_2: Prims, max_moment_2: Prims | None,
                   lr: Any, beta_1: float, beta_2: float, factor: Any, eps_term: Any, penalty: float,
                   decay: Any) -> tuple[Prims, Prims, Prims, Prims | None]:
        return self._run(  # type: ignore[no-any-return]
            "fused_adam", params, grads, moment_1, moment_2, max_moment_2, lr, beta_1=beta_1, beta_2=beta_2,
            factor=factor, eps_term=eps_term, penalty=penalty, decay=decay)

    def fused_sgd(self, params: Prims, grads: Prims, velocity: Prims | None, lr: Any, penalty: float,
                  momentum: float, dampening: float, nesterov: bool, first: bool) -> tuple[Prims, Prims | None]:
        return self._run(  # type: ignore[no-any-return]
            "fused_sgd", params, grads, velocity, lr, penalty=penalty, momentum=momentum, dampening=dampening,
            nesterov=nesterov, first=first)

    def fused_rmsprop(self, params: Prims, grads: Prims, square_avg: Prims, grad_avg: Prims | None,
                      momentum_buf: Prims | None, lr: Any, alpha: float, epsilon: float, momentum: float,
                      penalty: float) -> tuple[Prims, Prims, Prims | None, Prims | None]:
        return self._run(  # type: ignore[no-any-return]
            "fused_rmsprop", params, grads, square_avg, grad_avg, momentum_buf, lr, alpha=alpha, epsilon=epsilon,
            momentum=momentum, penalty=penalty)

    def fused_lion(self, params: Prims, grads: Prims, momentum: Prims, lr: Any, beta_1: float, beta_2: float,
                   decay: Any) -> tuple[Prims, Prims]:
        return self._run(  # type: ignore[no-any-return]
            "fused_lion", params, grads, momentum, lr, beta_1=beta_1, beta_2=beta_2, decay=decay)
