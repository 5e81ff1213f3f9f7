"""Fused optimizer updates on torch (issue 22): multi-tensor ``torch._foreach_*`` kernels, as
``torch.optim``'s ``foreach=True`` implementations.

Each op of a rule runs over every parameter of the step in one call, the state buffers updated in place (the
contract of :mod:`ember.backend._ops_optim`); the new parameters come from the out-of-place ``_foreach_*``
variants, so the old parameters and the gradients are never written. ``_foreach_add(x, y, alpha=a)``,
``_foreach_lerp_`` and ``_foreach_addcmul``/``_foreach_addcdiv`` may round once where the composite rounds
twice, so the results agree with the composite to float rounding, not bit for bit. A scalar given as a tensor
(a compiled step's ``[1]`` tensors: the learning rate, Adam's bias terms) is a 0-dim tensor operand of the
``Tensor`` overloads for Adam and SGD (no host read: a step captured by ``ember_torch.compile`` keeps the fused
kernels); the other rules take the composite then.
"""

from __future__ import annotations

from typing import Any

import torch

from ember.backend.contract import OptimOps, Prims

__all__ = ["TorchOptimOps"]

_fe: Any = torch  # the _foreach_* functions are private members of torch's namespace


def _numbers(*xs: Any) -> bool:
    return all(x is None or isinstance(x, (int, float)) for x in xs)


def _scalars(*xs: Any) -> bool:
    """Every one a Python number, ``None`` or a one-element tensor (a compiled step's ``[1]`` scalars)."""
    return all(x is None or isinstance(x, (int, float)) or (isinstance(x, torch.Tensor) and x.numel() == 1)
               for x in xs)


def _as_scalar(x: Any, like: Any) -> Any:
    """A number as it is; a one-element tensor as a 0-dim tensor on ``like``'s device and dtype (the ``Tensor``
    overloads of ``_foreach_*`` take 0-dim tensors: no host read, so a captured step keeps it in its graph)."""
    if isinstance(x, torch.Tensor):
        return x.reshape(()).to(device=like.device, dtype=like.dtype)
    return x


def _add_scalar_(xs: Prims, value: Any) -> None:
    """``xs += value`` in place for a number or a 0-dim tensor. A 0-dim tensor must take the ``Tensor`` overload
    explicitly: through ``torch._foreach_add_`` it matches the ``Scalar`` overload first, which reads the value on
    the host (``aten._local_scalar_dense``): a device-to-host synchronization at every step on CUDA, and a
    data-dependent read inside a captured step."""
    if isinstance(value, torch.Tensor):
        torch.ops.aten._foreach_add_.Tensor(xs, value)
    else:
        _fe._foreach_add_(xs, value)


def _step_by(params: Prims, decay: Any, num: Prims, denom: Prims, value: Any) -> Prims:
    """``base + value * num / denom`` for a 0-dim tensor ``value`` (:func:`_step_into` takes numbers)."""
    d = _fe._foreach_mul(num, value)
    _fe._foreach_div_(d, denom)
    return list(_fe._foreach_add(_base(params, decay), d))


def _with_penalty(params: Prims, grads: Prims, penalty: float) -> Prims:
    """``grad + penalty * param`` (a new list) or the gradients themselves."""
    return _fe._foreach_add(grads, params, alpha=penalty) if penalty else grads


def _base(params: Prims, decay: Any) -> Prims:
    """``param * decay`` (new tensors) or the parameters themselves."""
    return params if decay is None else _fe._foreach_mul(params, decay)


#: parameters of at least this many elements take the in-place ``addcdiv`` of :func:`_step_into` (one launch each);
#: smaller ones share one out-of-place ``_foreach_addcdiv`` (their allocations are cheap, their launches are not)
IN_PLACE_MIN = 1 << 16


def _step_into(params: Prims, decay: Any, num: Prims, denom: Prims, value: float) -> Prims:
    """``base + value * num / denom`` with ``base`` the parameters (times ``decay``), written into fresh buffers this
    step owns: ``denom``'s own, else the decayed copies. An out-of-place ``_foreach_addcdiv`` would allocate one
    more parameter-sized tensor per parameter, fresh memory the kernel page-faults into: ResNet-18's step (11.7M
    parameters) spent 2x the in-place time in it. So on the CPU each large parameter (:data:`IN_PLACE_MIN`) is one
    in-place ``addcdiv`` into its ``denom``, the small ones one out-of-place foreach; on CUDA, where the caching
    allocator hands out warm memory and launches cost more than allocations, everything is one foreach."""
    if decay is not None:
        base = _base(params, decay)
        _fe._foreach_addcdiv_(base, num, denom, value=value)
        return list(base)
    if not params or params[0].is_cuda:
        return list(_fe._foreach_addcdiv(params, num, denom, value=value))
    out = list(denom)
    small = [i for i, p in enumerate(params) if p.numel() < IN_PLACE_MIN]
    if small:
        new = _fe._foreach_addcdiv([params[i] for i in small], [num[i] for i in small], [denom[i] for i in small],
                                   value=value)
        for i, t in zip(small, new):
            out[i] = t
    for p, n, d in zip(params, num, denom):
        if p.numel() >= IN_PLACE_MIN:
            torch.addcdiv(p, n, d, value=value, out=d)  # elementwise: d may be both an input and the output
    return out


