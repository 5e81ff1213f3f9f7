"""Headline benchmark: one training step (forward, backward, Adam) of the Burn guide's MNIST model at batch 64.

Contenders, all doing the same work (the guide's model with its three dropouts at p = 0.5, cross-entropy,
Adam with epsilon 1e-5, on one fixed batch of 64 real MNIST images):

- ``ember numpy``: ``Autodiff(ember.backend("numpy", threads=1))``, the guide example's setting;
- ``ember torch``: ``Autodiff(ember.backend("torch"))``;
- ``ember jax``: ``Autodiff(ember.backend("jax"))`` with the whole step compiled by ``ember_jax.jit`` (what the
  Learner does on this backend through ``backend.compile``); the learning rate is a Float tensor ``[1]``;
- ``ember jax (per-op)``: the same step eager, one jitted kernel per op (context: the cost of not compiling);
- ``raw torch eager``: ``bench/mnist_torch_reference.py`` (``nn.Module``, ``nn.Dropout``, ``torch.optim.Adam``);
- ``raw jax.jit``: the whole step as one ``jax.jit`` function in NCHW (threefry dropout masks, hand-written Adam,
  donated buffers): ``bench/_jax_reference.py``'s ``guide_step``, also timed by ``bench/jax_backend.py``.

Every Ember row runs the same function (``bench/_ember_steps.py``'s ``guide_train_step``: ``model.train_step``
then ``optim.step``). Every step ends with reading the loss on the host (a sync, as a training loop that logs
does). The first two steps of each contender (tracing and compilation for the jax rows: ``ember_jax.jit`` compiles
the first step once, its optimizer given Adam's initial state by ``optim.init_states(model)`` as the Learner does)
are timed on their own, shown as "first 2 steps", and left out of the step timing, as are the warm-up steps. Timing is
interleaved in one process (round-robin, several rounds; medians and the ratio to raw torch eager, the
figures to quote on this shared machine). Threads: 1 BLAS thread for Ember numpy (threadpoolctl, as in the
example); torch with 1 intra-op thread (``torch.set_num_threads``) for the baseline and Ember torch, since
torch's default 2 threads collapse when another process holds a core (shown as an extra row); jax with
its defaults. Peak RSS is
measured in a separate child process per contender (``--child NAME``), since in one process it only grows.
Epoch time = 938 steps (60,000 / 64) x the median step, training only.

    python bench/mnist_guide.py [--rounds 5] [--round-s 1.0] [--only numpy,torch] [--no-rss]

Not a test: nothing asserts on time.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from _rss import child_peak_mib, print_peak

HERE = Path(__file__).resolve().parent
BATCH = 64
STEPS_PER_EPOCH = -(-60000 // BATCH)  # 938
TARGETS = {"ember numpy": 0.9, "ember torch": 0.9, "ember jax": 1.3}


def _reference() -> Any:
    spec = importlib.util.spec_from_file_location("mnist_torch_reference", HERE / "mnist_torch_reference.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def random_batch() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    return rng.standard_normal((BATCH, 28, 28), dtype=np.float32), rng.integers(0, 10, BATCH)


def load_batch(data_dir: str | None) -> tuple[np.ndarray, np.ndarray]:
    """The first 64 training images (normalized float32 ``[64, 28, 28]``) and labels (int64 ``[64]``), or random
    data of the same shapes when no MNIST copy is found."""
    ref = _reference()  # imports torch
    for d in (data_dir, None, str(HERE.parent.parent / "shared" / "data" / "mnist")):
        directory = ref.mnist_dir(d)
        try:
            x, y = ref.load_split(directory, "train")
            return np.ascontiguousarray(x[:BATCH]), np.ascontiguousarray(y[:BATCH])
        except SystemExit:
            continue
    print("MNIST not found: random data", file=sys.stderr)
    return random_batch()


# ---------------------------------------------------------------------------------------------------- Ember
def ember_step(backend_name: str, images: np.ndarray, targets: np.ndarray, compiled: bool = False
               ) -> Callable[[], float]:
    """One Ember training step on ``Autodiff(backend_name)``; with ``compiled`` the step runs through
    ``ember_jax.jit`` (jax only) and the learning rate is a tensor."""
    sys.path.insert(0, str(HERE.parent / "examples"))
    import ember
    from _ember_steps import guide_train_step
    from ember import Int, Tensor
    from ember.autodiff import Autodiff
    from ember.optim import AdamConfig
    from guide import MnistBatch, ModelConfig  # type: ignore[import-not-found]

    backend = ember.backend("numpy", threads=1) if backend_name == "numpy" else ember.backend(backend_name)
    device = Autodiff(backend).device()
    backend.seed(42)
    state = {"model": ModelConfig(10, 512).init(device)}
    optim = AdamConfig().init()
    batch = MnistBatch(Tensor.from_data(images, device), Tensor.from_data(targets, device, Int))
    lr: Any = 1e-4
    fn = guide_train_step
    if compiled:
        import ember_jax

        fn = ember_jax.jit(guide_train_step)
        lr = Tensor.from_data(np.array([1e-4], np.float32), device.inner)
        optim.init_states(state["model"])  # as the Learner does: one trace, not two

    def step() -> float:
        state["model"], loss = fn(state["model"], optim, batch, lr)
        return float(loss.into_scalar())

    return step


# ---------------------------------------------------------------------------------------------------- raw torch
def torch_step(images: np.ndarray, targets: np.ndarray) -> Callable[[], float]:
    import torch

    ref = _reference()
    model, optim = ref.build_model(42)
    step = ref.make_step(model, optim)
    x, y = torch.from_numpy(images), torch.from_numpy(targets)
    return lambda: float(step(x, y).item())


# ---------------------------------------------------------------------------------------------------- raw jax.jit
def jax_step(images: np.ndarray, targets: np.ndarray) -> Callable[[], float]:
    from _jax_reference import guide_step

    step = guide_step(images, targets, dropout=0.5, lr=1e-4, seed=42)
    return lambda: float(step()[()])


# ---------------------------------------------------------------------------------------------------- harness
# name -> (library, torch intra-op threads or None, factory). The baseline is raw torch eager with one thread:
# on this loaded 2-core machine torch's default two threads collapse (see PERF-NOTES), so the one-thread run is
# the faster, stricter reference; the two-thread run is shown for information.
CONTENDERS: dict[str, tuple[str, int | None, Callable[[np.ndarray, np.ndarray], Callable[[], float]]]] = {
    "raw torch eager": ("torch", 1, lambda x, y: torch_step(x, y)),
    "raw torch eager, 2 threads": ("torch", 2, lambda x, y: torch_step(x, y)),
    "raw jax.jit": ("jax", None, lambda x, y: jax_step(x, y)),
    "ember numpy": ("numpy", None, lambda x, y: ember_step("numpy", x, y)),
    "ember torch": ("torch", 1, lambda x, y: ember_step("torch", x, y)),
    "ember jax": ("jax", None, lambda x, y: ember_step("jax", x, y, compiled=True)),
    "ember jax (per-op)": ("jax", None, lambda x, y: ember_step("jax", x, y)),
}


class _threads:
    """BLAS threads 1 for numpy contenders (the example's setting), else the machine's cores; torch intra-op
    threads as the contender says."""

    def __init__(self, name: str) -> None:
        self.kind, self.torch_threads, _ = CONTENDERS[name]

    def __enter__(self) -> None:
        from threadpoolctl import threadpool_limits

        self._limits = threadpool_limits(limits=1 if self.kind == "numpy" else os.cpu_count(), user_api="blas")
        if self.torch_threads is not None:
            import torch

            torch.set_num_threads(self.torch_threads)

    def __exit__(self, *exc: Any) -> None:
        self._limits.restore_original_limits()


def build(names: list[str], images: np.ndarray, targets: np.ndarray, warmup: int
          ) -> tuple[dict[str, Callable[[], float]], dict[str, float]]:
    """The step of each contender that loads, warmed up, and the seconds of its first two steps (for the jax rows
    they include tracing and compilation)."""
    steps: dict[str, Callable[[], float]] = {}
    first: dict[str, float] = {}
    for name in names:
        factory = CONTENDERS[name][2]
        try:
            with _threads(name):
                fn = factory(images, targets)
                start = time.perf_counter()
                losses = [fn(), fn()]
                first[name] = time.perf_counter() - start
                start = time.perf_counter()
                losses += [fn() for _ in range(warmup)]
            print(f"  {name}: ready (first 2 steps {first[name]:.2f} s, warm-up {time.perf_counter() - start:.1f} s, "
                  f"losses {', '.join(f'{v:.3f}' for v in losses)})", flush=True)
            steps[name] = fn
        except Exception as exc:  # a backend that does not load is reported, not fatal
            print(f"  {name}: unavailable ({type(exc).__name__}: {exc})", flush=True)
    return steps, first


def child(name: str, steps: int, data_dir: str | None) -> None:
    """Run ``steps`` steps of one contender and print its peak RSS (MiB) as JSON (random data of the batch's
    shapes: reading MNIST with the torch reference's loader would import torch into every child)."""
    images, targets = random_batch()
    with _threads(name):
        fn = CONTENDERS[name][2](images, targets)
        for _ in range(steps):
            fn()
    print_peak()


def peak_rss(name: str, steps: int, data_dir: str | None) -> float | None:
    args = ["--child", name, "--child-steps", str(steps)] + (["--data-dir", data_dir] if data_dir else [])
    return child_peak_mib(__file__, args)


def main() -> None:
    p = argparse.ArgumentParser(description="The guide's training step: Ember vs raw PyTorch and jax.jit.")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--round-s", type=float, default=1.0, help="target seconds per contender per round")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--only", default=None, help="comma-separated contender names (default all)")
    p.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child processes")
    p.add_argument("--data-dir", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-steps", type=int, default=10, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.child_steps, args.data_dir)
        return

    names = list(CONTENDERS) if not args.only else [n for n in CONTENDERS if any(o in n for o in args.only.split(","))]
    images, targets = load_batch(args.data_dir)
    print(f"guide step, batch {BATCH}: building {len(names)} contenders", flush=True)
    steps, first = build(names, images, targets, args.warmup)

    times: dict[str, list[float]] = {n: [] for n in steps}
    for r in range(args.rounds):
        for name, fn in steps.items():
            with _threads(name):
                start = time.perf_counter()
                n = 0
                while True:  # at least one step, then as many as fit in round_s
                    t0 = time.perf_counter()
                    fn()
                    times[name].append(time.perf_counter() - t0)
                    n += 1
                    if time.perf_counter() - start >= args.round_s:
                        break
        print(f"  round {r + 1}/{args.rounds} done", flush=True)

    rss = {}
    if not args.no_rss:
        for name in steps:
            rss[name] = peak_rss(name, 10, args.data_dir)

    base = statistics.median(times["raw torch eager"]) if "raw torch eager" in times else None
    print()
    print("| contender | ms / step (median) | samples/s | vs raw torch eager | target | epoch (938 steps) "
          "| first 2 steps | peak RSS | steps timed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        ratio = f"{base / med:.2f}x" if base else "-"
        target = f">= {TARGETS[name]}x" if name in TARGETS else ""
        mem = f"{rss[name]:.0f} MiB" if rss.get(name) else "-"
        print(f"| {name} | {med * 1e3:.1f} | {BATCH / med:.0f} | {ratio} | {target} | "
              f"{med * STEPS_PER_EPOCH:.0f} s | {first[name]:.2f} s | {mem} | {len(ts)} |")


if __name__ == "__main__":
    main()
