"""The backend extension example (issue 34): ``examples/custom_op``'s fused ``matmul_add_relu`` against its
composite default, forward + backward at ``[32, 512] x [512, 512]`` (bias ``[1, 512]``, float32), on each installed
backend, interleaved in one process.

Both contenders differentiate ``sum(out * grad)`` for a fixed random ``grad`` under ``Autodiff`` over the backend
(all three inputs tracked). ``composite``: the default (``matmul``, ``add``, ``relu`` recorded one by one, the
derived backward); ``fused``: the custom op (the backend's kernel and its backward kernel; numpy has no kernel, so
there it is the default's forward with the custom backward rule). ``--jit`` adds ``jax jit`` rows: the same steps
under ``ember_jax.jit``. Medians of ``--rounds`` rounds of ``--round-s`` seconds; the ratio is the composite's
median over the fused one's (target: torch and jax >= 1.2x). 1 thread by default (the backends' ``threads`` option).

    python bench/custom_op.py [--rounds 7] [--round-s 0.3] [--threads 1] [--jit] [--device cuda]

Not a test: nothing asserts on time.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

from _timing import time_per_call  # noqa: E402  (bench/ is on sys.path when a script in it runs)

M, K, N = 32, 512, 512


def _arrays() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(np.float32) for s in ((M, K), (K, N), (1, N), (M, N))]


def _step(backend: str, fused: bool, jit: bool, device: str | None, threads: int) -> Callable[[], Any]:
    import ember
    from custom_op import matmul_add_relu
    from ember import Float, Tensor
    from ember.autodiff import Autodiff

    B = ember.backend(backend, float_dtype="float32", threads=threads)
    dev = Autodiff(B).device(device) if device else Autodiff(B).device()
    x, w, b, g = (Tensor.from_data(a, dev, Float) for a in _arrays())
    fn = matmul_add_relu if fused else matmul_add_relu.default

    def step(x: Tensor, w: Tensor, b: Tensor, g: Tensor) -> Any:
        xs = [t.require_grad() for t in (x, w, b)]
        grads = fn(*xs).mul(g).sum().backward()
        return [t.grad(grads) for t in xs]

    if jit:
        import ember_jax

        step = ember_jax.jit(step)

    def sync(r: Any) -> Any:
        for t in r:
            p = t.primitive
            if hasattr(p, "block_until_ready"):
                p.block_until_ready()
            elif backend == "torch" and device and device.startswith("cuda"):
                import torch

                torch.cuda.synchronize()
                break
        return r

    return lambda: sync(step(x, w, b, g))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--round-s", type=float, default=0.3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--jit", action="store_true", help="also time the jax steps under ember_jax.jit")
    ap.add_argument("--device", default=None, help="torch device (e.g. cuda); numpy and jax use their default")
    args = ap.parse_args()
    cases: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {}
    for name in ("numpy", "torch", "jax"):
        if importlib.util.find_spec(name) is None:
            continue
        dev = args.device if name == "torch" else None
        cases[name] = (_step(name, False, False, dev, args.threads), _step(name, True, False, dev, args.threads))
        if name == "jax" and args.jit:
            t = args.threads
            cases["jax jit"] = (_step(name, False, True, None, t), _step(name, True, True, None, t))
    times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in cases}
    for comp, fused in cases.values():  # warm up (jax compiles)
        for _ in range(3):
            comp()
            fused()
    for _ in range(args.rounds):
        for k, (comp, fused) in cases.items():
            times[k][0].append(time_per_call(comp, args.round_s))
            times[k][1].append(time_per_call(fused, args.round_s))
    print(f"matmul_add_relu forward + backward, [{M}, {K}] x [{K}, {N}] + [1, {N}], float32, "
          f"{args.threads} thread(s), median of {args.rounds} rounds")
    print(f"{'backend':<10}{'composite ms':>14}{'fused ms':>10}{'ratio':>8}")
    for k, (c, f) in times.items():
        mc, mf = statistics.median(c) * 1e3, statistics.median(f) * 1e3
        print(f"{k:<10}{mc:>14.3f}{mf:>10.3f}{mc / mf:>7.2f}x")


if __name__ == "__main__":
    main()
