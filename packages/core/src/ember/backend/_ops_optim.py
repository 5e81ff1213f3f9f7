"""Fused optimizer updates (issue 22): one call updates every parameter of a step.

Each primitive takes *lists* of primitives (the parameters of one device and dtype, their gradients and the
optimizer's state buffers) and returns the new ones. The defaults here are the composite rules written with the
backend's element-wise primitives, one tensor at a time (so every backend works); a backend overrides them with
multi-tensor or fused kernels (numpy: in-place ``out=`` ufunc chains over cache-sized chunks; torch:
``torch._foreach_*``; jax: one compiled program).

**Buffers (the one exception to "ops never mutate their inputs").** The *state* lists (moments, velocities,
averages) belong to the optimizer: a backend may overwrite them in place and return them as the new states. The
parameters and the gradients are never written: the new parameters are new primitives, so a module the user
keeps after ``optim.step`` still holds its old values. The caller (:mod:`ember.optim`) passes state buffers that
nothing else references, each a distinct primitive.

**Scalars.** ``lr`` and the bias-correction terms are Python floats in eager training, or primitives of shape
``[1]`` in a compiled step (then a rank-0 parameter's result broadcasts to ``[1]``; the caller reshapes it).
The hyper-parameters (betas, penalties, flags) are Python numbers. ``decay`` is ``None`` (no decoupled decay)
or the factor ``1 - lr * weight_decay`` the parameter is multiplied by.

The formulas are those of the per-tensor rules of :mod:`ember.optim` (PyTorch's ``torch.optim`` and Burn's
optimizers); the default of each primitive computes them in the same op order as those rules did, so a backend
without an override gives the same bits as before.
"""

from __future__ import annotations

from typing import Any

__all__ = ["OptimOps"]

Prims = list[Any]


