"""Benchmark: a stacked LSTM as one primitive call against one call per layer (issue 32), forward + backward, on
the CPU or a GPU, next to raw PyTorch doing the same two ways, in one process.

Contenders (the benchmark LM's LSTM by default: 2 layers of hidden 512 over d_input 512, sequence 64, batch 32,
float32; the same weights everywhere, values checked to agree first):

- ``ember StackedLstm``: ``nn.StackedLstm``, one ``lstm_stack`` primitive (torch: one ``torch._VF.lstm`` call over
  both layers);
- ``ember Lstm per layer``: the same layers' ``Lstm.forward`` chained (one ``torch._VF.lstm`` call per layer);
- ``raw nn.LSTM(num_layers)``: one ``torch.nn.LSTM(num_layers=2)`` (cuDNN's multi-layer call on CUDA);
- ``raw nn.LSTM per layer``: two one-layer ``torch.nn.LSTM``.

Each step runs the stack on a fixed input, ``loss = sum(y * r)``, backward, and reads the input's gradient back to the
host (a synchronization on CUDA). On the CPU one call or one per layer take the same time (oneDNN runs the layers one
after the other either way); on a GPU cuDNN overlaps the layers of one call (its wavefront), which is what the
stacked primitive is for. Not a test: prints medians and ratios (raw per-layer time / contender time), never asserts
on time.

Run: python bench/lstm_stack.py [--device cuda] [--rounds R] [--batch-ms MS] [--layers N] [--threads T]
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from _timing import time_per_call
from ember import Tensor, nn
from ember.autodiff import Autodiff


def _steps(device: str, layers: int, batch: int, seq: int, d: int) -> dict[str, Callable[[], np.ndarray]]:
    import torch

    dev = Autodiff(ember.backend("torch", float_dtype="float32")).device(device)
    dev.inner.backend.seed(0)
    stack = nn.StackedLstmConfig(d, d, layers).init(dev)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, seq, d)).astype(np.float32)
    r = rng.standard_normal((batch, seq, d)).astype(np.float32)
    xe, re = Tensor.from_data(x, dev), Tensor.from_data(r, dev)
    raw = torch.nn.LSTM(d, d, layers, batch_first=True).to(device)
    per_layer = [torch.nn.LSTM(d, d, 1, batch_first=True).to(device) for _ in range(layers)]
    with torch.no_grad():  # Ember's fused weights are PyTorch's transposed, same gate order i, f, g, o
        for k, layer in enumerate(stack.layers):
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                v = torch.tensor(getattr(layer, name).val().to_numpy(), device=device)
                v = v.t() if name.startswith("weight") else v
                getattr(raw, f"{name}_l{k}").copy_(v)
                getattr(per_layer[k], f"{name}_l0").copy_(v)
    xt, rt = torch.tensor(x, device=device, requires_grad=True), torch.tensor(r, device=device)

    def ember_step(chained: bool) -> Callable[[], np.ndarray]:
        def step() -> np.ndarray:
            xg = xe.require_grad()
            if chained:
                y = xg
                for layer in stack.layers:
                    y, _ = layer(y)
            else:
                y, _ = stack(xg)
            return np.asarray(xg.grad((y * re).sum().backward()).to_numpy())

        return step

    def torch_step(modules: list[Any]) -> Callable[[], np.ndarray]:
        def step() -> np.ndarray:
            y = xt
            for m in modules:
                y, _ = m(y)
            (y * rt).sum().backward()
            g = xt.grad.cpu().numpy()  # type: ignore[union-attr]
            xt.grad = None
            for m in modules:
                m.zero_grad(set_to_none=True)
            return g  # type: ignore[no-any-return]

        return step

    return {
        "ember StackedLstm": ember_step(False),
        "ember Lstm per layer": ember_step(True),
        "raw nn.LSTM(num_layers)": torch_step([raw]),
        "raw nn.LSTM per layer": torch_step(per_layer),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="torch device: cpu, cuda, cuda:1 ...")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median reported)")
    ap.add_argument("--batch-ms", type=float, default=1000.0, help="length of one timed batch")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--hidden", type=int, default=512, help="d_input and d_hidden")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU)")
    args = ap.parse_args()

    import torch

    torch.set_num_threads(args.threads)
    torch.backends.cuda.matmul.allow_tf32 = False  # both sides round alike; cuDNN's RNN follows torch's setting
    torch.backends.cudnn.allow_tf32 = False
    steps = _steps(args.device, args.layers, args.batch, args.seq, args.hidden)
    ref = steps["raw nn.LSTM per layer"]()
    for name, step in steps.items():  # the same work: the same input gradient
        np.testing.assert_allclose(step(), ref, rtol=1e-3, atol=1e-3 * float(np.abs(ref).max()), err_msg=name)
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, step in steps.items():
            times[name].append(time_per_call(step, args.batch_ms / 1e3))
    base = statistics.median(times["raw nn.LSTM per layer"])
    print(f"LSTM {args.layers} x {args.hidden}, seq {args.seq}, batch {args.batch}, float32, {args.device}; "
          f"forward + backward, median of {args.rounds} interleaved rounds")
    print(f"  {'contender':26s} {'ms':>9s} {'vs raw per layer':>17s}")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"  {name:26s} {m * 1e3:9.2f} {base / m:16.2f}x")


if __name__ == "__main__":
    main()
