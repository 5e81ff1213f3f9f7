"""Benchmark: ``ember.nn`` layers' forward + backward under ``Autodiff(numpy)`` against the same torch
``nn`` layers on CPU, in one process (issue 5, Linear and LSTM part; ``bench/nn.py`` has the convs).

Not a test: prints medians and ratios, never asserts on time. Cases (float32, issue 5's shapes):

- ``nn.Linear`` 1024->512, batch 64 (Burn's weight layout ``[d_in, d_out]``; torch's is transposed);
- ``nn.Lstm`` 128->256, sequence 32, batch 16 (batch first; torch ``nn.LSTM(batch_first=True)``).

Each step runs the layer, ``loss = sum(y * r)`` with a fixed random ``r``, ``backward``, and reads the
input and weight gradients, on both sides, with the same weights (copied across; values are checked
to agree first). Target for Linear: Ember at least 0.8x torch's speed (ratio = torch / Ember time).
BLAS and torch intra-op threads are set with ``--threads`` (default 1; see PERF-NOTES).

Run: python bench/nn_layers.py [--rounds R] [--threads T] [--batch-ms MS] [-k TEXT]
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from _timing import forward_backward_args, time_per_call
from ember import Tensor, nn
from ember.autodiff import Autodiff


def _r(shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(1).standard_normal(shape).astype(np.float32)


def linear_steps(batch: int = 64, d_in: int = 1024, d_out: int = 512) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import torch

    dev = Autodiff(ember.backend("numpy", float_dtype="float32")).device()
    layer = nn.LinearConfig(d_in, d_out).init(dev)
    x = np.random.default_rng(0).standard_normal((batch, d_in)).astype(np.float32)
    xe, re = Tensor.from_data(x, dev), Tensor.from_data(_r((batch, d_out)), dev)
    tl = torch.nn.Linear(d_in, d_out)
    with torch.no_grad():
        tl.weight.copy_(torch.tensor(layer.weight.val().to_numpy().T))
        tl.bias.copy_(torch.tensor(layer.bias.val().to_numpy()))
    xt, rt = torch.tensor(x, requires_grad=True), torch.tensor(_r((batch, d_out)))

    def ember_step() -> Any:
        xg = xe.require_grad()
        grads = (layer(xg) * re).sum().backward()
        return [xg.grad(grads).to_numpy(), layer.weight.val().grad(grads).to_numpy().T]

    def torch_step() -> Any:
        (tl(xt) * rt).sum().backward()
        out = [xt.grad.numpy().copy(), tl.weight.grad.numpy().copy()]  # type: ignore[union-attr]
        xt.grad = None
        tl.zero_grad(set_to_none=True)
        return out

    return ember_step, torch_step


def lstm_steps(batch: int = 16, seq: int = 32, d_in: int = 128, d_hidden: int = 256,
               ) -> tuple[Callable[[], Any], Callable[[], Any]]:
    import torch

    dev = Autodiff(ember.backend("numpy", float_dtype="float32")).device()
    m = nn.LstmConfig(d_in, d_hidden).init(dev)
    x = np.random.default_rng(0).standard_normal((batch, seq, d_in)).astype(np.float32)
    xe, re = Tensor.from_data(x, dev), Tensor.from_data(_r((batch, seq, d_hidden)), dev)
    t = torch.nn.LSTM(d_in, d_hidden, batch_first=True)
    with torch.no_grad():  # Ember's fused weights are PyTorch's transposed, same gate order i, f, g, o
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            v = getattr(m, name).val().to_numpy()
            getattr(t, f"{name}_l0").copy_(torch.tensor(v.T if name.startswith("weight") else v))
    xt, rt = torch.tensor(x, requires_grad=True), torch.tensor(_r((batch, seq, d_hidden)))

    def ember_step() -> Any:
        xg = xe.require_grad()
        out, _ = m(xg)
        grads = (out * re).sum().backward()
        return [xg.grad(grads).to_numpy()]

    def torch_step() -> Any:
        out, _ = t(xt)
        (out * rt).sum().backward()
        g = [xt.grad.numpy().copy()]  # type: ignore[union-attr]
        xt.grad = None
        t.zero_grad(set_to_none=True)
        return g

    return ember_step, torch_step


CASES: dict[str, Callable[[], tuple[Callable[[], Any], Callable[[], Any]]]] = {
    "nn.Linear 1024->512 b64": linear_steps,
    "nn.Lstm 128->256 seq32 b16": lstm_steps,
}


def main() -> None:
    args = forward_backward_args(__doc__.split("\n\n")[0], 200.0)

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(args.threads)
    print(f"forward + backward, float32, {args.threads} thread(s); median of {args.rounds} interleaved rounds")
    print(f"  {'case':30s} {'ember ms':>9s} {'torch ms':>9s} {'torch/ember':>12s}")
    with threadpool_limits(limits=args.threads):
        for name, make in CASES.items():
            if args.k not in name:
                continue
            e, t = make()
            for a, b in zip(e(), t()):  # same work, same values
                np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3 * float(np.abs(b).max()))
            te: list[float] = []
            tt: list[float] = []
            for _ in range(args.rounds):
                te.append(time_per_call(e, args.batch_ms / 1e3))
                tt.append(time_per_call(t, args.batch_ms / 1e3))
            me, mt = statistics.median(te), statistics.median(tt)
            print(f"  {name:30s} {me * 1e3:9.2f} {mt * 1e3:9.2f} {mt / me:11.2f}x")


if __name__ == "__main__":
    main()