class OptimOps:
    """Multi-tensor optimizer updates; see the module docstring for the buffer and scalar rules.

    The defaults call primitives of the other op groups through ``B = self`` typed ``Any`` (the mixin only ever
    runs as part of a :class:`~ember.backend.Backend`).
    """

    def fused_adam(self, params: Prims, grads: Prims, moment_1: Prims, moment_2: Prims, max_moment_2: Prims | None,
                   lr: Any, beta_1: float, beta_2: float, factor: Any, eps_term: Any, penalty: float,
                   decay: Any) -> tuple[Prims, Prims, Prims, Prims | None]:
        """Adam / AdamW (Kingma & Ba 2015; Loshchilov & Hutter 2019; ``torch.optim.Adam``/``AdamW``), per tensor::

            g = grad + penalty * param                      (penalty 0: no coupled L2 decay)
            m = beta_1 m + (1 - beta_1) g ;  v = beta_2 v + (1 - beta_2) g^2
            AMSGrad (max_moment_2 given): v_max = max(v_max, v), used in place of v below
            param' = param * decay - lr * (m * factor) / (sqrt(v) + eps_term)       (decay None: 1)

        with ``factor = sqrt(1 - beta_2^t) / (1 - beta_1^t)`` and ``eps_term = epsilon * sqrt(1 - beta_2^t)``
        (Burn's form of the bias correction, computed by the caller).

        Returns:
            ``(params', moment_1', moment_2', max_moment_2')``, lists of the inputs' lengths (``None`` without
            AMSGrad). The moment lists may be the input buffers, updated in place.
        """
        B: Any = self
        new_p, new_m, new_v = [], [], []
        new_vm: Prims | None = None if max_moment_2 is None else []
        for i, (p, g, m, v) in enumerate(zip(params, grads, moment_1, moment_2, strict=True)):
            if penalty:
                g = B.add(B.mul(p, penalty), g)
            m = B.add(B.mul(m, beta_1), B.mul(g, 1.0 - beta_1))
            v = B.add(B.mul(v, beta_2), B.mul(B.square(g), 1.0 - beta_2))
            src = v
            if new_vm is not None:
                src = B.maximum(max_moment_2[i], v)  # type: ignore[index]
                new_vm.append(src)
            direction = B.div(B.mul(m, factor), B.add(B.sqrt(src), eps_term))
            base = p if decay is None else B.mul(p, decay)
            new_p.append(B.sub(base, B.mul(direction, lr)))
            new_m.append(m)
            new_v.append(v)
        return new_p, new_m, new_v, new_vm

    def fused_sgd(self, params: Prims, grads: Prims, velocity: Prims | None, lr: Any, penalty: float,
                  momentum: float, dampening: float, nesterov: bool, first: bool) -> tuple[Prims, Prims | None]:
        """SGD with optional momentum (``torch.optim.SGD``, Burn's ``Sgd`` + ``Momentum``), per tensor::

            g = grad + penalty * param
            velocity given: v = g on the first step (``first``), else v = momentum v + (1 - dampening) g;
                            d = g + momentum v with ``nesterov``, else v
            no velocity:    d = g
            param' = param - lr d

        ``velocity`` is ``None`` for plain SGD. On the first step its buffers are the caller's scratch
        (their values are not read; the new velocity is ``g``).

        Returns:
            ``(params', velocity')`` (``None`` for plain SGD); the velocity may be the input buffers.
        """
        B: Any = self
        new_p: Prims = []
        new_vel: Prims | None = None if velocity is None else []
        for i, (p, g) in enumerate(zip(params, grads, strict=True)):
            if penalty:
                g = B.add(B.mul(p, penalty), g)
            d = g
            if new_vel is not None:
                if first:
                    v = g
                else:
                    v = B.add(B.mul(g, 1.0 - dampening), B.mul(velocity[i], momentum))  # type: ignore[index]
                new_vel.append(v)
                d = B.add(B.mul(v, momentum), g) if nesterov else v
            new_p.append(B.sub(p, B.mul(d, lr)))
        return new_p, new_vel

    def fused_rmsprop(self, params: Prims, grads: Prims, square_avg: Prims, grad_avg: Prims | None,
                      momentum_buf: Prims | None, lr: Any, alpha: float, epsilon: float, momentum: float,
                      penalty: float) -> tuple[Prims, Prims, Prims | None, Prims | None]:
        """RMSProp (``torch.optim.RMSprop``, Burn's ``RmsProp``), per tensor::

            g = grad + penalty * param
            s = alpha s + (1 - alpha) g^2
            centered (grad_avg given): a = alpha a + (1 - alpha) g;  d = g / (sqrt(s - a^2) + epsilon)
            else d = g / (sqrt(s) + epsilon)
            momentum buffer given: b = momentum b + d;  d = b
            param' = param - lr d

        Returns:
            ``(params', square_avg', grad_avg', momentum_buf')``; the state lists may be the input buffers.
        """
        B: Any = self
        new_p, new_s = [], []
        new_a: Prims | None = None if grad_avg is None else []
        new_b: Prims | None = None if momentum_buf is None else []
        for i, (p, g, s) in enumerate(zip(params, grads, square_avg, strict=True)):
            if penalty:
                g = B.add(B.mul(p, penalty), g)
            s = B.add(B.mul(s, alpha), B.mul(B.square(g), 1.0 - alpha))
            new_s.append(s)
            avg = s
            if new_a is not None:
                a = B.add(B.mul(grad_avg[i], alpha), B.mul(g, 1.0 - alpha))  # type: ignore[index]
                new_a.append(a)
                avg = B.sub(s, B.square(a))
            d = B.div(g, B.add(B.sqrt(avg), epsilon))
            if new_b is not None:
                d = B.add(B.mul(momentum_buf[i], momentum), d)  # type: ignore[index]
                new_b.append(d)
            new_p.append(B.sub(p, B.mul(d, lr)))
        return new_p, new_s, new_a, new_b

    def fused_lion(self, params: Prims, grads: Prims, momentum: Prims, lr: Any, beta_1: float, beta_2: float,
                   decay: Any) -> tuple[Prims, Prims]:
        """Lion (Chen et al. 2023, arXiv:2302.06675; Burn's ``Lion``), per tensor::

            c = sign(beta_1 m + (1 - beta_1) g)
            param' = param * decay - lr c                   (decay None: 1)
            m = beta_2 m + (1 - beta_2) g

        Returns:
            ``(params', momentum')``; the momentum may be the input buffers.
        """
        B: Any = self
        new_p, new_m = [], []
        for p, g, m in zip(params, grads, momentum, strict=True):
            g1 = B.mul(g, 1.0 - beta_1)
            c = B.sign(B.add(B.mul(m, beta_1), g1))
            new_m.append(B.add(B.mul(m, beta_2), B.mul(g, 1.0 - beta_2)))
            base = p if decay is None else B.mul(p, decay)
            new_p.append(B.sub(base, B.mul(c, lr)))
        return new_p, new_m
