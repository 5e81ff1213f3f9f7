"""Benchmark: ``load_model`` time of long ONNX graphs (issue 28: import time must grow linearly with nodes).

Not a test: prints times, never asserts. The model: one input ``x: float32[batch, 8]`` and a chain of
``Add(x, c)`` / ``Relu`` nodes (``c`` a 1x8 initializer shared by every Add), one output. For each node count
the file is built with ``onnx.helper`` and saved to a temporary folder; each row shows ``onnx.load`` alone
(the protobuf parse, the floor), Ember's ``load_model`` (parse, checker, shape inference, IR, folding,
dead-node removal, converter look-up), the ratio of the two, the time per node, and one forward on a
``[2, 8]`` input. Before the fix (issue 28) 30k nodes took 32 s and 100k 436 s (quadratic in
``_parse.py``: a set rebuilt per node); the target is a 100k-node load within 10 s.

Run: python bench/onnx_load.py [--nodes 10000,30000,100000] [--profile N]
``--profile N`` prints the cProfile top 25 (cumulative) of one load of an N-node chain instead.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def chain_model(n: int) -> bytes:
    """An ``n``-node chain alternating ``Add`` (with a shared initializer) and ``Relu`` (the fault corpus' file)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.fault.corpus_onnx import chain

    return bytes(chain(n).SerializeToString())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", default="10000,30000,100000")
    ap.add_argument("--profile", type=int, default=0)
    ap.add_argument("--sort", default="cumulative", help="cProfile sort key for --profile (tottime, cumulative)")
    args = ap.parse_args()

    import onnx

    import ember
    from ember import Tensor
    from ember_import.onnx import load_model

    dev = ember.backend("numpy").device()
    with tempfile.TemporaryDirectory() as tmp:
        if args.profile:
            path = Path(tmp) / "chain.onnx"
            path.write_bytes(chain_model(args.profile))
            prof = cProfile.Profile()
            prof.enable()
            load_model(path, dev)
            prof.disable()
            pstats.Stats(prof, stream=sys.stdout).sort_stats(args.sort).print_stats(25)
            return
        print(f"{'nodes':>8} {'onnx.load s':>12} {'load_model s':>13} {'ratio':>7} {'us/node':>8} {'forward s':>10}")
        for n in (int(s) for s in args.nodes.split(",")):
            path = Path(tmp) / f"chain{n}.onnx"
            path.write_bytes(chain_model(n))
            t0 = time.perf_counter()
            onnx.load(str(path))
            t_onnx = time.perf_counter() - t0
            t0 = time.perf_counter()
            model = load_model(path, dev)
            t_load = time.perf_counter() - t0
            x = Tensor.from_data(np.ones((2, 8), np.float32), dev)
            t0 = time.perf_counter()
            model(x)
            t_fwd = time.perf_counter() - t0
            print(f"{n:>8} {t_onnx:>12.3f} {t_load:>13.3f} {t_load / t_onnx:>7.1f} {t_load / n * 1e6:>8.1f} "
                  f"{t_fwd:>10.3f}", flush=True)


if __name__ == "__main__":
    main()
