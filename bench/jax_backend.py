"""Ember on the jax backend against raw jax, in one process (a benchmark, not a test).

Every case times the Ember version and the raw-jax version of the same work in interleaved rounds
(load from other processes hits both alike) and prints medians and the ratio
``ember time / raw time`` (1.00 = no overhead). Every call ends with ``block_until_ready`` so
that jax's asynchronous dispatch does not hide the work. Cases (issue 10):

- ``add 4x4`` float32, eager: Ember's per-op cost against raw ``a + b`` (jax's own eager path,
  about 10 µs here) and against a raw ``jax.jit(jnp.add)`` call. Ember's primitives are jitted
  kernels (``ember_jax._kernel``), so its figure can be *below* raw eager jax;
- ``add 1000x1000`` float32: bound by memory traffic; target within 1.05x;
- ``matmul 2048x2048`` float32: target within 1.05x of raw ``a @ b``;
- ``chain of 10 ops 64x64``: element-wise ops in a row, eager (each op is one dispatch).

The compiled training step (``ember_jax.jit``, the XOR MLP against raw ``jax.jit``) comes with the
next part of the issue.

Run: ``python bench/jax_backend.py [--quick]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

import ember
from ember import Tensor


def _per_call(fn: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e6:9.2f} µs" if seconds < 1e-3 else f"{seconds * 1e3:9.2f} ms"


def compare(name: str, ember_fn: Callable[[], object], raw: dict[str, Callable[[], object]], number: int,
            rounds: int, target: str = "") -> None:
    """Print the median seconds per call of each function (interleaved rounds) and the ratios."""
    fns = {"ember": ember_fn, **raw}
    for f in fns.values():  # warm-up: compilation, caches
        _per_call(f, max(2, number // 10))
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            samples[k].append(_per_call(f, number))
    med = {k: statistics.median(v) for k, v in samples.items()}
    cols = "  ".join(f"{k} {_fmt(v)}" for k, v in med.items())
    ratios = "  ".join(f"ember/{k} {med['ember'] / med[k]:.2f}" for k in raw)
    print(f"{name:<26} {cols}  {ratios}{'  (target ' + target + ')' if target else ''}")


def _pair(n: int, dev: ember.backend.Device) -> tuple[Tensor, Tensor, jax.Array, jax.Array]:
    rng = np.random.default_rng(0)
    a_np, b_np = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    ja, jb = jnp.asarray(a_np), jnp.asarray(b_np)
    return Tensor.from_data(a_np, dev), Tensor.from_data(b_np, dev), ja, jb


def bench_add(n: int, number: int, rounds: int, target: str) -> None:
    dev = ember.backend("jax").device()
    a, b, ja, jb = _pair(n, dev)
    jadd = jax.jit(jnp.add)
    np.testing.assert_allclose(np.asarray((a + b).primitive), np.asarray(ja + jb))
    compare(f"add {n}x{n} float32", lambda: (a + b).primitive.block_until_ready(),
            {"jax": lambda: (ja + jb).block_until_ready(), "jit(add)": lambda: jadd(ja, jb).block_until_ready()},
            number, rounds, target)


def bench_matmul(n: int, number: int, rounds: int) -> None:
    dev = ember.backend("jax").device()
    a, b, ja, jb = _pair(n, dev)
    np.testing.assert_allclose(np.asarray((a @ b).primitive), np.asarray(ja @ jb), rtol=1e-5)
    compare(f"matmul {n}x{n} float32", lambda: (a @ b).primitive.block_until_ready(),
            {"jax": lambda: (ja @ jb).block_until_ready()}, number, rounds, "1.05x")


def bench_chain(number: int, rounds: int) -> None:
    dev = ember.backend("jax").device()
    a, _, ja, _ = _pair(64, dev)

    def ember_chain() -> object:
        t = a
        for _ in range(2):
            t = ((t * 1.01 + 0.5).exp().log() - 0.25).abs()
        return t.primitive.block_until_ready()

    def raw_chain() -> object:
        t = ja
        for _ in range(2):
            t = jnp.abs(jnp.log(jnp.exp(t * 1.01 + 0.5)) - 0.25)
        return t.block_until_ready()

    np.testing.assert_allclose(np.asarray(ember_chain()), np.asarray(raw_chain()), rtol=1e-6)
    compare("chain of 10 ops 64x64", ember_chain, {"jax": raw_chain}, number, rounds)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    args = ap.parse_args()
    r = 3 if args.quick else 9
    print(f"jax {jax.__version__} on {jax.devices()[0]}; medians of {r} interleaved rounds")
    bench_add(4, 2000, r, "")
    bench_add(1000, 50, r, "1.05x")
    bench_matmul(2048, 3, r)
    bench_chain(300, r)


if __name__ == "__main__":
    main()
