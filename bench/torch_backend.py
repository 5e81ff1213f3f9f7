"""Ember on the torch backend against raw torch, in one process (a benchmark, not a test).

Each case runs the Ember version and the raw-torch version of the same work, interleaved in
rounds so that load from other processes hits both alike; the figures are medians over rounds and
the ratio is ``ember time / torch time`` (1.00 = no overhead). Targets (issue 9):

- ``add 4x4`` float32: within 1.5x (the per-op dispatch of Ember over torch's ~1.9 µs);
- ``add 1000x1000`` float32 and ``matmul 2048x2048`` float32: within 1.05x;
- XOR MLP training step (2-16-16-2, ReLU, batch 32, cross entropy, SGD written with tensor ops)
  under ``Autodiff(torch)`` against raw torch eager with autograd: at least 0.8x torch's speed
  (a time ratio of at most 1.25);
- conv2d forward + backward (input, weight and bias gradients of ``sum(conv2d(x, w, b) * r)``) at the
  MNIST guide's shapes, batch 64: 1->8 3x3 on 28x28 and 8->16 3x3 on 26x26, under ``Autodiff(torch)``
  against raw torch with autograd: at least 0.9x torch's speed (a time ratio of at most 1.11). The
  torch backend runs them as native kernels (``F.conv2d``, ``aten.convolution_backward``).

``Autodiff(torch)`` uses Ember's generic graph (``TorchBackend.supports_native_autodiff`` is
false): each Float op records a Python node and ``backward()`` replays the rules as inner torch
ops. The two raw-torch XOR baselines are torch's autograd on the same ops and the idiomatic
``F.cross_entropy`` version.

Run: ``python bench/torch_backend.py [--quick]``. torch runs with 1 intra-op thread by default
(``--threads N`` to change it): on this shared 2-core machine a second thread makes small ops
slower and every figure noisier (see /work/shared/PERF-NOTES.md).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - torch's convention

import ember
from ember import Tensor
from ember.tensor import activation as A


def _per_call(fn: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def compare(name: str, ember_fn: Callable[[], object], raw_fns: dict[str, Callable[[], object]],
            number: int, rounds: int) -> dict[str, float]:
    """Median seconds per call of each function, measured in interleaved rounds."""
    fns = {"ember": ember_fn, **raw_fns}
    for f in fns.values():  # warm-up: allocator, caches, lazy imports
        _per_call(f, max(1, number // 10))
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            samples[k].append(_per_call(f, number))
    med = {k: statistics.median(v) for k, v in samples.items()}
    cols = "  ".join(f"{k} {_fmt(v)}" for k, v in med.items())
    base = next(iter(raw_fns))
    print(f"{name:<28} {cols}  ratio ember/{base} {med['ember'] / med[base]:.2f}")
    return med


def _fmt(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.2f} µs"
    return f"{seconds * 1e3:8.2f} ms"


# ---------------------------------------------------------------------------- dispatch cases
def bench_add(n: int, number: int, rounds: int) -> None:
    dev = ember.backend("torch").device()
    rng = np.random.default_rng(0)
    a_np, b_np = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    a, b = Tensor.from_data(a_np, dev), Tensor.from_data(b_np, dev)
    ta, tb = torch.from_numpy(a_np), torch.from_numpy(b_np)
    compare(f"add {n}x{n} float32", lambda: a + b, {"torch": lambda: ta + tb}, number, rounds)


def bench_matmul(n: int, number: int, rounds: int) -> None:
    dev = ember.backend("torch").device()
    rng = np.random.default_rng(0)
    a_np, b_np = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    a, b = Tensor.from_data(a_np, dev), Tensor.from_data(b_np, dev)
    ta, tb = torch.from_numpy(a_np), torch.from_numpy(b_np)
    compare(f"matmul {n}x{n} float32", lambda: a @ b, {"torch": lambda: ta @ tb}, number, rounds)


# ---------------------------------------------------------------------------- XOR MLP
SIZES = [(2, 16), (16, 16), (16, 2)]
BATCH, LR = 32, 0.1


def _xor_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, size=(BATCH, 2))
    x = (bits + rng.normal(0.0, 0.1, size=(BATCH, 2))).astype(np.float32)
    return x, (bits[:, 0] ^ bits[:, 1]).astype(np.int64)


def _init_params(seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for fan_in, fan_out in SIZES:  # Kaiming-uniform bound 1/sqrt(fan_in), as torch.nn.Linear
        bound = 1.0 / np.sqrt(fan_in)
        out.append(rng.uniform(-bound, bound, (fan_in, fan_out)).astype(np.float32))
        out.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    return out


class EmberXor:
    """The step with Ember tensors on ``Autodiff(torch)``: forward, ``backward()``, SGD."""

    def __init__(self) -> None:
        from ember.autodiff import Autodiff

        self.dev = Autodiff(ember.backend("torch")).device()
        x, y = _xor_data()
        self.x = Tensor.from_data(x, self.dev)
        self.onehot = Tensor.from_data(np.eye(2, dtype=np.float32)[y], self.dev)
        self.params = [Tensor.from_data(p, self.dev) for p in _init_params()]

    def loss(self, ps: list[Tensor]) -> Tensor:
        w1, b1, w2, b2, w3, b3 = ps
        h = A.relu(self.x @ w1 + b1)
        h = A.relu(h @ w2 + b2)
        logits = h @ w3 + b3
        # cross entropy with one-hot targets: -mean(sum(onehot * log_softmax(logits)))
        return (A.log_softmax(logits, 1) * self.onehot).sum().mul_scalar(-1.0 / BATCH)

    def step(self) -> float:
        ps = [p.require_grad() for p in self.params]
        loss = self.loss(ps)
        grads = loss.backward()
        self.params = [Tensor.from_inner(p.inner() - p.grad(grads) * LR, self.dev) for p in ps]
        return 0.0


class TorchXor:
    """The same step in raw torch eager with autograd (``fused``: ``F.cross_entropy``)."""

    def __init__(self, fused: bool) -> None:
        x, y = _xor_data()
        self.x = torch.from_numpy(x)
        self.y = torch.from_numpy(y)
        self.onehot = torch.from_numpy(np.eye(2, dtype=np.float32)[y])
        self.params = [torch.from_numpy(p).requires_grad_() for p in _init_params()]
        self.fused = fused

    def step(self) -> float:
        w1, b1, w2, b2, w3, b3 = self.params
        h = torch.relu(self.x @ w1 + b1)
        h = torch.relu(h @ w2 + b2)
        logits = h @ w3 + b3
        if self.fused:
            loss = F.cross_entropy(logits, self.y)
        else:
            loss = (torch.log_softmax(logits, 1) * self.onehot).sum() * (-1.0 / BATCH)
        loss.backward()
        with torch.no_grad():
            for p in self.params:
                p -= LR * p.grad
                p.grad = None
        return 0.0


def check_xor_agree() -> None:
    """Both implementations take the same steps (same init, same data): compare after 3 steps."""
    e, t = EmberXor(), TorchXor(fused=False)
    for _ in range(3):
        e.step()
        t.step()
    worst = max(float(np.max(np.abs(p.to_numpy() - q.detach().numpy()))) for p, q in zip(e.params, t.params))
    print(f"xor: Ember and torch parameters after 3 steps differ by at most {worst:.2e}")
    if worst > 1e-5:
        raise SystemExit("the two XOR implementations disagree; the timing would compare different work")


def bench_xor(number: int, rounds: int) -> None:
    try:
        e = EmberXor()
    except ImportError as exc:  # pragma: no cover - before ember.autodiff existed
        print(f"xor step: skipped ({exc})")
        return
    check_xor_agree()
    t_same, t_fused = TorchXor(fused=False), TorchXor(fused=True)
    med = compare("xor mlp step (Autodiff)", e.step, {"torch": t_same.step, "torch F.ce": t_fused.step},
                  number, rounds)
    print(f"{'':<28} speed vs torch (same ops) {med['torch'] / med['ember']:.2f}x, "
          f"vs torch F.cross_entropy {med['torch F.ce'] / med['ember']:.2f}x; "
          f"{1.0 / med['ember']:,.0f} Ember steps/s")


# ---------------------------------------------------------------------------- conv2d (MNIST guide)
CONVS = {  # name: (x shape, weight shape)
    "conv2d 1->8 3x3 28x28 b64": ((64, 1, 28, 28), (8, 1, 3, 3)),
    "conv2d 8->16 3x3 26x26 b64": ((64, 8, 26, 26), (16, 8, 3, 3)),
}


def _conv_arrays(xs: tuple[int, ...], ws: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    out = (xs[0], ws[0], xs[2] - ws[2] + 1, xs[3] - ws[3] + 1)
    r = rng.standard_normal(out).astype(np.float32)
    return x, w, b, r


def bench_conv(number: int, rounds: int) -> None:
    """``sum(conv2d(x, w, b) * r)``, forward and the gradients of ``x``, ``w`` and ``b``."""
    from ember.autodiff import Autodiff
    from ember.tensor import functional as M

    dev = Autodiff(ember.backend("torch")).device()
    for name, (xs, ws) in CONVS.items():
        arrays = _conv_arrays(xs, ws)
        ex, ew, eb, er = (Tensor.from_data(a, dev) for a in arrays)
        tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in arrays[:3])
        tr = torch.from_numpy(arrays[3])

        def ember_step(ex: Tensor = ex, ew: Tensor = ew, eb: Tensor = eb, er: Tensor = er) -> list[Tensor]:
            xg, wg, bg = ex.require_grad(), ew.require_grad(), eb.require_grad()
            grads = (M.conv2d(xg, wg, bg) * er).sum().backward()
            return [t.grad(grads) for t in (xg, wg, bg)]

        def torch_step(tx: torch.Tensor = tx, tw: torch.Tensor = tw, tb: torch.Tensor = tb,
                       tr: torch.Tensor = tr) -> list[torch.Tensor]:
            (F.conv2d(tx, tw, tb) * tr).sum().backward()
            out = [tx.grad, tw.grad, tb.grad]
            tx.grad = tw.grad = tb.grad = None
            return out  # type: ignore[return-value]

        e_out, t_out = ember_step(), torch_step()
        # float32 sums over 43,264 outputs (the bias gradient): compare relative to each gradient's scale
        worst = max(float(np.max(np.abs(e.to_numpy() - t.numpy())) / np.max(np.abs(t.numpy())))
                    for e, t in zip(e_out, t_out))
        if worst > 1e-4:
            raise SystemExit(f"{name}: Ember and torch gradients differ by {worst:.1e} (relative); the timing "
                             "would compare different work")
        med = compare(f"{name} fwd+bwd", ember_step, {"torch": torch_step}, number, rounds)
        print(f"{'':<28} speed vs torch autograd {med['torch'] / med['ember']:.2f}x (target >= 0.9x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    r = 3 if args.quick else 9
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); medians of {r} interleaved rounds")
    bench_add(4, 2000 if args.quick else 20000, r)
    bench_add(1000, 20 if args.quick else 100, r)
    bench_matmul(2048, 1, r)
    bench_xor(20 if args.quick else 200, r)
    bench_conv(5 if args.quick else 20, r)


if __name__ == "__main__":
    main()
