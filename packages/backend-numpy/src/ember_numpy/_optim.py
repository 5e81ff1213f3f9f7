"""Fused optimizer updates on numpy (issue 22): in-place ``out=`` ufunc chains over cache-sized chunks.

Each update runs its whole element-wise chain on a chunk of :data:`CHUNK` elements before moving to the next, so
the scratch arrays and the chunk of every operand stay in the CPU cache, and writes the optimizer's state buffers
in place (the contract of :mod:`ember.backend._ops_optim`); the new parameters are fresh arrays (the old ones,
and the gradients, are never written). The ops and their order are those of the composite defaults, so the
results are the same bits. A scalar given as an array (a compiled step's ``[1]`` tensors) goes to the composite.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ember.backend.contract import OptimOps, Prims

__all__ = ["NumpyOptimOps", "CHUNK"]

#: elements per chunk: 32 Ki float32 = 128 KiB per operand, the five to seven operands of a chunk within L2
CHUNK = 1 << 17


def _numbers(*xs: Any) -> bool:
    return all(x is None or isinstance(x, (int, float)) for x in xs)


def _own(a: np.ndarray) -> np.ndarray:
    """A state buffer this kernel may write: ``a`` itself, or a C-contiguous writable copy (a read-only array
    shared with a record, a strided view)."""
    return a if a.flags.writeable and a.flags.c_contiguous else np.array(a, order="C")


def _chunked(n_tensors: int, operands: Callable[[int], list[np.ndarray]], body: Callable[..., None]) -> None:
    """``body(*chunks, s0, s1, s2)`` over every chunk of tensor ``i``'s operands (``operands(i)``: flat arrays
    of one size, the last ones written), with three scratch arrays of the chunk's length."""
    scratch: dict[np.dtype, list[np.ndarray]] = {}
    for i in range(n_tensors):
        ops = operands(i)
        n = ops[0].size
        dt = ops[0].dtype
        sc = scratch.get(dt)
        if sc is None or sc[0].size < min(n, CHUNK):
            sc = scratch[dt] = [np.empty(min(max(n, 1), CHUNK), dt) for _ in range(3)]
        for start in range(0, n, CHUNK):
            stop = min(start + CHUNK, n)
            k = stop - start
            body(*(o[start:stop] for o in ops), sc[0][:k], sc[1][:k], sc[2][:k])


def _descend(p: np.ndarray, d: np.ndarray, lr: float, decay: float | None, out: np.ndarray) -> None:
    """``out = p * decay - d * lr`` (``p - d * lr`` without decay); ``d`` is scaled in place."""
    d *= lr
    if decay is None:
        np.subtract(p, d, out=out)
    else:
        np.multiply(p, decay, out=out)
        out -= d


def _flat_in(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1)


