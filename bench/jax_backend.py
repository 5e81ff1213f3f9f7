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
- ``chain of 10 ops 64x64``: element-wise ops in a row, eager (each op is one dispatch);
- ``xor step``: the XOR MLP 2-16-16-2 (``bench/autodiff.py``'s model, data and loss), batch 32, Adam, as one
  training step (forward, ``loss.backward()``, ``GradientsParams.from_grads``, ``optim.step``) on
  ``Autodiff(jax)`` compiled with ``ember_jax.jit``, against the same step as a raw ``jax.jit`` function
  (``value_and_grad`` + hand-written Adam, ``_jax_reference.xor_step``). Target: at least 0.5x raw steps/s.
  The eager (per-op) Ember step is shown for context;
- ``guide step``: the MNIST guide's training step (``examples/guide``, batch 64, three dropouts at 0.5,
  cross-entropy, Adam) compiled with ``ember_jax.jit`` against the raw ``jax.jit`` NCHW step
  (``_jax_reference.guide_step``, also ``mnist_guide.py``'s). Target: at least 0.8x raw steps/s.

Before timing, each compiled case checks that both sides compute the same thing: the same loss trajectory
over several steps from the same initial parameters (dropout off for the guide; tolerances at ``XOR_CHECK`` /
``GUIDE_CHECK``). The first call of a fresh compiled step (trace + compile + one step) is printed separately and
is not part of the timing, nor are the warm-up calls (``ember_jax.jit`` traces twice: the first step, whose
optimizer state is empty, and the steady one). The speed ratios are Ember's steps/s over raw steps/s (medians;
the fastest rounds' ratio in brackets). Ember steps block on the ``primitive`` of the returned loss's inner
tensor, raw steps on the returned loss.

Run: ``python bench/jax_backend.py [--quick] [-k TEXT]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import ember
from ember import Int, Tensor
from ember.autodiff import Autodiff
from ember.backend import Device
from ember.optim import AdamConfig

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _jax_reference as ref  # noqa: E402
from _ember_steps import guide_train_step, xor_model, xor_train_step  # noqa: E402

XOR_LR = 1e-2
GUIDE_LR = 1e-4
#: relative tolerances of the loss trajectories compared before timing. The XOR runs drift apart by float32
#: rounding (Adam's bias corrections are computed differently on the two sides) and Adam's nearly sign-like
#: first steps amplify it: ~3e-5 after 8 steps, ~6e-4 after 20. The guide agrees to ~2e-7 over 8 steps; a 10%
#: different learning rate moves it by 2.5e-3, epsilon 1e-8 instead of 1e-5 by 8e-4
XOR_CHECK = (8, 1e-4)
GUIDE_CHECK = (8, 1e-5)


def _per_call(fn: Callable[[], object], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e6:9.2f} µs" if seconds < 1e-3 else f"{seconds * 1e3:9.2f} ms"


def compare(name: str, ember_fn: Callable[[], object], raw: dict[str, Callable[[], object]], number: int,
            rounds: int, target: str = "", speed: bool = False) -> dict[str, float]:
    """Print the median seconds per call of each function (interleaved rounds) and the ratios; return the medians.

    The ratio is ``ember time / raw time`` (1.00 = no overhead), or with ``speed`` Ember's steps/s over the raw
    steps/s (``raw time / ember time``: 1.00 = as fast, 0.50 = half the throughput), with the fastest-round ratio
    in brackets (steadier when other processes load the machine).
    """
    fns = {"ember": ember_fn, **raw}
    for f in fns.values():  # warm-up: compilation, caches
        _per_call(f, max(2, number // 10))
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            samples[k].append(_per_call(f, number))
    med = {k: statistics.median(v) for k, v in samples.items()}
    best = {k: min(v) for k, v in samples.items()}
    cols = "  ".join(f"{k} {_fmt(v)}" for k, v in med.items())
    if speed:
        ratios = "  ".join(f"speed vs {k} {med[k] / med['ember']:.2f}x [{best[k] / best['ember']:.2f}x]" for k in raw)
    else:
        ratios = "  ".join(f"ember/{k} {med['ember'] / med[k]:.2f}" for k in raw)
    print(f"{name:<26} {cols}  {ratios}{'  (target ' + target + ')' if target else ''}", flush=True)
    return med


def _pair(n: int, dev: Device) -> tuple[Tensor, Tensor, jax.Array, jax.Array]:
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


# ---------------------------------------------------------------------------------------------------- training steps
def _jit() -> Any:
    """``ember_jax.jit``, or None (with a note) while the jax backend has no compiled step."""
    import ember_jax

    jit = getattr(ember_jax, "jit", None)
    if jit is None:
        print("  (ember_jax.jit is not available: compiled Ember steps skipped)", flush=True)
    return jit


def _lr(value: float, dev: Any) -> Tensor:
    """The learning rate as a Float tensor of shape [1] on the inner device (a dynamic value under jit)."""
    return Tensor.from_data(np.array([value], np.float32), dev.inner if hasattr(dev, "inner") else dev)


class EmberStep:
    """An Ember training step ``fn(model, optim, batch, lr) -> (model, loss)`` carried from call to call; each
    call returns the loss's jax array (not synchronized)."""

    def __init__(self, fn: Callable[..., Any], model: Any, optim: Any, batch: Any, lr: Any) -> None:
        self.fn, self.model, self.optim, self.batch, self.lr = fn, model, optim, batch, lr
        if not isinstance(lr, float):  # compiled: start from Adam's initial state, as the Learner does (one trace)
            optim.init_states(model)

    def __call__(self) -> jax.Array:
        self.model, loss = self.fn(self.model, self.optim, self.batch, self.lr)
        return loss.inner().primitive  # type: ignore[no-any-return]


def _losses(step: Callable[[], Any], n: int) -> np.ndarray:
    return np.array([np.asarray(step()).item() for _ in range(n)])


def _first_call(step: Callable[[], Any]) -> float:
    """Seconds of the first call of a fresh compiled step: tracing, compilation and one run (the compile time,
    reported apart; the steady per-step time is a small part of it)."""
    t0 = time.perf_counter()
    jax.block_until_ready(step())
    return time.perf_counter() - t0


def bench_xor(number: int, rounds: int) -> None:
    from autodiff import data  # bench/autodiff.py: the XOR data and initial weights

    x, y, params = data()
    dev = Autodiff(ember.backend("jax")).device()
    batch = (Tensor.from_data(x, dev), Tensor.from_data(y, dev, Int))

    def ember_step(fn: Callable[..., Any], lr: Any) -> EmberStep:
        return EmberStep(fn, xor_model(params, dev), AdamConfig().init(), batch, lr)

    steps, rtol = XOR_CHECK
    raw_losses = _losses(ref.xor_step(params, x, y, XOR_LR), steps)
    eager_losses = _losses(ember_step(xor_train_step, XOR_LR), steps)
    np.testing.assert_allclose(eager_losses, raw_losses, rtol=rtol)
    eager, raw = ember_step(xor_train_step, XOR_LR), ref.xor_step(params, x, y, XOR_LR)
    jit = _jit()
    if jit is not None:
        lr = _lr(XOR_LR, dev)
        check_fn = jit(xor_train_step)
        np.testing.assert_allclose(_losses(ember_step(check_fn, lr), steps), raw_losses, rtol=rtol)
        compiled_fn = jit(xor_train_step)
        compiled = ember_step(compiled_fn, lr)
        compile_s, raw_compile_s = _first_call(compiled), _first_call(raw)
        print(f"xor step: same {steps}-step loss trajectory as raw jax.jit (eager and compiled); first call "
              f"(trace + compile + 1 step): ember_jax.jit {compile_s * 1e3:.0f} ms, raw jax.jit "
              f"{raw_compile_s * 1e3:.0f} ms", flush=True)
        compare("xor step (ember_jax.jit)", lambda: compiled().block_until_ready(),
                {"jax.jit": lambda: raw().block_until_ready()}, number, rounds, ">= 0.5x", speed=True)
        print(f"  ember_jax.jit traced the step {compiled_fn.trace_count} time(s)", flush=True)
    else:
        print(f"xor step: eager Ember gives the same {steps}-step loss trajectory as raw jax.jit", flush=True)
    compare("xor step (eager, per-op)", lambda: eager().block_until_ready(),
            {"jax.jit": lambda: raw().block_until_ready()}, max(5, number // 200), rounds, speed=True)


def _guide_model(dev: Any, dropout: float) -> Any:
    sys.path.insert(0, str(HERE.parent / "examples"))
    from guide import ModelConfig  # type: ignore[import-not-found]

    dev.backend.seed(42)
    return ModelConfig(10, 512, dropout=dropout).init(dev)


def bench_guide(number: int, rounds: int) -> None:
    sys.path.insert(0, str(HERE.parent / "examples"))
    from guide import MnistBatch  # type: ignore[import-not-found]

    jit = _jit()
    if jit is None:
        return
    rng = np.random.default_rng(0)
    images, targets = rng.standard_normal((64, 28, 28), dtype=np.float32), rng.integers(0, 10, 64)
    dev = Autodiff(ember.backend("jax")).device()
    batch = MnistBatch(Tensor.from_data(images, dev), Tensor.from_data(targets, dev, Int))
    lr = _lr(GUIDE_LR, dev)

    def ember_step(fn: Callable[..., Any], dropout: float) -> EmberStep:
        return EmberStep(fn, _guide_model(dev, dropout), AdamConfig().init(), batch, lr)

    # same work: dropout off, the raw step starting from the Ember model's initial parameters
    steps, rtol = GUIDE_CHECK
    model = _guide_model(dev, 0.0)
    raw_losses = _losses(ref.guide_step(images, targets, ref.guide_params_from_module(model), 0.0, GUIDE_LR), steps)
    np.testing.assert_allclose(_losses(ember_step(jit(guide_train_step), 0.0), steps), raw_losses, rtol=rtol)
    compiled_fn = jit(guide_train_step)
    compiled = ember_step(compiled_fn, 0.5)
    raw = ref.guide_step(images, targets, dropout=0.5, lr=GUIDE_LR)
    compile_s, raw_compile_s = _first_call(compiled), _first_call(raw)
    print(f"guide step: same {steps}-step loss trajectory as raw jax.jit with dropout off; first call (trace + "
          f"compile + 1 step): ember_jax.jit {compile_s:.2f} s, raw jax.jit {raw_compile_s:.2f} s", flush=True)
    compare("guide step (ember_jax.jit)", lambda: compiled().block_until_ready(),
            {"jax.jit NCHW": lambda: raw().block_until_ready()}, number, rounds, ">= 0.8x", speed=True)
    print(f"  ember_jax.jit traced the step {compiled_fn.trace_count} time(s)", flush=True)


CASES: dict[str, Callable[[int], None]] = {
    "add 4x4": lambda r: bench_add(4, 2000, r, ""),
    "add 1000x1000": lambda r: bench_add(1000, 50, r, "1.05x"),
    "matmul 2048": lambda r: bench_matmul(2048, 3, r),
    "chain": lambda r: bench_chain(300, r),
    "xor step": lambda r: bench_xor(1000, r),
    "guide step": lambda r: bench_guide(10, r),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    ap.add_argument("-k", default="", help="only cases whose name contains this text")
    args = ap.parse_args()
    r = 3 if args.quick else 9
    print(f"jax {jax.__version__} on {jax.devices()[0]}; medians of {r} interleaved rounds")
    for name, case in CASES.items():
        if args.k in name:
            case(r)


if __name__ == "__main__":
    main()
