"""Benchmark: the XOR MLP training step under ``Autodiff(numpy)`` against raw PyTorch eager and
hand-written numpy, in one process (issue 3).

Not a test: prints steps/s and ratios, never asserts on time. The model is the seed's XOR MLP,
2-16-16-2 with ReLU, batch 32, cross-entropy written as ``-mean(gather(log_softmax(logits), y))``,
and plain gradient descent written with tensor ops (lr 0.1). All three do the same work in float32
with one BLAS / intra-op thread (PERF-NOTES: a second thread only slows such small matmuls).
Target: Ember >= 2x the steps/s of raw torch eager.

Run: python bench/autodiff.py [--steps N] [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember import Tensor
from ember.autodiff import Autodiff
from ember.tensor import activation as A

LR = 0.1
#: (step, last loss) of one implementation
Runner = tuple[Callable[[], None], Callable[[], float]]
SIZES = [(2, 16), (16, 16), (16, 2)]


def data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 2, (32, 2)).astype(np.float32)
    y = (x[:, 0] != x[:, 1]).astype(np.int64)
    x = x + rng.normal(0.0, 0.05, x.shape).astype(np.float32)
    params = []
    for n, m in SIZES:
        params.append((rng.standard_normal((n, m)) / np.sqrt(n)).astype(np.float32))
        params.append(np.zeros(m, np.float32))
    return x, y, params


# ---------------------------------------------------------------------------- Ember
def ember_runner(x: np.ndarray, y: np.ndarray, params: list[np.ndarray]) -> Runner:
    dev = Autodiff(ember.backend("numpy", float_dtype="float32")).device()
    xt = Tensor.from_data(x, dev)
    yt = Tensor.from_data(y, dev).unsqueeze_dim(1)
    ps = [Tensor.from_data(p, dev) for p in params]
    last = [0.0]

    def step() -> None:
        w0, b0, w1, b1, w2, b2 = (p.require_grad() for p in ps)
        h = A.relu(xt @ w0 + b0)
        h = A.relu(h @ w1 + b1)
        logits = h @ w2 + b2
        loss = A.log_softmax(logits, 1).gather(1, yt).mean().neg()
        grads = loss.backward()
        for i, p in enumerate((w0, b0, w1, b1, w2, b2)):
            ps[i] = Tensor.from_inner(p.inner() - p.grad(grads) * LR, dev)
        last[0] = loss

    return step, lambda: float(last[0].into_scalar())  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- torch eager
def torch_runner(x: np.ndarray, y: np.ndarray, params: list[np.ndarray]) -> Runner:
    import torch

    xt = torch.tensor(x)
    yt = torch.tensor(y).unsqueeze(1)
    ps = [torch.tensor(p, requires_grad=True) for p in params]
    last: list[Any] = [None]

    def step() -> None:
        w0, b0, w1, b1, w2, b2 = ps
        h = torch.relu(xt @ w0 + b0)
        h = torch.relu(h @ w1 + b1)
        logits = h @ w2 + b2
        loss = -torch.log_softmax(logits, 1).gather(1, yt).mean()
        loss.backward()
        with torch.no_grad():
            for p in ps:
                p -= p.grad * LR
                p.grad = None
        last[0] = loss

    return step, lambda: float(last[0].item())


# ---------------------------------------------------------------------------- hand-written numpy
def numpy_runner(x: np.ndarray, y: np.ndarray, params: list[np.ndarray]) -> Runner:
    ps = [p.copy() for p in params]
    n = len(y)
    onehot = np.eye(2, dtype=np.float32)[y]
    last = [0.0]

    def step() -> None:
        w0, b0, w1, b1, w2, b2 = ps
        z0 = x @ w0 + b0
        h0 = np.maximum(z0, 0)
        z1 = h0 @ w1 + b1
        h1 = np.maximum(z1, 0)
        logits = h1 @ w2 + b2
        s = logits - logits.max(1, keepdims=True)
        lse = np.log(np.exp(s).sum(1, keepdims=True))
        logp = s - lse
        loss = -(logp * onehot).sum() / n
        g = (np.exp(logp) - onehot) / n
        gw2, gb2 = h1.T @ g, g.sum(0)
        g = (g @ w2.T) * (z1 > 0)
        gw1, gb1 = h0.T @ g, g.sum(0)
        g = (g @ w1.T) * (z0 > 0)
        gw0, gb0 = x.T @ g, g.sum(0)
        for i, gp in enumerate((gw0, gb0, gw1, gb1, gw2, gb2)):
            ps[i] = ps[i] - gp * np.float32(LR)
        last[0] = float(loss)

    return step, lambda: last[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300, help="steps per round")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median reported)")
    args = ap.parse_args()

    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    x, y, params = data()
    runners = {"ember autodiff(numpy)": ember_runner(x, y, params), "torch eager": torch_runner(x, y, params),
               "hand-written numpy": numpy_runner(x, y, params)}
    times: dict[str, list[float]] = {k: [] for k in runners}
    cpu: dict[str, list[float]] = {k: [] for k in runners}
    with threadpool_limits(limits=1):
        for step, _ in runners.values():  # warm up
            for _ in range(50):
                step()
        for _ in range(args.rounds):
            for name, (step, _) in runners.items():
                c0, t0 = time.process_time(), time.perf_counter()
                for _ in range(args.steps):
                    step()
                times[name].append((time.perf_counter() - t0) / args.steps)
                cpu[name].append((time.process_time() - c0) / args.steps)
    rate = {k: 1.0 / statistics.median(v) for k, v in times.items()}
    crate = {k: 1.0 / statistics.median(v) for k, v in cpu.items()}
    print(f"XOR MLP 2-16-16-2, batch 32, float32, 1 thread; {args.rounds} rounds x {args.steps} steps, medians")
    print("  (wall clock; CPU time of this process in brackets, steadier when other jobs share the cores)")
    for name, (_, loss) in runners.items():
        print(f"  {name:24s} {rate[name]:7.0f} steps/s {1e6 / rate[name]:7.1f} us/step "
              f"[{1e6 / crate[name]:6.1f} us CPU]  loss {loss():.4f}")
    e, t, n = rate["ember autodiff(numpy)"], rate["torch eager"], rate["hand-written numpy"]
    ce, ct, cn = crate["ember autodiff(numpy)"], crate["torch eager"], crate["hand-written numpy"]
    print(f"  ember / torch eager        {e / t:5.2f}x [{ce / ct:5.2f}x CPU]  (target >= 2x)")
    print(f"  ember / hand-written numpy {e / n:5.2f}x [{ce / cn:5.2f}x CPU]")
    print(f"  hand-written numpy / torch {n / t:5.2f}x [{cn / ct:5.2f}x CPU]")


if __name__ == "__main__":
    main()