class NumpyOptimOps(OptimOps):
    """Chunked in-place kernels of the fused optimizer updates."""

    def fused_adam(self, params: Prims, grads: Prims, moment_1: Prims, moment_2: Prims, max_moment_2: Prims | None,
                   lr: Any, beta_1: float, beta_2: float, factor: Any, eps_term: Any, penalty: float,
                   decay: Any) -> tuple[Prims, Prims, Prims, Prims | None]:
        if not _numbers(lr, factor, eps_term, decay):
            return super().fused_adam(params, grads, moment_1, moment_2, max_moment_2, lr, beta_1, beta_2, factor,
                                      eps_term, penalty, decay)
        ms, vs = [_own(m) for m in moment_1], [_own(v) for v in moment_2]
        vms = None if max_moment_2 is None else [_own(v) for v in max_moment_2]
        outs = [np.empty(p.shape, p.dtype) for p in params]
        c1, c2 = 1.0 - beta_1, 1.0 - beta_2

        def operands(i: int) -> list[np.ndarray]:
            extra = [] if vms is None else [vms[i].reshape(-1)]
            return [_flat_in(params[i]), _flat_in(grads[i]), ms[i].reshape(-1), vs[i].reshape(-1), *extra,
                    outs[i].reshape(-1)]

        def body(p: Any, g: Any, m: Any, v: Any, *rest: Any) -> None:
            vm, out, a, b, c = (None, *rest) if vms is None else rest
            if penalty:
                np.multiply(p, penalty, out=c)
                g = np.add(c, g, out=c)
            m *= beta_1
            m += np.multiply(g, c1, out=a)
            v *= beta_2
            np.square(g, out=a)
            a *= c2
            v += a
            src = v if vm is None else np.maximum(vm, v, out=vm)
            np.sqrt(src, out=a)
            a += eps_term
            np.multiply(m, factor, out=b)
            b /= a
            _descend(p, b, lr, decay, out)

        _chunked(len(params), operands, body)
        return outs, ms, vs, vms

    def fused_sgd(self, params: Prims, grads: Prims, velocity: Prims | None, lr: Any, penalty: float,
                  momentum: float, dampening: float, nesterov: bool, first: bool) -> tuple[Prims, Prims | None]:
        if not _numbers(lr):
            return super().fused_sgd(params, grads, velocity, lr, penalty, momentum, dampening, nesterov, first)
        vel = None if velocity is None else [_own(v) for v in velocity]
        outs = [np.empty(p.shape, p.dtype) for p in params]
        damp = 1.0 - dampening

        def operands(i: int) -> list[np.ndarray]:
            extra = [] if vel is None else [vel[i].reshape(-1)]
            return [_flat_in(params[i]), _flat_in(grads[i]), *extra, outs[i].reshape(-1)]

        def body(p: Any, g: Any, *rest: Any) -> None:
            v, out, a, b, c = (None, *rest) if vel is None else rest
            if penalty:
                np.multiply(p, penalty, out=c)
                g = np.add(c, g, out=c)
            d = g
            if v is not None:
                if first:
                    np.copyto(v, g)
                else:
                    v *= momentum
                    v += np.multiply(g, damp, out=a)
                d = v
                if nesterov:
                    np.multiply(v, momentum, out=b)
                    d = np.add(b, g, out=b)
            np.multiply(d, lr, out=a)
            np.subtract(p, a, out=out)

        _chunked(len(params), operands, body)
        return outs, vel

    def fused_rmsprop(self, params: Prims, grads: Prims, square_avg: Prims, grad_avg: Prims | None,
                      momentum_buf: Prims | None, lr: Any, alpha: float, epsilon: float, momentum: float,
                      penalty: float) -> tuple[Prims, Prims, Prims | None, Prims | None]:
        if not _numbers(lr):
            return super().fused_rmsprop(params, grads, square_avg, grad_avg, momentum_buf, lr, alpha, epsilon,
                                         momentum, penalty)
        ss = [_own(s) for s in square_avg]
        gas = None if grad_avg is None else [_own(a) for a in grad_avg]
        bufs = None if momentum_buf is None else [_own(b) for b in momentum_buf]
        outs = [np.empty(p.shape, p.dtype) for p in params]
        c = 1.0 - alpha

        def operands(i: int) -> list[np.ndarray]:
            extra = [x[i].reshape(-1) if x is not None else None for x in (gas, bufs)]
            return [_flat_in(params[i]), _flat_in(grads[i]), ss[i].reshape(-1),
                    *(e for e in extra if e is not None), outs[i].reshape(-1)]

        def body(p: Any, g: Any, s: Any, *rest: Any) -> None:
            rest_l = list(rest)
            ga = rest_l.pop(0) if gas is not None else None
            buf = rest_l.pop(0) if bufs is not None else None
            out, a, b, t = rest_l
            if penalty:
                np.multiply(p, penalty, out=t)
                g = np.add(t, g, out=t)
            s *= alpha
            np.square(g, out=a)
            a *= c
            s += a
            avg = s
            if ga is not None:
                ga *= alpha
                ga += np.multiply(g, c, out=a)
                np.square(ga, out=b)
                avg = np.subtract(s, b, out=b)
            np.sqrt(avg, out=b)
            b += epsilon
            d = np.divide(g, b, out=b)
            if buf is not None:
                buf *= momentum
                buf += d
                d = buf
            np.multiply(d, lr, out=a)
            np.subtract(p, a, out=out)

        _chunked(len(params), operands, body)
        return outs, ss, gas, bufs

    def fused_lion(self, params: Prims, grads: Prims, momentum: Prims, lr: Any, beta_1: float, beta_2: float,
                   decay: Any) -> tuple[Prims, Prims]:
        if not _numbers(lr, decay):
            return super().fused_lion(params, grads, momentum, lr, beta_1, beta_2, decay)
        ms = [_own(m) for m in momentum]
        outs = [np.empty(p.shape, p.dtype) for p in params]
        c1, c2 = 1.0 - beta_1, 1.0 - beta_2

        def operands(i: int) -> list[np.ndarray]:
            return [_flat_in(params[i]), _flat_in(grads[i]), ms[i].reshape(-1), outs[i].reshape(-1)]

        def body(p: Any, g: Any, m: Any, out: Any, a: Any, b: Any, _c: Any) -> None:
            np.multiply(g, c1, out=a)
            np.multiply(m, beta_1, out=b)
            b += a
            np.sign(b, out=b)
            m *= beta_2
            m += np.multiply(g, c2, out=a)
            _descend(p, b, lr, decay, out)

        _chunked(len(params), operands, body)
        return outs, ms
