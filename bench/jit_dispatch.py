"""Host time of one compiled training step: Ember's ``ember_jax.jit`` against raw ``jax.jit`` (bench/models.py's
models and steps), split into the time until the call returns (flattening the arguments, dispatching the program,
rebuilding the results: host work) and the whole step (until the loss is on the host).

On a GPU the program runs asynchronously, so a step whose call takes longer to return than the program takes to
run is bound by the host; on a CPU the two overlap less and the split says less.

    python bench/jit_dispatch.py [MODEL ...]      # default: guide transformer resnet18

Not a test: nothing asserts on time.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ember  # noqa: E402
import ember_jax  # noqa: E402
from _models_ember import batch_data, build, inputs, train_step  # noqa: E402
from _models_jax import step as jax_step  # noqa: E402
from _models_torch import build as torch_build  # noqa: E402
from ember import Tensor  # noqa: E402
from ember.autodiff import Autodiff  # noqa: E402
from ember.optim import AdamConfig  # noqa: E402


def main(models: list[str], steps: int = 30) -> None:
    for model in models:
        backend = ember.backend("jax")
        dev = Autodiff(backend).device()
        backend.seed(42)
        state = {"model": build(model, dev)}
        optim = AdamConfig().init()
        optim.init_states(state["model"])
        batch = inputs(model, dev)
        lr = Tensor.from_data(np.array([1e-4], np.float32), dev.inner)
        fn = ember_jax.jit(train_step)
        x, y = batch_data(model)
        raw = jax_step(model, {k: v.detach().numpy().copy() for k, v in torch_build(model).state_dict().items()}, x, y)
        for _ in range(3):
            state["model"], loss = fn(state["model"], optim, batch, lr)
            float(loss.into_scalar())
            float(raw())
        times: dict[str, list[float]] = {"ember call": [], "ember step": [], "raw call": [], "raw step": []}
        for _ in range(steps):
            t0 = time.perf_counter()
            state["model"], loss = fn(state["model"], optim, batch, lr)
            t1 = time.perf_counter()
            float(loss.into_scalar())
            t2 = time.perf_counter()
            out = raw()
            t3 = time.perf_counter()
            float(out)
            t4 = time.perf_counter()
            for k, v in zip(times, (t1 - t0, t2 - t0, t3 - t2, t4 - t2)):
                times[k].append(v)
        ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
        print(f"{model}: ember call returns {ms['ember call']:.3f} ms, step {ms['ember step']:.3f} ms | raw jax.jit "
              f"call returns {ms['raw call']:.3f} ms, step {ms['raw step']:.3f} ms")


if __name__ == "__main__":
    main(sys.argv[1:] or ["guide", "transformer", "resnet18"])
