"""Host time of one compiled training step: Ember's ``ember_jax.jit`` against raw ``jax.jit`` (bench/models.py's
models and steps).

Figures per model, medians over interleaved calls (each step, every new array included, is waited for afterwards,
outside the timing, so calls never queue behind each other or run beside the previous step's computation):

- ``ember overhead``: Ember's own host work per call, the time until ``ember_jax.jit``'s call returns minus the
  time jax's dispatch of the compiled program took inside that call (the cache entry's ``jax.jit`` function,
  wrapped by a timer): flattening the arguments, finding the cache entry, rebuilding the results and writing
  the state back. This is the figure of issue 32's target (Ember <= raw ``jax.jit`` + 50 µs per call): it is
  the difference between Ember's call and a bare ``jax.jit`` call of the same program with the same arrays.
- ``raw's own host work``: the same for the raw step, its call minus its ``jax.jit`` dispatch (replacing its
  state dicts, freeing the previous arrays): what a raw training loop does besides jax's dispatch. Ember's
  overhead includes the same kind of work (the model's previous arrays are freed inside Ember's call).
- ``ember call`` and ``raw call``: the time until the call returns for Ember and for the raw ``jax.jit`` step of
  the same model (``_models_jax.py``; a different XLA program, so the two include different dispatch and any
  work XLA's CPU runtime does in the calling thread).
- ``step``: until the loss is on the host (the whole step, for scale).

``--donate`` compiles Ember's step with ``donate_argnums=(0,), copy_donated=True`` (what the Learner's jax step
does: the model is copied once at the first call, then donated: the new arrays are written into the step's own
module objects instead of a new module tree being built per call), as the raw step donates its parameters,
optimizer state and buffers; without it Ember's result is a new module tree per call.

``--small`` shrinks the inputs (batch 1; ResNet-18 at 32x32 with 10 classes; sequence 16) so the program's run
hides less of the host time; the host work does not depend on the batch.

    python bench/jit_dispatch.py [--small] [--donate] [--calls N] [MODEL ...]      # default: resnet18 guide transformer

Not a test: nothing asserts on time. On a loaded machine the absolute times move a lot between runs; the
overhead figure is a difference inside one call and moves least; the fastest call's overhead shows it without
the other jobs' interruptions (the median includes them).
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

import jax  # noqa: E402

import _models_ember  # noqa: E402
import ember  # noqa: E402
import ember_jax  # noqa: E402
from _models_ember import batch_data, build, inputs, train_step  # noqa: E402
from _models_jax import step as jax_step  # noqa: E402
from _models_torch import build as torch_build  # noqa: E402
from _timing import Timed  # noqa: E402
from ember import Tensor  # noqa: E402
from ember.autodiff import Autodiff  # noqa: E402
from ember.backend.step_tree import Flat, flatten_seq  # noqa: E402
from ember.optim import AdamConfig  # noqa: E402
from ember_jax._tree import TREE  # noqa: E402

SMALL = {
    "resnet18": _models_ember.Spec(1, {"classes": 10, "size": 32}),
    "transformer": _models_ember.Spec(1, {"vocab": 1000, "seq": 16, "d_model": 256, "heads": 8, "d_ff": 1024,
                                          "layers": 2, "classes": 10}),
    "guide": _models_ember.Spec(1, {"classes": 10, "hidden": 512}),
    "lstm": _models_ember.Spec(1, {"vocab": 1000, "seq": 16, "d_model": 512, "hidden": 512, "layers": 2}),
}


def _all_ready(*trees: Any) -> None:
    """Wait for every array of the model and the optimizer (not only the loss)."""
    fl = Flat(TREE)
    flatten_seq(fl, trees)
    jax.block_until_ready(fl.leaves)


def _ready(loss: Tensor) -> None:
    p = loss.primitive
    jax.block_until_ready(getattr(p, "p", p))


def main(models: list[str], calls: int, small: bool, donate: bool = False) -> None:
    for model in models:
        if small:
            _models_ember.SPECS[model] = SMALL[model]
        backend = ember.backend("jax")
        dev = Autodiff(backend).device()
        backend.seed(42)
        net = build(model, dev)
        optim = AdamConfig().init()
        optim.init_states(net)
        batch = inputs(model, dev)
        lr = Tensor.from_data(np.array([1e-4], np.float32), dev.inner)
        fn = ember_jax.jit(train_step, donate_argnums=(0,) if donate else (), copy_donated=donate)
        x, y = batch_data(model)
        state_dict = {k: v.detach().numpy().copy() for k, v in torch_build(model).state_dict().items()}
        raw = jax_step(model, state_dict, x, y)
        for _ in range(3):
            net, loss = fn(net, optim, batch, lr)
            _ready(loss)
            jax.block_until_ready(raw())
        if fn.trace_count != 1 or fn.cache_size != 1:
            print(f"{model}: unexpected retrace (traces {fn.trace_count}, structures {fn.cache_size})")
        timed = [Timed(e.jitted) for e in fn._cache.values()]
        for e, t in zip(fn._cache.values(), timed):
            e.jitted = t
        raw_timed = Timed(raw.jitted) if hasattr(raw, "jitted") else None
        if raw_timed is not None:
            raw.jitted = raw_timed
        times: dict[str, list[float]] = {"overhead": [], "raw host": [], "ember call": [], "ember step": [],
                                         "raw call": [], "raw step": []}
        for _ in range(calls):
            t0 = time.perf_counter()
            net, loss = fn(net, optim, batch, lr)
            t1 = time.perf_counter()
            _ready(loss)
            ember_step = time.perf_counter() - t0
            _all_ready(net, optim)  # the whole step (the new parameters too), so the next call finds it done
            t2 = time.perf_counter()
            out = raw()
            t3 = time.perf_counter()
            jax.block_until_ready(out)
            t4 = time.perf_counter()
            jax.block_until_ready(getattr(raw, "state", None))
            times["overhead"].append(t1 - t0 - timed[0].last)
            if raw_timed is not None:
                times["raw host"].append(t3 - t2 - raw_timed.last)
            spans = (t1 - t0, ember_step, t3 - t2, t4 - t2)
            for k, v in zip(("ember call", "ember step", "raw call", "raw step"), spans):
                times[k].append(v)
        us = {k: statistics.median(v) * 1e6 if v else float("nan") for k, v in times.items()}
        n_leaves = len(jax.tree_util.tree_leaves(net)) + len(jax.tree_util.tree_leaves(optim))
        best = min(times["overhead"]) * 1e6
        tags = (" (small)" if small else "") + (" (donated)" if donate else "")
        print(f"{model}{tags}, {n_leaves} arrays in the model and optimizer: ember overhead "
              f"{us['overhead']:.0f} µs per call (fastest call {best:.0f} µs), raw's own host work "
              f"{us['raw host']:.0f} µs | call returns: ember "
              f"{us['ember call']:.0f} µs, raw jax.jit "
              f"{us['raw call']:.0f} µs | step: ember {us['ember step'] / 1e3:.1f} ms, raw "
              f"{us['raw step'] / 1e3:.1f} ms", flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", default=["resnet18", "guide", "transformer"])
    ap.add_argument("--calls", type=int, default=30)
    ap.add_argument("--small", action="store_true", help="batch 1 and small inputs")
    ap.add_argument("--donate", action="store_true", help="donate the model to Ember's compiled step")
    a = ap.parse_args()
    main(a.models, a.calls, a.small, a.donate)
