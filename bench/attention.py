"""The attention primitive (issue 22): forward + backward of scaled dot-product attention at the Transformer
benchmark's shape (``[16, 8, 128, 32]``, float32), interleaved in one process.

All contenders differentiate ``sum(out * grad)`` for a fixed random ``grad``. Contenders: ``raw torch``
(``F.scaled_dot_product_attention`` and ``torch.autograd.grad``, 1 intra-op thread),
``raw torch composite`` (matmul, softmax, matmul under autograd: what Ember ran before the primitive), ``ember
torch`` and ``ember numpy`` (``Autodiff`` over the backend,
:func:`ember.tensor.functional.scaled_dot_product_attention`,
1 BLAS thread for numpy) and ``ember numpy composite`` (the contract's default, which every backend without a
kernel runs). q, k and v are head views of ``[batch, seq, heads * d]`` arrays, as in
:class:`~ember.nn.MultiHeadAttention`. Medians of ``--rounds`` rounds of ``--round-s`` seconds each; ratios are raw
torch's median over the contender's. ``--device cuda`` runs the torch contenders on CUDA (numpy ones are skipped).

    python bench/attention.py [--rounds 5] [--round-s 0.5] [--device cuda] [--mask]

Not a test: nothing asserts on time.
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

B_, H, S, D = 16, 8, 128, 32


def _arrays(seed: int = 0) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = [rng.standard_normal((B_, S, H * D)).astype(np.float32) for _ in range(3)]
    return x, rng.standard_normal((B_, H, S, D)).astype(np.float32), rng.random((B_, 1, S, S)) < 0.2


def raw_torch(device: str, composite: bool, masked: bool) -> Callable[[], Any]:
    import torch
    import torch.nn.functional as F  # noqa: N812

    xs, g, m = _arrays()
    # torch-allocated (64-byte aligned) copies, as Ember's tensors: numpy's 16-byte alignment slows the kernels
    x = [torch.from_numpy(a).to(device).clone() for a in xs]
    grad = torch.from_numpy(g).to(device).clone()
    mask = torch.from_numpy(m).to(device).clone() if masked else None
    scale = 1.0 / math.sqrt(D)

    def step() -> Any:
        leaves = [a.detach().requires_grad_() for a in x]
        q, k, v = (a.view(B_, S, H, D).transpose(1, 2) for a in leaves)
        if composite or mask is not None:
            s = (q @ k.transpose(2, 3)) * scale
            if mask is not None:
                s = s.masked_fill(mask, -1e4)
            out = torch.softmax(s, 3) @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v, scale=scale)
        r = torch.autograd.grad((out * grad).sum(), leaves)  # the same loss as Ember's contenders
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return r

    return step


def ember_step(backend: str, device: str, composite: bool, masked: bool) -> Callable[[], Any]:
    import ember
    from ember import Tensor
    from ember.autodiff import Autodiff
    from ember.backend._ops_attention import AttentionOps
    from ember.tensor import functional as M

    inner = ember.backend("numpy", threads=1) if backend == "numpy" else ember.backend(backend)
    if composite:  # the contract's default in place of the backend's kernel, on a copy (backends are shared)
        inner = copy.copy(inner)
        inner.attention = AttentionOps.attention.__get__(inner)  # type: ignore[method-assign]
        inner.attention_backward = AttentionOps.attention_backward.__get__(inner)  # type: ignore[method-assign]
    dev = Autodiff(inner).device(device if backend == "torch" else None)
    xs, g, m = _arrays()
    x = [Tensor.from_data(a, dev) for a in xs]
    grad = Tensor.from_data(g, dev)
    mask = Tensor.from_data(m, dev) if masked else None

    def step() -> Any:
        leaves = [a.require_grad() for a in x]
        q, k, v = (a.reshape([B_, S, H, D]).swap_dims(1, 2) for a in leaves)
        out = M.scaled_dot_product_attention(q, k, v, mask)
        grads = (out * grad).sum().backward()
        r = [a.grad(grads) for a in leaves]
        if backend == "torch" and device.startswith("cuda"):
            import torch

            torch.cuda.synchronize()
        return r

    return step


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--round-s", type=float, default=0.5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--mask", action="store_true", help="a Bool padding-style mask (torch's kernel then composite)")
    args = p.parse_args()
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(1)
    threadpool_limits(limits=1, user_api="blas")
    makers: dict[str, Callable[[], Callable[[], Any]]] = {
        "raw torch": lambda: raw_torch(args.device, False, args.mask),
        "raw torch composite": lambda: raw_torch(args.device, True, args.mask),
        "ember torch": lambda: ember_step("torch", args.device, False, args.mask),
        "ember torch composite": lambda: ember_step("torch", args.device, True, args.mask),
    }
    if args.device == "cpu":
        makers["ember numpy"] = lambda: ember_step("numpy", args.device, False, args.mask)
        makers["ember numpy composite"] = lambda: ember_step("numpy", args.device, True, args.mask)
    steps = {name: make() for name, make in makers.items()}
    for step in steps.values():
        step()
        step()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            while True:
                t0 = time.perf_counter()
                step()
                times[name].append(time.perf_counter() - t0)
                if time.perf_counter() - start >= args.round_s:
                    break
    base = statistics.median(times["raw torch"])
    print(f"attention forward + backward, [{B_}, {H}, {S}, {D}] float32, {args.device}"
          f"{', masked' if args.mask else ''}\n")
    print("| contender | ms | vs raw torch | steps |\n|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med * 1e3:.2f} | {base / med:.2f}x | {len(ts)} |")


if __name__ == "__main__":
    main()
