"""Benchmark: reading a ~400 MB PyTorch state_dict with ember_import against ``torch.load(weights_only=True)``.

Not a test: prints times, throughput ratios and peak memory; never asserts. Targets (issue 11): ember's load at
least 0.8x torch's throughput; peak memory at most 1.2x the file size on the mmap path.

The file: ``torch.save`` of a dict of ``--tensors`` float32 tensors ``[1000, 1000]`` (100 -> 400 MB), zip format.
Variants, interleaved in one process, medians over ``--rounds``:

- ``torch.load(weights_only=True)``: reads every storage into memory;
- ``read_pytorch``: one ``readinto`` per storage into a numpy buffer, tensors are zero-copy views;
- ``read_pytorch(mmap=True)``: copy-on-write map of the file, nothing read until touched; reported both as
  "load" (what the call costs) and "load + touch" (plus reading one byte of every 4 KiB page of every tensor,
  so all the data comes from the page cache: the fair comparison with torch.load).

Memory: one fresh child process per variant. After its imports the child resets its RSS high-water mark
(``/proc/self/clear_refs`` = 5), notes its current RSS, runs the variant (touching every page of every tensor,
so lazy variants pay in full) and reports the high-water mark ``VmHWM`` minus that baseline: the peak resident
memory the load added, file-backed mapped pages included. ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` is
printed too, but it cannot be reset and Linux carries the *parent's* high-water mark across ``vfork``+``exec``
into it, so after a large parent it over-reports.

Run: python bench/import.py [--tensors N] [--rounds R] [--dir DIR] [--skip-memory]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

SHAPE = (1000, 1000)


def make_file(path: Path, n: int) -> int:
    import torch

    g = torch.Generator().manual_seed(0)
    sd = {f"layers.{i}.weight": torch.randn(SHAPE, generator=g) for i in range(n)}
    torch.save(sd, path)
    return path.stat().st_size


def touch_ember(f: Any) -> float:
    total = 0
    for t in f.tensors.values():
        total += int(t.as_bits().reshape(-1).view(np.uint8)[::4096].sum())
    return float(total)


def touch_torch(sd: dict[str, Any]) -> float:
    total = 0
    for t in sd.values():
        total += int(t.reshape(-1).numpy().view(np.uint8)[::4096].sum())
    return float(total)


def variants(path: Path) -> dict[str, Any]:
    import torch

    from ember_import import read_pytorch

    return {
        "torch.load(weights_only=True)": lambda: torch.load(path, weights_only=True),
        "ember read_pytorch": lambda: read_pytorch(path),
        "ember read_pytorch(mmap) load": lambda: read_pytorch(path, mmap=True),
        "ember read_pytorch(mmap) load + touch": lambda: touch_ember(read_pytorch(path, mmap=True)),
    }


def throughput(path: Path, size: int, rounds: int) -> None:
    ops = variants(path)
    times: dict[str, list[float]] = {k: [] for k in ops}
    for fn in ops.values():  # warm-up: page cache, imports
        fn()
    for _ in range(rounds):
        for name, fn in ops.items():  # interleaved: machine noise hits every contender alike
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    ref = med["torch.load(weights_only=True)"]
    print(f"\nfile: {path.stat().st_size / 1e6:.0f} MB; median of {rounds} interleaved rounds (file in page cache)")
    print(f"{'variant':42s} {'time':>9s} {'GB/s':>7s} {'vs torch':>9s}")
    for name, t in med.items():
        print(f"{name:42s} {t * 1e3:7.1f}ms {size / t / 1e9:7.2f} {ref / t:8.2f}x")
    print("(vs torch = torch time / variant time: > 1 is faster than torch.load)")


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def child(variant: str, path: str) -> None:
    import torch  # noqa: F401 - every child pays the same imports before the baseline

    from ember_import import read_pytorch

    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset the RSS high-water mark VmHWM (Linux >= 4.0)
        reset = True
    except OSError:
        reset = False
    base = _status_kib("VmRSS")
    if variant == "torch":
        import torch as t

        obj: Any = t.load(path, weights_only=True)
        touch_torch(obj)
    else:
        obj = read_pytorch(path, mmap=(variant == "ember-mmap"))
        touch_ember(obj)
    hwm = _status_kib("VmHWM")
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"peak_kib": hwm - base, "maxrss_kib": maxrss - base, "end_kib": _status_kib("VmRSS") - base,
                      "hwm_reset": reset}))


def memory(path: Path, size: int) -> None:
    print(f"\npeak resident memory added by the load (fresh process each, every page touched), "
          f"file {size / 2**20:.0f} MiB")
    print(f"{'variant':24s} {'peak MiB':>9s} {'peak/file':>10s} {'end MiB':>8s} {'ru_maxrss MiB':>12s}")
    for variant in ("torch", "ember-read", "ember-mmap"):
        out = subprocess.run([sys.executable, __file__, "--child", variant, str(path)], check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        print(f"{variant:24s} {r['peak_kib'] / 1024:9.0f} {r['peak_kib'] * 1024 / size:9.2f}x "
              f"{r['end_kib'] / 1024:8.0f} {r['maxrss_kib'] / 1024:12.0f}"
              + ("" if r["hwm_reset"] else "  (high-water not reset)"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tensors", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("VARIANT", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as d:
        path = Path(d) / "state_dict.pt"
        size = make_file(path, args.tensors)
        throughput(path, size, args.rounds)
        if not args.skip_memory:
            memory(path, size)


if __name__ == "__main__":
    main()
