"""Data-parallel training: the MNIST guide's training step with 1 and 2 processes, on each backend.

Each process (a rank started by ``python -m ember_train.launch``) runs what the Learner's
``DistributedDataParallel`` strategy runs per step. numpy and torch (and ``jax-split``, the jax step in two
halves, for comparison): the gradient half of the step (forward, cross-entropy, backward; compiled on jax),
``ember.distributed.all_reduce_many(grads, op="mean")`` (25 MiB buckets: one collective for the guide's 2.1 MB of
float32 gradients), then the optimizer half (Adam). ``jax``: the whole step as ONE compiled program over the
processes (the Learner's path on jax): the model and Adam's state replicated over ``ember_jax.process_mesh()``,
each rank's batch its block of the global batch (``ember_jax.shard_batch``), and XLA's all-reduce of the gradients
inside the program. Every rank trains on its own fixed batch of ``--batch`` real MNIST images (64: the work per
process stays the same, so 2 processes do twice the samples of 1). Reported per backend and process count:

- ``step ms``: the median step (both halves and the all-reduce) on rank 0; ``all-reduce ms`` the median time of
  the all-reduce alone and its share of the step. For ``jax`` the all-reduce runs inside the compiled step and
  cannot be timed apart from it (XLA schedules it among the step's other ops, and the CPU runtime reports no
  per-op times to the host): the column then shows, in parentheses, the same gradients all-reduced by a separate
  program (the collectives engine) outside the timed step, an estimate of what the in-program all-reduce costs;
- ``samples/s``: per process (``batch / step``) and in total (times the processes);
- ``calls/step`` and ``bytes/step``: what this rank put into the collectives per step (the process group's
  ``stats``: one call per bucket) against the parameter bytes (target: one all-reduce of the gradients per step,
  at most 1.1x the parameter bytes per rank). ``jax``: 0, the all-reduce is part of the step's program.

With 2 processes, numpy and torch get a second row, ``overlapped``: the step the Learner runs on eager backends
with ``DistributedDataParallel(overlap=True)``, its default on nccl and across machines
(``Replicas.grads_overlapped``: ``ember.autodiff.grad_ready_hook`` feeds an ``ember.distributed.Bucketer`` whose
buckets, in reverse parameter order with a first bucket of 1 MiB as PyTorch DDP, are all-reduced with
torch.distributed's ``async_op=True`` while the backward pass goes on; the stop flag rides in the last bucket).
A third row, ``overlapped, 1 MiB buckets``, uses ``DistributedDataParallel(overlap=True, bucket_bytes=2**20,
first_bucket_bytes=2**20)``: the guide's big linear layer (2 MB of gradients, final early in the backward pass)
then gets a bucket of its own, reduced while the convolutions' gradients are computed. In the overlapped rows
``all-reduce ms`` is what is left to wait for after the backward pass returns. jax has no such rows: its step is one
program with the all-reduce inside (``jax``), or two halves with a blocking all-reduce between them (``jax-split``).

On this 2-core machine two processes share the two cores (each numpy process runs 1 BLAS thread, torch 1
intra-op thread), so no speed-up is expected: the table shows what the collectives cost, not a scaling curve.

    python bench/distributed.py [--only numpy,torch,jax,jax-split] [--steps 30] [--batch 64] [--no-overlap-rows]

Not a test: nothing asserts on time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BACKENDS = ("numpy", "torch", "jax", "jax-split")


def _worker(out: Path, backend_name: str, steps: int, batch_size: int, overlap: int) -> None:
    """One rank: time ``steps`` data-parallel guide steps, write ``out/rank<R>.json``."""
    import ember
    from ember import distributed as dist

    one_program = backend_name == "jax"
    backend_name = backend_name.removesuffix("-split")
    group = dist.init_process_group(backend_name, timeout=120.0)  # jax: before any device exists
    import numpy as np

    from ember.autodiff import Autodiff
    from ember.data.vision import MnistDataset
    from ember.optim import AdamConfig, GradientsParams

    sys.path.insert(0, str(REPO / "examples"))
    from guide import MnistBatcher, ModelConfig

    if backend_name == "numpy":
        inner = ember.backend("numpy", threads=1)
    else:
        inner = ember.backend(backend_name)
        if backend_name == "torch":
            import torch

            torch.set_num_threads(1)
    device = Autodiff(inner).device()
    inner.seed(42)
    model = ModelConfig(num_classes=10, hidden_size=512).init(device)
    optim = AdamConfig().init()
    data = MnistDataset.train(REPO.parent / "shared" / "data" / "mnist", download=False)
    start = group.rank * batch_size
    batch = MnistBatcher().batch([data.get(i) for i in range(start, start + batch_size)], device)

    def grad(model: Any, batch: Any) -> tuple[Any, Any]:
        out = model.train_step(batch)
        return out.grads, out.item.loss

    def update(model: Any, optim: Any, grads: Any, lr: Any) -> Any:
        return optim.step(lr, model, grads)

    if one_program:
        result = _one_program(group, model, optim, batch, grad, steps)
        result["batch"] = batch_size
        (out / f"rank{group.rank}.json").write_text(json.dumps(result))
        dist.destroy_process_group(group)
        return

    compile_fn = device.backend.compile
    grad_c, update_c = compile_fn(grad), compile_fn(update)
    if hasattr(optim, "init_states"):
        optim.init_states(model)
    lr: Any = 1e-4
    if grad_c is not grad:
        from ember import Float, Tensor

        lr = Tensor.from_data(np.asarray([1e-4]), device.inner, Float)
    param_bytes = sum(p.val().num_elements() * 4 for p in model.params())
    replicas = None
    if overlap:  # the Learner's overlapped DDP step (ember_train._parallel.Replicas)
        from ember_train import DistributedDataParallel
        from ember_train._parallel import Replicas

        replicas = Replicas(DistributedDataParallel(overlap=True) if overlap == 1 else
                            DistributedDataParallel(overlap=True, bucket_bytes=overlap, first_bucket_bytes=overlap))
        replicas.start(device)
        assert replicas.overlaps(grad_c is not grad), "this backend's step cannot overlap"
    step_s: list[float] = []
    reduce_s: list[float] = []
    calls = nbytes = 0
    for i in range(steps + 3):
        dist.barrier(group)
        group.stats.reset()
        t0 = time.perf_counter()
        if replicas is not None:
            marks: list[float] = []

            def grad_step(model: Any = model, marks: list[float] = marks) -> tuple[Any, Any]:
                out = grad_c(model, batch)
                marks.append(time.perf_counter())  # backward returned: what follows is the wait for the buckets
                return out

            new_grads, loss = replicas.grads_overlapped(model, grad_step, lambda: False)
            t1, t2 = marks[0], time.perf_counter()
        else:
            grads, loss = grad_c(model, batch)
            items = grads.items()
            tensors = [g for _, g in items]
            for t in tensors:  # the backward pass has finished before the clock of the all-reduce starts
                if backend_name == "jax":
                    t.primitive.block_until_ready()
            t1 = time.perf_counter()
            reduced = dist.all_reduce_many(tensors, op="mean", group=group)
            t2 = time.perf_counter()
            new_grads = GradientsParams({k: r for (k, _), r in zip(items, reduced)})
        model = update_c(model, optim, new_grads, lr)
        float(loss.to_numpy().reshape(-1)[0])  # the host read a logging loop does
        if backend_name == "jax":  # jax dispatches asynchronously: the update has finished when the clock stops
            for p in model.params():
                p.val().inner().primitive.block_until_ready()
        t3 = time.perf_counter()
        if i >= 3:  # warm-up (jax: compilation) left out
            step_s.append(t3 - t0)
            reduce_s.append(t2 - t1)
            calls, nbytes = group.stats.calls, group.stats.bytes
    result = {"rank": group.rank, "world_size": group.world_size, "engine": group.engine,
              "step_ms": 1e3 * statistics.median(step_s), "reduce_ms": 1e3 * statistics.median(reduce_s),
              "calls": calls, "bytes": nbytes, "param_bytes": param_bytes, "batch": batch_size}
    (out / f"rank{group.rank}.json").write_text(json.dumps(result))
    dist.destroy_process_group(group)


def _one_program(group: Any, model: Any, optim: Any, batch: Any, grad: Any, steps: int) -> dict[str, Any]:
    """The jax step as one program over the processes (the Learner's ``DistributedDataParallel`` path on jax):
    the median step, and the gradients all-reduced by a separate program outside the timed step (an estimate of
    the in-program all-reduce, which cannot be timed apart)."""
    import dataclasses

    import numpy as np

    import ember_jax
    from ember import Float, Tensor
    from ember import distributed as dist

    device = model.devices()[0]
    mesh = ember_jax.process_mesh(device)

    def train(model: Any, optim: Any, batch: Any, lr: Any) -> tuple[Any, Any]:
        out = model.train_step(batch)
        return optim.step(lr, model, out.grads), out.item.loss

    step = ember_jax.jit(train)
    optim.init_states(model)
    model, optim = ember_jax.replicate((model, optim), mesh)
    batch = dataclasses.replace(batch, **{f.name: ember_jax.shard_batch(getattr(batch, f.name), mesh)
                                          for f in dataclasses.fields(batch)})
    lr = ember_jax.replicate(Tensor.from_data(np.asarray([1e-4]), device.inner, Float), mesh)
    param_bytes = sum(p.val().num_elements() * 4 for p in model.params())
    local_grads = [g for _, g in grad(ember_jax.to_local(model), ember_jax.to_local(batch))[0].items()]
    step_s: list[float] = []
    reduce_s: list[float] = []
    calls = nbytes = 0
    for i in range(steps + 3):
        dist.barrier(group)
        group.stats.reset()
        t0 = time.perf_counter()
        model, loss = step(model, optim, batch, lr)
        float(ember_jax.to_local(loss).to_numpy().reshape(-1)[0])  # the host read a logging loop does
        for p in model.params():
            p.val().inner().primitive.block_until_ready()
        t1 = time.perf_counter()
        calls, nbytes = group.stats.calls, group.stats.bytes  # the step's own: none
        dist.barrier(group)
        t2 = time.perf_counter()
        for r in dist.all_reduce_many(local_grads, op="mean", group=group):
            r.primitive.block_until_ready()
        t3 = time.perf_counter()
        if i >= 3:
            step_s.append(t1 - t0)
            reduce_s.append(t3 - t2)
    return {"rank": group.rank, "world_size": group.world_size, "engine": "jax (one program)",
            "step_ms": 1e3 * statistics.median(step_s), "reduce_ms": 1e3 * statistics.median(reduce_s),
            "inside": True, "calls": calls, "bytes": nbytes, "param_bytes": param_bytes, "traces": step.trace_count}


def _run(backend: str, nproc: int, steps: int, batch: int, overlap: int = 0) -> dict[str, Any] | None:
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, "-m", "ember_train.launch", "--nproc", str(nproc), str(Path(__file__).resolve()),
               "--worker", d, "--backend", backend, "--steps", str(steps), "--batch", str(batch),
               "--overlap", str(overlap)]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            print(f"{backend} x{nproc} failed:\n{p.stdout}\n{p.stderr}", file=sys.stderr)
            return None
        return json.loads((Path(d) / "rank0.json").read_text())  # type: ignore[no-any-return]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(BACKENDS))
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch", type=int, default=64, help="images per process and step (default 64)")
    ap.add_argument("--no-overlap-rows", action="store_true", help="skip the overlapped rows (numpy, torch)")
    ap.add_argument("--overlap", type=int, default=0, help=argparse.SUPPRESS)  # 0 off, 1 default buckets, else bytes
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--backend", default="numpy", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        _worker(Path(args.worker), args.backend, args.steps, args.batch, args.overlap)
        return 0
    print(f"# guide step, {args.batch} images per process, {args.steps} steps, {os.cpu_count()} cores\n")
    print("| backend | processes | reduction | engine | step ms | all-reduce ms | all-reduce share "
          "| samples/s per process | samples/s total | calls/step | bytes/step | vs parameter bytes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for backend in args.only.split(","):
        runs = [(1, 0), (2, 0)]
        if backend in ("numpy", "torch") and not args.no_overlap_rows:
            runs += [(2, 1), (2, 2**20)]
        for nproc, overlap in runs:
            r = _run(backend, nproc, args.steps, args.batch, overlap)
            if r is None:
                continue
            per = r["batch"] / (r["step_ms"] / 1e3)
            how = {0: "after backward", 1: "overlapped"}.get(overlap, f"overlapped, {overlap >> 20} MiB buckets")
            red, share = f"{r['reduce_ms']:.2f}", f"{100 * r['reduce_ms'] / r['step_ms']:.1f} %"
            if r.get("inside"):  # inside the step's program: the separate program's time, an estimate
                how = "in the step's program"
                red, share = (f"in the step ({red})", f"({share})") if nproc > 1 else ("none", "0 %")
            print(f"| {backend} | {nproc} | {how} | {r['engine']} | {r['step_ms']:.1f} | {red} | {share} | {per:.0f} | "
                  f"{per * nproc:.0f} | {r['calls']} | {r['bytes']:,} | {r['bytes'] / r['param_bytes']:.2f}x |",
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
