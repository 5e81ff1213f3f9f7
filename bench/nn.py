"""Benchmark: nn layers' forward + backward under ``Autodiff(numpy)`` against torch CPU eager, in one
process (issue 5, conv and Linear part).

Not a test: prints medians and ratios, never asserts on time. Cases (float32, issue 5's shapes):

- conv2d 1->8 3x3 on 28x28, batch 64 (the MNIST guide's first conv);
- conv2d 8->16 3x3 on 26x26, batch 64 (its second conv);
- conv2d 64->64 3x3 pad 1 on 56x56, batch 8 (a ResNet block's conv);
- Linear 1024->512, batch 64 (``x @ w + b`` on tensors; Burn's weight layout ``[d_in, d_out]``).

Each step is ``y = op(x, w, b)``, ``loss = sum(y * r)`` with a fixed random ``r``, ``backward``, and
reading the input, weight and bias gradients, on both sides. Target: Ember at least 0.8x torch's
speed (ratio = torch time / Ember time >= 0.8). BLAS and torch intra-op threads are set with
``--threads`` (default 1; PERF-NOTES: a second thread rarely helps here and hurts under load).

Run: python bench/nn.py [--rounds R] [--threads T] [-k TEXT]
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from _timing import forward_backward_args, time_per_call
from ember import Tensor
from ember.autodiff import Autodiff
from ember.tensor import functional as M

#: name -> (x shape, weight shape, padding); a 2-D weight marks Linear
CASES: dict[str, tuple[tuple[int, ...], tuple[int, ...], int]] = {
    "conv2d 1->8 3x3 28x28 b64": ((64, 1, 28, 28), (8, 1, 3, 3), 0),
    "conv2d 8->16 3x3 26x26 b64": ((64, 8, 26, 26), (16, 8, 3, 3), 0),
    "conv2d 64->64 3x3 56x56 b8 pad1": ((8, 64, 56, 56), (64, 64, 3, 3), 1),
    "linear 1024->512 b64": ((64, 1024), (1024, 512), 0),
}


def _arrays(xs: tuple[int, ...], ws: tuple[int, ...], seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]) if len(ws) == 4 else ws[0])).astype(np.float32)
    b = rng.standard_normal(ws[0] if len(ws) == 4 else ws[1]).astype(np.float32)
    return x, w, b


def ember_step(xs: tuple[int, ...], ws: tuple[int, ...], pad: int) -> Callable[[], Any]:
    dev = Autodiff(ember.backend("numpy", float_dtype="float32")).device()
    x, w, b = _arrays(xs, ws)
    xt, wt, bt = (Tensor.from_data(a, dev) for a in (x, w, b))
    conv = len(ws) == 4
    opts = M.ConvOptions(padding=pad)
    r: list[Any] = [None]

    def step() -> Any:
        xg, wg, bg = xt.require_grad(), wt.require_grad(), bt.require_grad()
        y = M.conv2d(xg, wg, bg, opts) if conv else xg @ wg + bg
        if r[0] is None:
            r[0] = Tensor.from_data(np.random.default_rng(1).standard_normal(y.shape).astype(np.float32), dev)
        grads = (y * r[0]).sum().backward()
        return [t.grad(grads).to_numpy() for t in (xg, wg, bg)]

    return step


def torch_step(xs: tuple[int, ...], ws: tuple[int, ...], pad: int) -> Callable[[], Any]:
    import torch
    import torch.nn.functional as F

    x, w, b = _arrays(xs, ws)
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    conv = len(ws) == 4
    r: list[Any] = [None]

    def step() -> Any:
        y = F.conv2d(xt, wt, bt, padding=pad) if conv else xt @ wt + bt
        if r[0] is None:
            r[0] = torch.tensor(np.random.default_rng(1).standard_normal(tuple(y.shape)).astype(np.float32))
        (y * r[0]).sum().backward()
        out = [t.grad.numpy().copy() for t in (xt, wt, bt)]  # type: ignore[union-attr]
        for t in (xt, wt, bt):
            t.grad = None
        return out

    return step


def main() -> None:
    args = forward_backward_args(__doc__.split("\n\n")[0], 150.0)

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    print(f"forward + backward, float32, {args.threads} thread(s); median of {args.rounds} interleaved rounds")
    print(f"  {'case':34s} {'ember ms':>9s} {'torch ms':>9s} {'torch/ember':>12s}  (target >= 0.8)")
    with threadpool_limits(limits=args.threads):
        for name, (xs, ws, pad) in CASES.items():
            if args.k not in name:
                continue
            e, t = ember_step(xs, ws, pad), torch_step(xs, ws, pad)
            for a, b in zip(e(), t()):  # same work, same values
                np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3 * float(np.abs(b).max()))
            te: list[float] = []
            tt: list[float] = []
            for _ in range(args.rounds):
                te.append(time_per_call(e, args.batch_ms / 1e3))
                tt.append(time_per_call(t, args.batch_ms / 1e3))
            me, mt = statistics.median(te), statistics.median(tt)
            print(f"  {name:34s} {me * 1e3:9.2f} {mt * 1e3:9.2f} {mt / me:11.2f}x")


if __name__ == "__main__":
    main()
