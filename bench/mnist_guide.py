"""Headline benchmark: one training step (forward, backward, Adam) of the Burn guide's MNIST model at batch 64.

Contenders, all doing the same work (the guide's model with its three dropouts at p = 0.5, cross-entropy,
Adam with epsilon 1e-5, on one fixed batch of 64 real MNIST images):

- ``ember numpy``: ``Autodiff(ember.backend("numpy", blas_threads=1))``, the guide example's setting;
- ``ember torch``: ``Autodiff(ember.backend("torch"))``;
- ``ember jax``: ``Autodiff(ember.backend("jax"))`` (eager: one jitted kernel per op; there is no compiled
  whole-step path yet), when the jax backend loads;
- ``raw torch eager``: ``bench/mnist_torch_reference.py`` (``nn.Module``, ``nn.Dropout``, ``torch.optim.Adam``);
- ``raw jax.jit``: the whole step as one ``jax.jit`` function (threefry dropout masks, hand-written Adam,
  donated buffers).

Every step ends with reading the loss on the host (a sync, as a training loop that logs does). Timing is
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
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

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
def ember_step(backend_name: str, images: np.ndarray, targets: np.ndarray) -> Callable[[], float]:
    sys.path.insert(0, str(HERE.parent / "examples"))
    import ember
    from ember import Int, Tensor
    from ember.autodiff import Autodiff
    from ember.optim import AdamConfig
    from guide import MnistBatch, ModelConfig

    backend = ember.backend("numpy", blas_threads=1) if backend_name == "numpy" else ember.backend(backend_name)
    device = Autodiff(backend).device()
    backend.seed(42)
    state = {"model": ModelConfig(10, 512).init(device)}
    optim = AdamConfig().init()
    batch = MnistBatch(Tensor.from_data(images, device), Tensor.from_data(targets, device, Int))

    def step() -> float:
        out = state["model"].train_step(batch)
        state["model"] = optim.step(1e-4, state["model"], out.grads)
        return float(out.item.loss.into_scalar())

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
    import jax
    import jax.numpy as jnp

    def uniform(key: Any, shape: tuple[int, ...], fan_in: int) -> Any:  # PyTorch's default init
        bound = 1.0 / np.sqrt(fan_in)
        return jax.random.uniform(key, shape, jnp.float32, -bound, bound)

    keys = jax.random.split(jax.random.PRNGKey(42), 9)
    params = {
        "w1": uniform(keys[0], (8, 1, 3, 3), 9), "b1": uniform(keys[1], (8,), 9),
        "w2": uniform(keys[2], (16, 8, 3, 3), 72), "b2": uniform(keys[3], (16,), 72),
        "l1": uniform(keys[4], (1024, 512), 1024), "c1": uniform(keys[5], (512,), 1024),
        "l2": uniform(keys[6], (512, 10), 512), "c2": uniform(keys[7], (10,), 512),
    }
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    opt = {"m": zeros, "v": jax.tree_util.tree_map(jnp.zeros_like, params), "t": jnp.zeros((), jnp.float32)}

    def conv(x: Any, w: Any, b: Any) -> Any:
        y = jax.lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return y + b[None, :, None, None]

    def dropout(x: Any, key: Any) -> Any:
        return jnp.where(jax.random.bernoulli(key, 0.5, x.shape), x * 2.0, 0.0)

    def loss_fn(p: Any, x: Any, y: Any, key: Any) -> Any:
        k1, k2, k3 = jax.random.split(key, 3)
        b = x.shape[0]
        h = x.reshape(b, 1, 28, 28)
        h = dropout(conv(h, p["w1"], p["b1"]), k1)
        h = jax.nn.relu(dropout(conv(h, p["w2"], p["b2"]), k2))
        h = h.reshape(b, 16, 8, 3, 8, 3).mean(axis=(3, 5)).reshape(b, 1024)  # adaptive pool 24 -> 8
        h = jax.nn.relu(dropout(h @ p["l1"] + p["c1"], k3))
        logits = h @ p["l2"] + p["c2"]
        logp = jax.nn.log_softmax(logits, axis=1)
        return -jnp.take_along_axis(logp, y[:, None], axis=1).mean()

    def train_step(p: Any, o: Any, key: Any, x: Any, y: Any) -> Any:
        key, sub = jax.random.split(key)
        loss, g = jax.value_and_grad(loss_fn)(p, x, y, sub)
        t = o["t"] + 1.0
        m = jax.tree_util.tree_map(lambda m, g: 0.9 * m + 0.1 * g, o["m"], g)
        v = jax.tree_util.tree_map(lambda v, g: 0.999 * v + 0.001 * g * g, o["v"], g)
        c1, c2 = 1.0 - 0.9 ** t, 1.0 - 0.999 ** t
        p = jax.tree_util.tree_map(lambda p, m, v: p - 1e-4 * (m / c1) / (jnp.sqrt(v / c2) + 1e-5), p, m, v)
        return p, {"m": m, "v": v, "t": t}, key, loss

    jitted = jax.jit(train_step, donate_argnums=(0, 1, 2))
    state = {"p": params, "o": opt, "k": keys[8]}
    x, y = jnp.asarray(images), jnp.asarray(targets.astype(np.int32))

    def step() -> float:
        state["p"], state["o"], state["k"], loss = jitted(state["p"], state["o"], state["k"], x, y)
        return float(loss)

    return step


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
    "ember jax": ("jax", None, lambda x, y: ember_step("jax", x, y)),
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


def build(names: list[str], images: np.ndarray, targets: np.ndarray, warmup: int) -> dict[str, Callable[[], float]]:
    steps: dict[str, Callable[[], float]] = {}
    for name in names:
        factory = CONTENDERS[name][2]
        try:
            with _threads(name):
                fn = factory(images, targets)
                start = time.perf_counter()
                losses = [fn() for _ in range(warmup)]
            print(f"  {name}: ready (warm-up {time.perf_counter() - start:.1f} s, losses "
                  f"{', '.join(f'{v:.3f}' for v in losses)})", flush=True)
            steps[name] = fn
        except Exception as exc:  # a backend that does not load is reported, not fatal
            print(f"  {name}: unavailable ({type(exc).__name__}: {exc})", flush=True)
    return steps


def child(name: str, steps: int, data_dir: str | None) -> None:
    """Run ``steps`` steps of one contender and print its peak RSS (MiB) as JSON (random data of the batch's
    shapes: reading MNIST with the torch reference's loader would import torch into every child)."""
    images, targets = random_batch()
    with _threads(name):
        fn = CONTENDERS[name][2](images, targets)
        for _ in range(steps):
            fn()
    # VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over from the parent across fork + exec
    hwm = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM"))
    print(json.dumps({"rss_mib": int(hwm.split()[1]) / 1024}))


def peak_rss(name: str, steps: int, data_dir: str | None) -> float | None:
    cmd = [sys.executable, __file__, "--child", name, "--child-steps", str(steps)]
    if data_dir:
        cmd += ["--data-dir", data_dir]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if run.returncode != 0:
        return None
    return float(json.loads(run.stdout.strip().splitlines()[-1])["rss_mib"])


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
    steps = build(names, images, targets, args.warmup)

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
          "| peak RSS | steps timed |")
    print("|---|---|---|---|---|---|---|---|")
    for name, ts in times.items():
        med = statistics.median(ts)
        ratio = f"{base / med:.2f}x" if base else "-"
        target = f">= {TARGETS[name]}x" if name in TARGETS else ""
        mem = f"{rss[name]:.0f} MiB" if rss.get(name) else "-"
        print(f"| {name} | {med * 1e3:.1f} | {BATCH / med:.0f} | {ratio} | {target} | "
              f"{med * STEPS_PER_EPOCH:.0f} s | {mem} | {len(ts)} |")


if __name__ == "__main__":
    main()
