"""Imported quantized ONNX CNN (issue 33): ``load_model`` inference speed of a ``quantize_static`` model, int8
against the float model it was quantized from, on Ember's torch backend (CPU).

The model is the shape of ``packages/import/tests/test_onnx_quantized_import.py``'s ``_float_model`` (Conv 3x3 pad 1
-> ReLU -> Conv 3x3 stride 2 pad 1 -> ReLU -> flatten -> MatMul + bias), scaled by ``--channels`` and ``--size``
(the test's own is ``--channels 16,16 --size 8``). onnxruntime's ``quantize_static`` (min-max calibration on 8
random batches; weights int8 per channel, activations uint8) writes it in the QDQ format (``QdqConv`` /
``QdqMatMul`` after import: ``quantized_conv2d`` / ``quantized_matmul`` with float outputs) and in the QOperator
format (``QLinearConv`` on ``quantized_conv2d`` with requantized int8 outputs, ``QLinearMatMul`` generic).

Each model runs ``--rounds`` interleaved rounds (each one timed batch of ``--batch-ms``), after two warm-up calls;
reported: the best round (the least disturbed on a shared machine) and the median, as ratios float / int8 (above 1:
int8 faster), with onnxruntime's own float and QDQ int8 sessions on one thread as the raw library's ratio.

    python bench/quantization_onnx.py [--channels 32,64] [--size 32] [--batch 8] [--rounds 7] [--threads 1]

Not a test: nothing asserts on time. Figures on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE)]

import ember  # noqa: E402
from _timing import time_per_call  # noqa: E402


def float_model(c1: int, c2: int, size: int, seed: int = 0) -> Any:
    """The float ONNX CNN (input ``[batch, 3, size, size]``, output ``[batch, 64]``)."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)

    def f32(*s: int) -> np.ndarray:
        return (rng.standard_normal(s) * (2.0 / np.prod(s[1:])) ** 0.5).astype(np.float32)

    flat = c2 * ((size + 1) // 2) ** 2
    inits = [
        numpy_helper.from_array(f32(c1, 3, 3, 3), "conv1.weight"),
        numpy_helper.from_array(f32(c1), "conv1.bias"),
        numpy_helper.from_array(f32(c2, c1, 3, 3), "conv2.weight"),
        numpy_helper.from_array(f32(c2), "conv2.bias"),
        numpy_helper.from_array(f32(flat, 64), "fc.weight"),
        numpy_helper.from_array(f32(64), "fc.bias"),
        numpy_helper.from_array(np.array([0, -1], np.int64), "shape"),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "conv1.weight", "conv1.bias"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "conv2.weight", "conv2.bias"], ["c2"], strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Reshape", ["r2", "shape"], ["flat"]),
        helper.make_node("MatMul", ["flat", "fc.weight"], ["mm"]),
        helper.make_node("Add", ["mm", "fc.bias"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 64])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


class _Reader:
    """onnxruntime's CalibrationDataReader protocol over a few random batches."""

    def __init__(self, batches: list[np.ndarray]) -> None:
        self.it = iter([{"x": b} for b in batches])

    def get_next(self) -> dict | None:
        return next(self.it, None)


def quantize(src: Path, dst: Path, fmt: str, batches: list[np.ndarray]) -> None:
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static

    quantize_static(
        str(src),
        str(dst),
        _Reader(batches),
        quant_format=getattr(QuantFormat, fmt),
        per_channel=True,
        weight_type=QuantType.QInt8,
        activation_type=QuantType.QUInt8,
        op_types_to_quantize=["Conv", "MatMul"],
    )


def main() -> None:
    import onnx
    import onnxruntime as ort

    from ember_import.onnx import load_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--channels", default="32,64")
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--batch-ms", type=float, default=300.0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    c1, c2 = (int(c) for c in args.channels.split(","))
    rng = np.random.default_rng(1)
    shape = (args.batch, 3, args.size, args.size)
    dev = ember.backend("torch", threads=args.threads).device()
    tmp = Path(tempfile.mkdtemp(prefix="ember-bench-qonnx-"))
    paths = {"float32": tmp / "f.onnx", "int8 QDQ": tmp / "qdq.onnx", "int8 QOperator": tmp / "qop.onnx"}
    onnx.save(float_model(c1, c2, args.size), paths["float32"])
    calib = [rng.standard_normal(shape).astype(np.float32) for _ in range(8)]
    quantize(paths["float32"], paths["int8 QDQ"], "QDQ", calib)
    quantize(paths["float32"], paths["int8 QOperator"], "QOperator", calib)
    x_np = rng.standard_normal(shape).astype(np.float32)
    x = ember.Tensor.from_data(x_np, dev)
    fns: dict[str, Any] = {}
    outs = {}
    for name, p in paths.items():
        m = load_model(p, dev)
        outs[name] = m(x).to_numpy()
        fns[f"ember {name}"] = lambda m=m: m(x).to_data()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    for name in ("float32", "int8 QDQ"):
        sess = ort.InferenceSession(str(paths[name]), opts, providers=["CPUExecutionProvider"])
        fns[f"onnxruntime {name}"] = lambda s=sess: s.run(None, {"x": x_np})
    ref = ort.InferenceSession(str(paths["int8 QDQ"]), opts, providers=["CPUExecutionProvider"]).run(None, {"x": x_np})
    for f in fns.values():
        f()
        f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(args.rounds):
        for k, f in fns.items():
            times[k].append(time_per_call(f, args.batch_ms / 1e3))
    print(f"CNN {c1},{c2} channels, {args.size}x{args.size}, batch {args.batch}, torch CPU, {args.threads} thread(s)")
    print(f"max |ember int8 QDQ - onnxruntime int8 QDQ| = {np.abs(outs['int8 QDQ'] - ref[0]).max():.2e}")
    print(f"{'model':<28} {'best ms':>9} {'median ms':>10}")
    for k, v in times.items():
        print(f"{k:<28} {min(v) * 1e3:>9.3f} {statistics.median(v) * 1e3:>10.3f}")
    for lib in ("ember", "onnxruntime"):
        base = times[f"{lib} float32"]
        for k in times:
            if k.startswith(lib) and "int8" in k:
                best = min(base) / min(times[k])
                med = statistics.median(base) / statistics.median(times[k])
                print(f"{lib}: float32 / {k.split(' ', 1)[1]}: best {best:.2f}x, median {med:.2f}x")


if __name__ == "__main__":
    main()
