"""Quantization targets (issue 33): accuracy of the quantized guide CNN, record sizes, int8 speed and peak RSS.

Sections (``--only acc,size,linear,resnet,rss``; all by default):

- ``acc``: the guide's model (``examples/guide``) trained for ``--epochs`` (1) epoch on MNIST on Ember's torch
  backend (Adam 1e-3, batch 64, seed 42; cached in ``--cache``), then: static post-training int8
  (``Quantizer.prepare`` -> ``calibrate`` on the first 1,000 training images -> ``convert``; weights ``Q8S`` per
  output channel, inputs ``Q8F`` per tensor) with min-max, moving-average and percentile observers; int4
  weight-only per block of 32 (``Q4S``); and int4 with quantization-aware training for ``--qat-epochs`` (1)
  epoch (``prepare_qat(weights_only=True)``, Adam 1e-4). Test accuracy on the 10,000 test images, each
  against float32 ("within x points" is read as a loss of at most x: a quantized model that scores higher, as
  QAT's extra epoch of training can, meets it).
- ``size``: the record of each model with ``NamedMpkFileRecorder`` (uncompressed), as a ratio of float32's.
- ``linear``: ``Linear [64, 1024] x [1024, 1024]``, int8 dynamic (``Quantizer.quantize_dynamic``) against the
  float32 Linear, both Ember on torch CPU, interleaved rounds, medians.
- ``resnet``: ResNet-18 (``bench/_resnet_ember.py``, random weights, batch 8, 64x64 random images), int8 static
  (calibrated on 8 random batches; every convolution on the int8 kernel ``QuantOps.quantized_conv2d``, oneDNN's
  on torch CPU, batch norms in float) against float32 on torch: speed ratio of the medians and of the best rounds
  (the machine is shared: the best round is the least disturbed), and top-1 agreement over 256 images.
- ``rss``: peak RSS of inference of a weight-dominated MLP (6 x Linear 4096x4096, 384 MiB of float32 weights, so
  that the weights outweigh the ~250 MiB the process takes with torch imported) loaded from its record, float32
  against int8 dynamic, each in a fresh child process.

    python bench/quantization.py [--only acc,size] [--epochs 1] [--qat-epochs 1] [--rounds 5]

Not a test: nothing asserts on time or accuracy. Figures on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "examples")]

import ember  # noqa: E402
from _rss import child_peak_mib, print_peak  # noqa: E402
from _timing import time_per_call  # noqa: E402
from ember import Int, Tensor  # noqa: E402
from ember.autodiff import Autodiff  # noqa: E402
from ember.quantization import (  # noqa: E402
    Calibration,
    QuantizedTensor,
    Quantizer,
    QuantLevel,
    QuantParam,
    QuantScheme,
    QuantValue,
    calibrate,
)
from ember.record import NamedMpkFileRecorder  # noqa: E402

TARGETS = {
    "ptq_int8": "within 0.3 points of float32",
    "int4_weight": "within 1.0 point",
    "int4_qat": "within 0.3 points",
    "size_int8": "<= 0.27x",
    "size_int4": "<= 0.15x",
    "linear": ">= 1.5x",
    "resnet": ">= 1.3x, top-1 agreement >= 98 %",
    "rss": "<= 0.45x",
}
INT8 = QuantScheme(QuantValue.Q8S, QuantLevel.axis(0))
INT4_BLOCK = QuantScheme(QuantValue.Q4S, QuantLevel.block(32), QuantParam.F16)  # 4.5 bits a weight
MNIST_DIR = Path(os.environ.get("EMBER_MNIST_DIR", "/work/shared/data/mnist"))  # else ember's cache / download


# ---------------------------------------------------------------------------------------------------- data
def mnist(split: str) -> tuple[np.ndarray, np.ndarray]:
    """Normalized images ``[n, 28, 28]`` float32 and labels ``[n]`` int64 (the guide's batcher's formula)."""
    from ember.data.vision import MnistDataset
    from guide.data import MNIST_MEAN, MNIST_STD

    root = str(MNIST_DIR) if MNIST_DIR.exists() else None
    ds = MnistDataset.train(root) if split == "train" else MnistDataset.test(root)
    images = np.stack([ds.get(i).image for i in range(len(ds))]).astype(np.float32)
    labels = np.array([ds.get(i).label for i in range(len(ds))], dtype=np.int64)
    return ((images / 255.0) - MNIST_MEAN) / MNIST_STD, labels


def batches(x: np.ndarray, y: np.ndarray, size: int, device: Any, seed: int | None = None) -> Any:
    from guide.data import MnistBatch

    order = np.arange(len(x)) if seed is None else np.random.default_rng(seed).permutation(len(x))
    for i in range(0, len(x), size):
        idx = order[i:i + size]
        yield MnistBatch(Tensor.from_data(x[idx], device), Tensor.from_data(y[idx], device, Int))


def accuracy(model: Any, x: np.ndarray, y: np.ndarray, device: Any) -> float:
    hits = 0
    for b in batches(x, y, 500, device):
        hits += int((model(b.images).argmax(1).reshape([-1]) == b.targets).int().sum().into_scalar())
    return 100.0 * hits / len(x)


def train(model: Any, x: np.ndarray, y: np.ndarray, epochs: int, lr: float, device: Any, seed: int) -> Any:
    from ember.optim import AdamConfig

    optim = AdamConfig().init()
    for epoch in range(epochs):
        for b in batches(x, y, 64, device, seed + epoch):
            out = model.train_step(b)
            model = optim.step(lr, model, out.grads)
    return model


# ---------------------------------------------------------------------------------------------------- sections
def section_acc(args: argparse.Namespace, rows: list[tuple[str, str, str, str]]) -> dict[str, Any]:
    from guide.model import ModelConfig

    be = ember.backend("torch", threads=args.threads)
    be.seed(42)
    ad = Autodiff(be).device()
    dev = be.device()
    xtr, ytr = mnist("train")
    xte, yte = mnist("test")
    cache = Path(args.cache) / f"guide-float-{args.epochs}ep.mpk"
    model = ModelConfig(10, 512).init(ad)
    if cache.exists() and not args.retrain:
        model = model.load_file(cache, NamedMpkFileRecorder())
        print(f"float model from {cache}")
    else:
        t0 = time.perf_counter()
        model = train(model, xtr, ytr, args.epochs, 1e-3, ad, 42)
        print(f"float model: {args.epochs} epoch(s) in {time.perf_counter() - t0:.0f} s")
        cache.parent.mkdir(parents=True, exist_ok=True)
        model.save_file(cache, NamedMpkFileRecorder())
    flt = model.valid()
    acc_f = accuracy(flt, xte, yte, dev)
    rows.append(("guide float32 test accuracy", f"{acc_f:.2f} %", "", ""))
    models: dict[str, Any] = {"float32": flt}
    calib = list(batches(xtr[:1000], ytr[:1000], 100, dev))
    for name, cal in (("min-max", Calibration.min_max()), ("moving average", Calibration.moving_average()),
                      ("percentile 99.99", Calibration.percentile(99.99))):
        q = Quantizer(cal, INT8)
        prepared = calibrate(q.prepare(flt), calib, lambda m, b: m(b.images))
        qm = q.convert(prepared)
        acc = accuracy(qm, xte, yte, dev)
        ok = acc >= acc_f - 0.3
        rows.append((f"static int8 ({name}, 1,000 images)", f"{acc:.2f} % ({acc - acc_f:+.2f})",
                     TARGETS["ptq_int8"], "met" if ok else "NOT met"))
        models.setdefault("int8", qm)
    q4 = Quantizer(Calibration.min_max(), INT4_BLOCK)
    w4 = q4.quantize_weights(flt)
    acc4 = accuracy(w4, xte, yte, dev)
    rows.append(("int4 weight-only, block 32", f"{acc4:.2f} % ({acc4 - acc_f:+.2f})", TARGETS["int4_weight"],
                 "met" if acc4 >= acc_f - 1.0 else "NOT met"))
    models["int4"] = w4
    if args.qat_epochs:
        t0 = time.perf_counter()
        qat = train(q4.prepare_qat(model, weights_only=True), xtr, ytr, args.qat_epochs, 1e-4, ad, 7)
        q4m = q4.convert(qat)
        accq = accuracy(q4m, xte, yte, dev)
        rows.append((f"int4 + QAT {args.qat_epochs} epoch ({time.perf_counter() - t0:.0f} s)",
                     f"{accq:.2f} % ({accq - acc_f:+.2f})", TARGETS["int4_qat"],
                     "met" if accq >= acc_f - 0.3 else "NOT met"))
    return models


def section_size(models: dict[str, Any], rows: list[tuple[str, str, str, str]]) -> None:
    rec = NamedMpkFileRecorder()
    with tempfile.TemporaryDirectory() as d:
        sizes = {k: rec.record(m.into_record(), Path(d) / k).stat().st_size for k, m in models.items()}
    for k, target in (("int8", "size_int8"), ("int4", "size_int4")):
        if k in sizes:
            r = sizes[k] / sizes["float32"]
            limit = 0.27 if k == "int8" else 0.15
            rows.append((f"record size {k} ({sizes[k]:,} B / {sizes['float32']:,} B)", f"{r:.3f}x",
                         TARGETS[target], "met" if r <= limit else "NOT met"))


def _rounds(fns: dict[str, Any], rounds: int, batch_s: float) -> dict[str, list[float]]:
    """Seconds per call of each function in each of ``rounds`` interleaved rounds."""
    for f in fns.values():
        f()
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            times[k].append(time_per_call(f, batch_s))
    return times


def _interleaved(fns: dict[str, Any], rounds: int, batch_s: float) -> dict[str, float]:
    """The median seconds per call of each function over ``rounds`` interleaved rounds."""
    return {k: statistics.median(v) for k, v in _rounds(fns, rounds, batch_s).items()}


def section_linear(args: argparse.Namespace, rows: list[tuple[str, str, str, str]]) -> None:
    from ember.nn import LinearConfig

    be = ember.backend("torch", threads=args.threads)
    be.seed(0)
    dev = be.device()
    lin = LinearConfig(1024, 1024).init(dev)
    q = Quantizer(scheme=QuantScheme(QuantValue.Q8S, QuantLevel.axis(0))).quantize_dynamic(lin)
    x = Tensor.from_data(np.random.default_rng(0).standard_normal((64, 1024)).astype(np.float32), dev)
    med = _interleaved({"float32": lambda: lin(x).to_data(),
                        "int8": lambda: q(x).to_data()}, args.rounds, 0.3)
    r = med["float32"] / med["int8"]
    rows.append((f"Linear 64x1024x1024 int8 dynamic, torch ({med['int8'] * 1e3:.3f} ms vs "
                 f"{med['float32'] * 1e3:.3f} ms)", f"{r:.2f}x", TARGETS["linear"], "met" if r >= 1.5 else "NOT met"))


def section_resnet(args: argparse.Namespace, rows: list[tuple[str, str, str, str]]) -> None:
    from _resnet_ember import resnet18

    be = ember.backend("torch", threads=args.threads)
    be.seed(0)
    dev = be.device()
    model = resnet18(dev, num_classes=1000)
    rng = np.random.default_rng(0)

    def images(n: int) -> Tensor:
        return Tensor.from_data(rng.standard_normal((n, 3, 64, 64)).astype(np.float32), dev)

    q = Quantizer(Calibration.min_max(), INT8)
    prepared = calibrate(q.prepare(model), [images(8) for _ in range(8)])
    qm = q.convert(prepared)
    agree = 0
    for _ in range(32):
        x = images(8)
        agree += int((model(x).argmax(1) == qm(x).argmax(1)).int().sum().into_scalar())
    x = images(8)
    fns = {"float32": lambda: model(x).to_data(), "int8": lambda: qm(x).to_data()}
    times = _rounds(fns, args.rounds, 0.5)
    for label, agg in (("median", statistics.median), ("best round", min)):
        t = {k: agg(v) for k, v in times.items()}
        r = t["float32"] / t["int8"]
        rows.append((f"ResNet-18 int8 static, torch, batch 8, {label} ({t['int8'] * 1e3:.1f} ms vs "
                     f"{t['float32'] * 1e3:.1f} ms); top-1 agreement {100 * agree / 256:.1f} %", f"{r:.2f}x",
                     TARGETS["resnet"], "met" if r >= 1.3 and agree >= 0.98 * 256 else "NOT met"))


RSS_DIM, RSS_LAYERS = 4096, 6


class Mlp(ember.Module):
    """``RSS_LAYERS`` x Linear ``RSS_DIM`` x ``RSS_DIM`` with ReLU: a weight-dominated model."""

    layers: list[Any]

    def forward(self, x: Tensor) -> Tensor:
        from ember.tensor import activation as A

        for layer in self.layers:
            x = A.relu(layer(x))
        return x


def _mlp_template(kind: str, dev: Any) -> Any:
    """The MLP to load a record into; the int8 one is built from int8 zeros and unit scales (no float weights
    are ever allocated)."""
    from ember.module import Param
    from ember.nn import Linear
    from ember.quantization import InputQuant, QParams, QuantizedLinear

    layers: list[Any] = []
    n = RSS_DIM
    for _ in range(RSS_LAYERS):
        bias = Param(Tensor.zeros([n], dev))
        if kind == "float32":
            layers.append(Linear(weight=Param(Tensor.zeros([n, n], dev)), bias=bias))
        else:
            values = Tensor.from_data(np.zeros((n, n), dtype=np.int8), dev, Int, dtype="int8")
            qp = QParams(Tensor.ones([n], dev))
            w = QuantizedTensor(values, (n, n), QuantScheme(QuantValue.Q8S, QuantLevel.axis(1)), qp)
            layers.append(QuantizedLinear(weight=Param(w, require_grad=False), bias=bias,
                                          input=InputQuant(scheme=QuantScheme(QuantValue.Q8F))))
    return Mlp(layers=layers)


def rss_child(kind: str, path: str) -> None:
    be = ember.backend("torch", threads=1)
    dev = be.device()
    model = _mlp_template(kind, dev).load_file(path, NamedMpkFileRecorder())
    x = Tensor.from_data(np.random.default_rng(0).standard_normal((8, RSS_DIM)).astype(np.float32), dev)
    for _ in range(3):
        model(x).to_data()
    print_peak()


def section_rss(args: argparse.Namespace, rows: list[tuple[str, str, str, str]]) -> None:
    from ember.nn import LinearConfig

    be = ember.backend("torch", threads=1)
    be.seed(0)
    dev = be.device()
    mlp = Mlp(layers=[LinearConfig(RSS_DIM, RSS_DIM).init(dev) for _ in range(RSS_LAYERS)])
    q = Quantizer(scheme=INT8).quantize_dynamic(mlp)
    with tempfile.TemporaryDirectory() as d:
        paths = {k: str(m.save_file(Path(d) / k, NamedMpkFileRecorder())) for k, m in (("float32", mlp), ("int8", q))}
        peak = {k: child_peak_mib(__file__, ["--rss-child", k, p]) for k, p in paths.items()}
    if peak["float32"] and peak["int8"]:
        r = peak["int8"] / peak["float32"]
        mib = f"{peak['int8']:.0f} MiB vs {peak['float32']:.0f} MiB"
        rows.append((f"peak RSS, MLP {RSS_LAYERS}x{RSS_DIM}x{RSS_DIM} inference ({mib})",
                     f"{r:.2f}x", TARGETS["rss"], "met" if r <= 0.45 else "NOT met"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="acc,size,linear,resnet,rss")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--qat-epochs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "ember-bench-quantization"))
    ap.add_argument("--retrain", action="store_true")
    ap.add_argument("--rss-child", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rss_child:
        rss_child(*args.rss_child)
        return
    only = set(args.only.split(","))
    rows: list[tuple[str, str, str, str]] = []
    try:
        if "acc" in only or "size" in only:
            models = section_acc(args, rows)
            if "size" in only:
                section_size(models, rows)
        if "linear" in only:
            section_linear(args, rows)
        if "resnet" in only:
            section_resnet(args, rows)
        if "rss" in only:
            section_rss(args, rows)
    finally:
        w = max((len(r[0]) for r in rows), default=10)
        print(f"\n{'work':<{w}}  {'figure':<22}  {'target':<34}  status")
        for r in rows:
            print(f"{r[0]:<{w}}  {r[1]:<22}  {r[2]:<34}  {r[3]}")


if __name__ == "__main__":
    main()