class TorchOptimOps(OptimOps):
    """``torch._foreach_*`` kernels of the fused optimizer updates."""

    def fused_adam(self, params: Prims, grads: Prims, moment_1: Prims, moment_2: Prims, max_moment_2: Prims | None,
                   lr: Any, beta_1: float, beta_2: float, factor: Any, eps_term: Any, penalty: float,
                   decay: Any) -> tuple[Prims, Prims, Prims, Prims | None]:
        if not params or not _scalars(lr, factor, eps_term, decay):
            return super().fused_adam(params, grads, moment_1, moment_2, max_moment_2, lr, beta_1, beta_2, factor,
                                      eps_term, penalty, decay)
        tensors = not _numbers(lr, factor, eps_term, decay)
        if tensors:
            lr, factor, eps_term, decay = (_as_scalar(x, params[0]) for x in (lr, factor, eps_term, decay))
        g = _with_penalty(params, grads, penalty)
        # beta_1 m + (1 - beta_1) g as m + (1 - beta_1) (g - m): one pass over the moments instead of two (torch.optim's
        # Adam does the same); ResNet-18's 11.7M parameters: 2 ms a step on this CPU
        _fe._foreach_lerp_(moment_1, g, 1.0 - beta_1)
        _fe._foreach_mul_(moment_2, beta_2)
        _fe._foreach_addcmul_(moment_2, g, g, value=1.0 - beta_2)
        src = moment_2
        if max_moment_2 is not None:
            _fe._foreach_maximum_(max_moment_2, moment_2)
            src = max_moment_2
        denom = _fe._foreach_sqrt(src)
        _add_scalar_(denom, eps_term)
        step = _step_by if tensors else _step_into
        return step(params, decay, moment_1, denom, -(lr * factor)), moment_1, moment_2, max_moment_2

    def fused_sgd(self, params: Prims, grads: Prims, velocity: Prims | None, lr: Any, penalty: float,
                  momentum: float, dampening: float, nesterov: bool, first: bool) -> tuple[Prims, Prims | None]:
        if not params or not _scalars(lr):
            return super().fused_sgd(params, grads, velocity, lr, penalty, momentum, dampening, nesterov, first)
        g = _with_penalty(params, grads, penalty)
        d = g
        if velocity is not None:
            if first:
                _fe._foreach_copy_(velocity, g)
            else:
                _fe._foreach_mul_(velocity, momentum)
                _fe._foreach_add_(velocity, g, alpha=1.0 - dampening)
            d = _fe._foreach_add(g, velocity, alpha=momentum) if nesterov else velocity
        if isinstance(lr, torch.Tensor):
            return list(_fe._foreach_add(params, _fe._foreach_mul(d, -_as_scalar(lr, params[0])))), velocity
        return list(_fe._foreach_add(params, d, alpha=-lr)), velocity

    def fused_rmsprop(self, params: Prims, grads: Prims, square_avg: Prims, grad_avg: Prims | None,
                      momentum_buf: Prims | None, lr: Any, alpha: float, epsilon: float, momentum: float,
                      penalty: float) -> tuple[Prims, Prims, Prims | None, Prims | None]:
        if not _numbers(lr) or not params:
            return super().fused_rmsprop(params, grads, square_avg, grad_avg, momentum_buf, lr, alpha, epsilon,
                                         momentum, penalty)
        g = _with_penalty(params, grads, penalty)
        _fe._foreach_mul_(square_avg, alpha)
        _fe._foreach_addcmul_(square_avg, g, g, value=1.0 - alpha)
        if grad_avg is not None:
            _fe._foreach_mul_(grad_avg, alpha)
            _fe._foreach_add_(grad_avg, g, alpha=1.0 - alpha)
            denom = _fe._foreach_addcmul(square_avg, grad_avg, grad_avg, value=-1.0)
            _fe._foreach_sqrt_(denom)
        else:
            denom = _fe._foreach_sqrt(square_avg)
        _fe._foreach_add_(denom, epsilon)
        if momentum_buf is not None:
            _fe._foreach_mul_(momentum_buf, momentum)
            _fe._foreach_addcdiv_(momentum_buf, g, denom)
            new = _fe._foreach_add(params, momentum_buf, alpha=-lr)
        else:
            new = _step_into(params, None, g, denom, -lr)
        return list(new), square_avg, grad_avg, momentum_buf

    def fused_lion(self, params: Prims, grads: Prims, momentum: Prims, lr: Any, beta_1: float, beta_2: float,
                   decay: Any) -> tuple[Prims, Prims]:
        if not _numbers(lr, decay) or not params:
            return super().fused_lion(params, grads, momentum, lr, beta_1, beta_2, decay)
        c = _fe._foreach_mul(momentum, beta_1)
        _fe._foreach_add_(c, grads, alpha=1.0 - beta_1)
        _fe._foreach_sign_(c)
        _fe._foreach_mul_(momentum, beta_2)
        _fe._foreach_add_(momentum, grads, alpha=1.0 - beta_2)
        return list(_fe._foreach_add(_base(params, decay), c, alpha=-lr)), momentum
