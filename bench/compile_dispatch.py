"""Host time of one compiled training step on torch: Ember's ``ember_torch.compile`` against a bare call of the
graph it captured (bench/models.py's models and steps; issue 32).

Figures per model, medians over interleaved calls (on CUDA each call is waited for afterwards, outside the timing):

- ``ember overhead``: Ember's own host work per call, the time until ``ember_torch.compile``'s call returns minus
  the time the call of the captured graph (the cache entry's ``GraphModule``, or its ``torch.compile`` d function)
  took inside it: flattening the arguments, finding the cache entry, building the results (a new module tree with
  new ``Param`` wrappers, new optimizer states, running states written back).
- ``walk+tree``: the same work done the way it was done before the generated builder and the results flattened
  ahead: a complete walk of the arguments and the recursive builder (:func:`ember_torch._capture_tree.build_all`), in
  the same process, interleaved: the ratio of the two is the speed-up.
- ``ember call`` and ``graph call``: the whole call, and a bare call of the same graph on the same inputs.

Then ``host only``: the same two with the graph's run replaced by a function returning its last outputs (the
figure of issue 32's target, Ember's own work alone: nothing freed, caches warm, as on a GPU's host).

Each round makes four calls: Ember's (untimed: the reference call before it left results that are not flattened
ahead), Ember's (timed: the steady state of a training loop), the reference, the bare graph.

    python bench/compile_dispatch.py [--device cpu|cuda] [--mode MODE] [--calls N] [--threads N] [MODEL ...]
    # default: resnet18 guide transformer, mode "capture" (on CUDA: "default", inductor)

Not a test: nothing asserts on time. On a loaded machine the absolute times move a lot between runs; the overhead
is a difference inside one call and moves least.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch  # noqa: E402

import ember  # noqa: E402
import ember_torch  # noqa: E402
from _models_ember import build, inputs, train_step  # noqa: E402
from _timing import Timed  # noqa: E402
from ember import Tensor  # noqa: E402
from ember.autodiff import Autodiff  # noqa: E402
from ember.backend.step_tree import Flat, flatten  # noqa: E402
from ember.optim import AdamConfig  # noqa: E402
from ember_torch._capture_flatten import TREE  # noqa: E402
from ember_torch._capture_tree import build_all  # noqa: E402


def _walk_and_tree(step: Any, entry: Any, *args: Any) -> Any:
    """One call as ``CompiledStep.__call__`` did it before: a complete walk and the recursive builder."""
    fl = Flat(TREE)
    key = (flatten(fl, args), flatten(fl, {}))
    found = step._cache.get(key)
    assert found is entry, "the reference call found another entry"
    outs = entry.run(*fl.leaves)
    return build_all(entry.result, entry.cells, entry.optims, entry.slots, outs, fl.objs)


def main(models: list[str], calls: int, device: str, mode: str | None) -> None:
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    for model in models:
        backend = ember.backend("torch")
        dev = Autodiff(backend).device(device)
        backend.seed(42)
        net = build(model, dev)
        optim = AdamConfig().init()
        optim.init_states(net)
        batch = inputs(model, dev)
        lr = Tensor.from_data(np.array([1e-4], np.float32), dev.inner)
        fn = ember_torch.compile(train_step, mode=mode)
        for _ in range(3):
            net, loss = fn(net, optim, batch, lr)
        sync()
        if fn.trace_count != 1 or fn.cache_size != 1:
            print(f"{model}: unexpected recapture (captures {fn.trace_count}, structures {fn.cache_size})")
        (entry,) = fn._cache.values()
        timed = entry.run = Timed(entry.run)
        fl = Flat(TREE)
        flatten(fl, (net, optim, batch, lr))
        n_in = len(fl.leaves)
        over, old, whole, graph = [], [], [], []
        for _ in range(calls):
            net, loss = fn(net, optim, batch, lr)  # after the reference call: a complete walk (not timed)
            sync()
            t0 = time.perf_counter()
            net, loss = fn(net, optim, batch, lr)
            t = time.perf_counter() - t0
            over.append(t - timed.last)
            whole.append(t)
            sync()
            t0 = time.perf_counter()
            net, loss = _walk_and_tree(fn, entry, net, optim, batch, lr)
            old.append(time.perf_counter() - t0 - timed.last)
            sync()
            fl = Flat(TREE)
            flatten(fl, (net, optim, batch, lr))
            t0 = time.perf_counter()
            outs = timed.fn(*fl.leaves)
            graph.append(time.perf_counter() - t0)
            sync()
        med = statistics.median
        print(f"{model} ({device}, mode {entry.mode}, {n_in} graph inputs, {len(outs)} outputs, {calls} calls): "
              f"ember overhead {med(over) * 1e6:.0f} us (fastest {min(over) * 1e6:.0f}), "
              f"walk+tree {med(old) * 1e6:.0f} us ({med(old) / med(over):.1f}x), "
              f"ember call {med(whole) * 1e3:.2f} ms, graph call {med(graph) * 1e3:.2f} ms "
              f"(ratio {med(whole) / med(graph):.3f})")
        host, old = _host_only(fn, entry, outs, net, optim, batch, lr, calls * 4)
        print(f"{model}: host only (the graph's run replaced by its last outputs): ember {host * 1e6:.0f} us, "
              f"walk+tree {old * 1e6:.0f} us ({old / host:.1f}x)")


def _host_only(fn: Any, entry: Any, outs: Any, *args: Any) -> tuple[float, float]:
    """Medians of Ember's call and of the reference call with the graph replaced by a function returning its last
    outputs: nothing is freed and no kernel cools the caches, so this is Ember's own work alone (on a GPU, where
    the kernels run asynchronously, the host's caches stay warm too). Each figure: blocks of 4 calls of one kind,
    alternating (Ember's first call after the reference's is a complete walk: not counted)."""
    *rest, calls = args
    net, optim, batch, lr = rest
    real, entry.run = entry.run, lambda *leaves: outs
    new, old = [], []
    try:
        for _ in range(calls // 4):
            for i in range(4):
                t0 = time.perf_counter()
                net, _loss = fn(net, optim, batch, lr)
                if i:
                    new.append(time.perf_counter() - t0)
            for _ in range(4):
                t0 = time.perf_counter()
                net, _loss = _walk_and_tree(fn, entry, net, optim, batch, lr)
                old.append(time.perf_counter() - t0)
    finally:
        entry.run = real
    return statistics.median(new), statistics.median(old)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=["resnet18", "guide", "transformer"])
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--mode", default=None, help="ember_torch.compile's mode (default: per device)")
    ap.add_argument("--threads", type=int, default=None, help="torch's CPU threads (default: torch's own)")
    a = ap.parse_args()
    if a.threads is not None:
        torch.set_num_threads(a.threads)
    main(a.models, a.calls, a.device, a.mode)
