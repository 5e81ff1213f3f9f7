"""Training speed on real models (issue 22): one step (forward, cross-entropy, backward, Adam) of four models,
Ember on each backend against raw PyTorch eager and raw ``jax.jit``, interleaved in one process.

Models (sizes in ``_models_ember.SPECS``; the same networks in ``_models_ember.py`` with Ember's layers,
``_models_torch.py`` in raw PyTorch, ``_models_jax.py`` in raw jax):

- ``resnet18``: torchvision's ResNet-18 (1000 classes, 11.7M parameters), batch 8, 3x64x64, BatchNorm training;
- ``transformer``: an encoder classifier, 2 post-norm layers, d_model 256, 8 heads, d_ff 1024, GELU, no dropout,
  sequence 128, batch 16, vocabulary 1000, mean over the sequence, 10 classes;
- ``lstm``: a language model, embedding 512, 2 LSTM layers of hidden 512, sequence 64, batch 32, vocabulary 1000,
  next-token cross-entropy at every position;
- ``guide``: the MNIST guide's CNN, batch 64, its three dropouts at p = 0.5 (``bench/mnist_guide.py``'s step).

Contenders: ``raw torch`` (``nn.Module``, ``torch.optim.Adam(foreach=True)``), ``ember torch``
(``Autodiff(torch)``), ``ember numpy`` (``Autodiff(numpy)``, 1 BLAS thread), ``raw jax.jit`` (the whole step one
jitted function, buffers donated; its weights are raw torch's, so its first loss equals raw torch's), ``ember jax``
(the step compiled by ``ember_jax.jit`` as the Learner compiles it: on an accelerator the model donated,
``donate_argnums=(0,), copy_donated=True``, one private copy at the first call, then updated in place; on the CPU
not donated), ``raw torch.compile``
(inductor on the forward and loss and on the optimizer step) and ``ember torch compiled`` (the whole step captured
by ``ember_torch.compile``, mode ``--torch-mode``, what the Learner runs on torch). Adam everywhere with lr 1e-4,
betas 0.9/0.999, eps 1e-5. Threads: torch 1 intra-op thread (``torch.set_num_threads(1)``) for raw torch and Ember
torch, 1 BLAS thread (threadpoolctl) for Ember numpy, jax its defaults (bench/README.md's conventions).

The eager contenders are timed per phase: forward (model and loss), backward (``loss.backward()``; Ember's also
``GradientsParams.from_grads``), update (the optimizer step; raw torch's also ``zero_grad``); the step is their
sum plus reading the loss on the host. Compiled steps are one program and have no split. Per model, every
contender first runs two steps (timed as "first 2", compilation for jax) and ``--warmup`` more; then ``--rounds``
rounds, each running each contender for ``--round-s`` seconds (at least one step) in turn. Medians; ratios are
raw torch's median over the contender's (higher is faster) and, for ``ember jax``, raw ``jax.jit``'s over it.

Peak RSS: each (model, contender) runs ``--rss-steps`` steps alone in a child process (``python bench/models.py
--child MODEL:CONTENDER``) that reports its ``VmHWM`` (``bench/_rss.py``); in one process the peak only grows.

    python bench/models.py [--models resnet18,lstm] [--only torch,numpy] [--rounds 5] [--round-s 2] [--no-rss]
                           [--device cuda] [--json out.json]

Not a test: nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _models_ember import SPECS, Spec, batch_data  # noqa: E402
from _rss import child_peak_mib, print_peak  # noqa: E402

#: a contender's step: ``(phases, step)``; ``phases`` are the eager ``(forward, backward, update)`` closures or
#: ``None`` for a compiled step, ``step()`` runs one whole step and returns the loss as a float
Step = tuple[tuple[Callable[[], Any], ...] | None, Callable[[], float]]

CONTENDERS = ("raw torch", "ember torch", "ember numpy", "raw jax.jit", "ember jax", "raw torch.compile",
              "ember torch compiled")
TARGETS = {"ember torch": 0.95, "ember numpy": {"resnet18": 0.6, "transformer": 0.6, "lstm": 0.9, "guide": 0.9}}
JAX_TARGET = 0.95
#: issue 32: Ember torch compiled against raw torch.compile of the same model
TORCH_COMPILE_TARGET = 0.95
#: ``--host-bound`` (issue 32): sizes where the host, not the arithmetic, bounds a step on this CPU (a proxy for a
#: GPU, where every step of the models above is host-bound); targets: Ember torch compiled >= 1.5x raw torch eager
#: and >= 0.9x raw torch.compile
HOST_BOUND = {
    "guide": Spec(4, {"classes": 10, "hidden": 512}),
    "resnet18": Spec(2, {"classes": 10, "size": 32}),
    "transformer": Spec(4, {"vocab": 1000, "seq": 16, "d_model": 64, "heads": 4, "d_ff": 128, "layers": 2,
                            "classes": 10}),
}
HOST_BOUND_TARGETS = (1.5, 0.9)
#: ``ember_torch.compile``'s mode for "ember torch compiled" (``--torch-mode``; None: the device's default)
TORCH_MODE: list[str | None] = [None]


def _sync_torch(device: str) -> Callable[[], None]:
    import torch

    return torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)


def _eager(forward: Callable[[], Any], backward: Callable[[], None], update: Callable[[], None],
           sync: Callable[[], None]) -> Step:
    """The phases of an eager step, each followed by ``sync`` (a CUDA device synchronization, else nothing), and
    the whole step reading the loss on the host."""
    def phase(fn: Callable[[], Any]) -> Callable[[], Any]:
        def run() -> Any:
            out = fn()
            sync()
            return out
        return run

    phases = (phase(forward), phase(backward), phase(update))

    def step() -> float:
        loss = phases[0]()
        phases[1]()
        phases[2]()
        return _host(loss)

    return phases, step


def _host(loss: Any) -> float:
    """A loss (Ember tensor or torch tensor) read on the host."""
    return float(loss.into_scalar() if hasattr(loss, "into_scalar") else loss.detach())


def raw_torch(model: str, device: str) -> Step:
    from _models_torch import phases

    x, y = batch_data(model)
    forward, backward, update = phases(model, x, y, device)
    return _eager(forward, backward, update, _sync_torch(device))


def ember(backend_name: str, model: str, device: str) -> Step:
    import ember
    from _models_ember import build, inputs, loss_of
    from ember.autodiff import Autodiff
    from ember.optim import AdamConfig, GradientsParams

    backend = ember.backend("numpy", threads=1) if backend_name == "numpy" else ember.backend(backend_name)
    dev = Autodiff(backend).device(device if backend_name == "torch" else None)
    backend.seed(42)
    state: dict[str, Any] = {"model": build(model, dev)}
    optim = AdamConfig().init()
    x, y = inputs(model, dev)

    def forward() -> Any:
        state["loss"] = loss_of(state["model"], x, y)
        return state["loss"]

    def backward() -> None:
        state["grads"] = GradientsParams.from_grads(state.pop("loss").backward(), state["model"])

    def update() -> None:
        state["model"] = optim.step(1e-4, state["model"], state.pop("grads"))

    return _eager(forward, backward, update, _sync_torch(device) if backend_name == "torch" else (lambda: None))


#: Ember jax's step donates the model: None = as the Learner (on accelerators, not on the CPU), True / False forced
#: (``jax_programs.py --donate`` compares the programs the Learner runs on a GPU, on the CPU)
JAX_DONATE: bool | None = None


def ember_jax(model: str, device: str) -> Step:
    import numpy as np

    import ember
    import ember_jax
    from _models_ember import build, inputs, train_step
    from ember import Tensor
    from ember.autodiff import Autodiff
    from ember.optim import AdamConfig

    backend = ember.backend("jax")
    dev = Autodiff(backend).device()
    backend.seed(42)
    state = {"model": build(model, dev)}
    optim = AdamConfig().init()
    optim.init_states(state["model"])  # one trace, as the Learner does
    batch = inputs(model, dev)
    lr = Tensor.from_data(np.array([1e-4], np.float32), dev.inner)
    # the Learner's step: the model donated (a private copy) on an accelerator, not on the CPU (see its donates_on)
    on = not dev.inner.name.startswith("cpu") if JAX_DONATE is None else JAX_DONATE
    donate = {"donate_argnums": (0,), "copy_donated": True} if on else {}
    fn = ember_jax.jit(train_step, **donate)

    def step() -> float:
        state["model"], loss = fn(state["model"], optim, batch, lr)
        return float(loss.into_scalar())

    return None, step


def ember_torch_compiled(model: str, device: str) -> Step:
    """The step captured by ``ember_torch.compile`` (what the Learner runs on torch), mode ``--torch-mode``."""
    import numpy as np

    import ember
    import ember_torch
    from _models_ember import build, inputs, train_step
    from ember import Tensor
    from ember.autodiff import Autodiff
    from ember.optim import AdamConfig

    backend = ember.backend("torch")
    dev = Autodiff(backend).device(device)
    backend.seed(42)
    state = {"model": build(model, dev)}
    optim = AdamConfig().init()
    optim.init_states(state["model"])  # one capture, as the Learner does
    batch = inputs(model, dev)
    lr = Tensor.from_data(np.array([1e-4], np.float32), dev.inner)
    fn = ember_torch.compile(train_step, mode=TORCH_MODE[0])
    sync = _sync_torch(device)

    def step() -> float:
        state["model"], loss = fn(state["model"], optim, batch, lr)
        sync()
        return float(loss.into_scalar())

    return None, step


def raw_torch_compile(model: str, device: str) -> Step:
    """Raw PyTorch with ``torch.compile`` (inductor, default mode) of the forward and loss and of the optimizer
    step (PyTorch's recipe: the backward runs through the compiled forward's AOT backward graph)."""
    import torch
    from torch import nn

    from _models_torch import build

    x, y = batch_data(model)
    m = build(model).to(device)
    m.train()
    optim = torch.optim.Adam(m.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-5, foreach=True)
    xt, yt = torch.from_numpy(x).to(device), torch.from_numpy(y.reshape(-1)).to(device)
    loss_fn = nn.CrossEntropyLoss()
    forward = torch.compile(lambda a, b: loss_fn(m(a), b))
    opt_step = torch.compile(optim.step)
    sync = _sync_torch(device)

    def step() -> float:
        loss = forward(xt, yt)
        loss.backward()
        opt_step()
        optim.zero_grad(set_to_none=True)
        sync()
        return float(loss.detach())

    return None, step


def raw_jax(model: str, device: str) -> Step:
    from _models_jax import step as jax_step
    from _models_torch import build

    x, y = batch_data(model)
    state_dict = {k: v.detach().numpy().copy() for k, v in build(model).state_dict().items()}
    run = jax_step(model, state_dict, x, y)
    return None, lambda: float(run())


FACTORIES: dict[str, Callable[[str, str], Step]] = {
    "raw torch": raw_torch,
    "ember torch": lambda m, d: ember("torch", m, d),
    "ember numpy": lambda m, d: ember("numpy", m, d),
    "raw jax.jit": raw_jax,
    "ember jax": ember_jax,
    "raw torch.compile": raw_torch_compile,
    "ember torch compiled": ember_torch_compiled,
}


class Threads:
    """1 BLAS thread for Ember numpy, 1 torch intra-op thread for the torch contenders (bench/README.md)."""

    def __init__(self, name: str, torch_threads: int) -> None:
        self.name, self.torch_threads = name, torch_threads

    def __enter__(self) -> None:
        from threadpoolctl import threadpool_limits

        self._limits = threadpool_limits(limits=1, user_api="blas") if self.name == "ember numpy" else None
        if "torch" in self.name:
            import torch

            torch.set_num_threads(self.torch_threads)

    def __exit__(self, *exc: Any) -> None:
        if self._limits is not None:
            self._limits.restore_original_limits()


# ---------------------------------------------------------------------------------------------------- timing
class Result:
    """The timings of one contender on one model (seconds)."""

    def __init__(self, first: float) -> None:
        self.first = first
        self.steps: list[float] = []
        self.phases: list[list[float]] = [[], [], []]
        self.rss: float | None = None

    def row(self) -> dict[str, Any]:
        med = statistics.median(self.steps)
        split = [statistics.median(p) if p else None for p in self.phases]
        return {"ms": med * 1e3, "phases_ms": [s * 1e3 if s is not None else None for s in split],
                "first_s": self.first, "steps": len(self.steps), "rss_mib": self.rss}


def timed_step(phases: tuple[Callable[[], Any], ...] | None, step: Callable[[], float], res: Result) -> None:
    if phases is None:
        t0 = time.perf_counter()
        step()
        res.steps.append(time.perf_counter() - t0)
        return
    fwd, bwd, upd = phases
    t0 = time.perf_counter()
    loss = fwd()
    t1 = time.perf_counter()
    bwd()
    t2 = time.perf_counter()
    upd()
    t3 = time.perf_counter()
    _host(loss)
    t4 = time.perf_counter()
    res.steps.append(t4 - t0)
    for i, dt in enumerate((t1 - t0, t2 - t1, t3 - t2)):
        res.phases[i].append(dt)


def run_model(model: str, names: list[str], args: argparse.Namespace) -> dict[str, Result]:
    steps: dict[str, Step] = {}
    results: dict[str, Result] = {}
    for name in names:
        try:
            with Threads(name, args.threads):
                st = FACTORIES[name](model, args.device)
                t0 = time.perf_counter()
                losses = [st[1](), st[1]()]
                first = time.perf_counter() - t0
                losses += [st[1]() for _ in range(args.warmup)]
        except Exception as exc:  # a contender that does not load is reported, not fatal
            print(f"  {model} / {name}: unavailable ({type(exc).__name__}: {exc})", flush=True)
            continue
        print(f"  {model} / {name}: ready (first 2 steps {first:.2f} s; losses "
              f"{', '.join(f'{v:.4f}' for v in losses)})", flush=True)
        steps[name], results[name] = st, Result(first)
    for r in range(args.rounds):
        for name, (phases, step) in steps.items():
            with Threads(name, args.threads):
                start = time.perf_counter()
                while True:
                    timed_step(phases, step, results[name])
                    if time.perf_counter() - start >= args.round_s:
                        break
        print(f"  {model}: round {r + 1}/{args.rounds} done", flush=True)
    if not args.no_rss:
        for name, res in results.items():
            extra = ["--device", args.device, "--threads", str(args.threads)]
            if args.torch_mode:
                extra += ["--torch-mode", args.torch_mode]
            if args.host_bound:
                extra.append("--host-bound")
            res.rss = child_peak_mib(__file__, ["--child", f"{model}:{name}", "--rss-steps", str(args.rss_steps),
                                                *extra])
    return results


def _fmt(v: float | None, spec: str = ".1f", unit: str = "") -> str:
    return "-" if v is None else f"{v:{spec}}{unit}"


def table(model: str, results: dict[str, Result]) -> list[str]:
    rows = {n: r.row() for n, r in results.items()}
    base = rows.get("raw torch")
    jbase = rows.get("raw jax.jit")
    cbase = rows.get("raw torch.compile")
    s = SPECS[model]
    out = [f"### {model} (batch {s.batch})", "",
           "| contender | ms / step | vs raw torch | vs raw jax.jit / torch.compile | target | forward | backward "
           "| update "
           "| update vs raw torch | first 2 steps | peak RSS | steps |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, row in rows.items():
        vs_t = f"{base['ms'] / row['ms']:.2f}x" if base else "-"
        vs_j = f"{jbase['ms'] / row['ms']:.2f}x" if jbase and "jax" in name else ""
        if cbase and name == "ember torch compiled":
            vs_j = f"{cbase['ms'] / row['ms']:.2f}x"
        tgt = TARGETS.get(name)
        target = f">= {tgt[model] if isinstance(tgt, dict) else tgt}x" if tgt else ""
        if name == "ember jax":
            target = f">= {JAX_TARGET}x raw jax.jit"
        if name == "ember torch compiled":
            target = f">= {TORCH_COMPILE_TARGET}x raw torch.compile"
            if SPECS[model] is HOST_BOUND.get(model):
                target = f">= {HOST_BOUND_TARGETS[0]}x raw torch, >= {HOST_BOUND_TARGETS[1]}x raw torch.compile"
        f, b, u = row["phases_ms"]
        upd_ratio = "-"
        if base and u is not None and base["phases_ms"][2] and name != "raw torch":
            upd_ratio = f"{u / base['phases_ms'][2]:.2f}x"
        out.append(f"| {name} | {row['ms']:.1f} | {vs_t} | {vs_j} | {target} | {_fmt(f)} | {_fmt(b)} | {_fmt(u)} | "
                   f"{upd_ratio} | {row['first_s']:.2f} s | {_fmt(row['rss_mib'], '.0f', ' MiB')} | {row['steps']} |")
    return out


def child(spec: str, args: argparse.Namespace) -> None:
    model, name = spec.split(":", 1)
    with Threads(name, args.threads):
        _, step = FACTORIES[name](model, args.device)
        for _ in range(args.rss_steps):
            step()
    print_peak()


def main() -> None:
    p = argparse.ArgumentParser(description="Training steps of ResNet-18, a Transformer, an LSTM LM and the guide "
                                            "CNN: Ember vs raw PyTorch and raw jax.jit.")
    p.add_argument("--models", default=",".join(SPECS), help=f"comma-separated, of {', '.join(SPECS)}")
    p.add_argument("--only", default=None, help="contenders whose name contains one of these (comma-separated)")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    p.add_argument("--round-s", type=float, default=2.0, help="seconds per contender per round (default 2)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    p.add_argument("--device", default="cpu", help="torch device for the torch contenders (cpu, cuda)")
    p.add_argument("--host-bound", action="store_true",
                   help="the host-bound sizes (guide batch 4, ResNet-18 batch 2 at 32x32, Transformer seq 16)")
    p.add_argument("--torch-mode", default=None, help="ember_torch.compile mode of 'ember torch compiled' (capture, "
                                                      "default, reduce-overhead ...; default: the device's)")
    p.add_argument("--no-rss", action="store_true", help="skip the peak-RSS child processes")
    p.add_argument("--rss-steps", type=int, default=5)
    p.add_argument("--json", default=None, help="also write the results to this JSON file")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    TORCH_MODE[0] = args.torch_mode
    if args.host_bound:
        SPECS.update(HOST_BOUND)
        if args.models == p.get_default("models"):
            args.models = ",".join(HOST_BOUND)
    if args.child:
        child(args.child, args)
        return
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in SPECS]
    if unknown:
        p.error(f"unknown model(s) {unknown}; choose from {list(SPECS)}")
    names = [n for n in CONTENDERS if not args.only or any(o in n for o in args.only.split(","))]
    if "raw torch" not in names:
        names.insert(0, "raw torch")  # the baseline of every ratio
    lines: list[str] = []
    dump: dict[str, Any] = {}
    for model in models:
        print(f"{model}: building {len(names)} contenders", flush=True)
        results = run_model(model, names, args)
        lines += table(model, results) + [""]
        dump[model] = {n: r.row() for n, r in results.items()}
    print()
    print("\n".join(lines))
    if args.json:
        Path(args.json).write_text(json.dumps(dump, indent=1))


if __name__ == "__main__":
    main()
