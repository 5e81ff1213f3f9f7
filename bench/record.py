"""Benchmark: saving and loading a ~100M-parameter float32 module (issue 4).

Not a test: prints times, throughput ratios and peak memory; never asserts. Ember's ``NamedMpkFileRecorder``
and ``SafetensorsFileRecorder`` against ``torch.save`` / ``torch.load(weights_only=True)`` of the same
weights (a state dict of ``torch.from_numpy`` views), interleaved in one process, medians over rounds.
Targets: load >= 0.8x torch's throughput; peak memory during save or load <= 1.5x the model's size.

The model: ``layers`` of ``Linear`` modules with ``weight [2500, 1000]`` and ``bias [1000]`` (float32, numpy
backend) until the requested parameter count; 100M parameters are 400 MB.

Load is measured twice: ``recorder.load(path)`` (file -> record of TensorData, what ``torch.load`` does: file
-> tensors) and ``module.load_file(path)`` (file -> a new module; the numpy backend adopts the record's
read-only arrays without a copy, other backends would copy each tensor).

Memory is measured in a fresh child process per operation: the parent samples the child's
``/proc/<pid>/status`` every 2 ms (a C call holding the GIL cannot hide a peak from another process) and
reports the peak above the child's baseline, both as total resident memory (``VmRSS``, includes clean
file pages mapped by ``mmap``, which the kernel can drop at any time) and anonymous memory (``RssAnon``,
what can cause an out-of-memory). Save baselines include the model itself (peak / model size >= 1.0);
load children start from a module of zeros (untouched ``calloc`` pages), so the result is the loaded
weights plus transients.

Digests (issue 28, ``--digests``): the cost of each candidate record digest on save and load of a ResNet-18-sized
record (11.7M float32 parameters, 45 MiB, 102 tensors) and a small one (an MLP, 0.1M parameters, 4 tensors), with
``NamedMpkFileRecorder`` (digest streamed) and ``SafetensorsFileRecorder`` (per-tensor digests), interleaved in one
process: ``none`` (no digest written, nothing verified), ``sum64`` (the checksum before digests), XXH3-64
(``xxhash``), CRC32C (``crc32c`` and ``google-crc32c``, which only takes ``bytes``: one copy per piece), BLAKE2b-256
and SHA-256 (``hashlib``). Reported as throughput ratios against ``none`` (1.00 = free, 0.50 = twice the time).
Candidates whose library is not installed are skipped.

Run: python bench/record.py [--params N] [--rounds R] [--dir DIR] [--skip-memory]
     python bench/record.py --digests [--rounds R] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

import ember
from ember import Tensor
from ember.module import Module, Param
from ember.record import NamedMpkFileRecorder, SafetensorsFileRecorder

D_IN, D_OUT = 2500, 1000


class Linear(Module):
    weight: Param
    bias: Param


class Big(Module):
    layers: list[Linear]


def n_layers(params: int) -> int:
    return max(1, round(params / (D_IN * D_OUT + D_OUT)))


def make_model(params: int, zeros: bool = False) -> Big:
    dev = ember.backend("numpy").device()
    rng = np.random.default_rng(0)
    layers = []
    for _ in range(n_layers(params)):
        if zeros:
            w, b = Tensor.zeros([D_IN, D_OUT], dev), Tensor.zeros([D_OUT], dev)
        else:
            w = Tensor.from_data(rng.standard_normal((D_IN, D_OUT), dtype=np.float32), dev)
            b = Tensor.from_data(rng.standard_normal(D_OUT, dtype=np.float32), dev)
        layers.append(Linear(weight=Param(w), bias=Param(b)))
    return Big(layers=layers)


def state_dict(model: Big) -> dict[str, Any]:
    import torch

    return {path: torch.from_numpy(p.val().to_numpy()) for path, p in model.named_params()}


# ---------------------------------------------------------------------------- throughput
def timed(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def throughput(args: argparse.Namespace, directory: Path) -> None:
    import torch

    model = make_model(args.params)
    size = sum(p.num_params() for p in model.params()) * 4
    sd = state_dict(model)
    target = make_model(args.params, zeros=True)
    mpk, st = NamedMpkFileRecorder(), SafetensorsFileRecorder()
    mpk_fast = NamedMpkFileRecorder(verify=False)
    paths = {"mpk": directory / "model.mpk", "st": directory / "model.safetensors", "pt": directory / "model.pt"}
    ops = {
        "save  ember NamedMpk": lambda: model.save_file(paths["mpk"], mpk),
        "save  ember safetensors": lambda: model.save_file(paths["st"], st),
        "save  torch.save": lambda: torch.save(sd, paths["pt"]),
        "load  ember NamedMpk (record)": lambda: mpk.load(paths["mpk"]),
        "load  ember NamedMpk (record, verify=False)": lambda: mpk_fast.load(paths["mpk"]),
        "load  ember NamedMpk (module.load_file)": lambda: target.load_file(paths["mpk"], mpk),
        "load  ember safetensors (record)": lambda: st.load(paths["st"]),
        "load  ember safetensors (module.load_file)": lambda: target.load_file(paths["st"], st),
        "load  torch.load(weights_only=True)": lambda: torch.load(paths["pt"], weights_only=True),
    }
    times: dict[str, list[float]] = {k: [] for k in ops}
    for _ in range(args.rounds):
        for name, fn in ops.items():  # interleaved: machine noise hits every contender alike
            times[name].append(timed(fn))
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\nmodel: {n_layers(args.params)} x Linear[{D_IN}, {D_OUT}] = {size / 4 / 1e6:.1f}M params, "
          f"{size / 2**20:.0f} MiB float32; median of {args.rounds} interleaved rounds")
    print(f"{'operation':48s} {'time':>9s} {'GB/s':>7s} {'vs torch':>9s}")
    for name, t in med.items():
        ref = med["save  torch.save"] if name.startswith("save") else med["load  torch.load(weights_only=True)"]
        print(f"{name:48s} {t * 1e3:7.0f}ms {size / t / 1e9:7.2f} {ref / t:8.2f}x")
    print("(vs torch > 1 means faster than torch; throughput ratio = torch time / ember time)")


# ---------------------------------------------------------------------------- memory (child processes)
def _status() -> tuple[int, int]:
    rss = anon = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
            elif line.startswith("RssAnon:"):
                anon = int(line.split()[1])
    return rss, anon


def child(op: str, params: int, directory: Path) -> None:
    import torch

    if op.startswith("save"):
        model = make_model(params)
        sd = state_dict(model) if op == "save-torch" else None
    else:
        target = make_model(params, zeros=True)
    rss, anon = _status()
    print(f"ready {rss} {anon}", flush=True)
    if op == "save-mpk":
        model.save_file(directory / "mem.mpk", NamedMpkFileRecorder())
    elif op == "save-safetensors":
        model.save_file(directory / "mem.safetensors", SafetensorsFileRecorder())
    elif op == "save-torch":
        torch.save(sd, directory / "mem.pt")
    elif op == "load-mpk":
        _out = target.load_file(directory / "model.mpk")
    elif op == "load-safetensors":
        _out = target.load_file(directory / "model.safetensors", SafetensorsFileRecorder())
    elif op == "load-torch":
        _out = torch.load(directory / "model.pt", weights_only=True)
    print("done", flush=True)  # the loaded weights (_out) stay alive until the process exits


def _sample(pid: int) -> tuple[int, int]:
    rss = anon = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("RssAnon:"):
                    anon = int(line.split()[1])
    except OSError:
        pass
    return rss, anon


def memory(args: argparse.Namespace, directory: Path) -> None:
    size_kib = n_layers(args.params) * (D_IN * D_OUT + D_OUT) * 4 / 1024
    print(f"\npeak memory above the child's baseline, as a multiple of the model size ({size_kib / 1024:.0f} MiB)")
    print(f"{'operation':22s} {'total RSS':>10s} {'anonymous':>10s}")
    for op in ("save-mpk", "save-safetensors", "save-torch", "load-mpk", "load-safetensors", "load-torch"):
        proc = subprocess.Popen(
            [sys.executable, __file__, "--child", op, "--params", str(args.params), "--dir", str(directory)],
            stdout=subprocess.PIPE, text=True,
        )
        lines: list[str] = []
        reader = threading.Thread(target=lambda p=proc, out=lines: out.extend(p.stdout), daemon=True)  # type: ignore[arg-type]
        reader.start()
        peak_rss = peak_anon = 0
        base: tuple[int, int] | None = None
        while proc.poll() is None:
            if base is None and lines and lines[0].startswith("ready"):
                _, r, a = lines[0].split()
                base = (int(r), int(a))
            if base is not None:
                r, a = _sample(proc.pid)
                peak_rss, peak_anon = max(peak_rss, r), max(peak_anon, a)
            time.sleep(0.002)
        reader.join()
        if base is None:
            print(f"{op:22s} child failed (exit {proc.returncode})")
            continue
        extra = 1.0 if op.startswith("save") else 0.0  # save baselines hold the model itself
        rss_x = extra + (peak_rss - base[0]) / size_kib
        anon_x = extra + (peak_anon - base[1]) / size_kib
        print(f"{op:22s} {rss_x:9.2f}x {anon_x:9.2f}x")
    print("(save: model + transients; load: loaded weights + transients. Target <= 1.5x)")


# ---------------------------------------------------------------------------- digests (issue 28)
def resnet18_record() -> dict[str, Any]:
    """The tensors of a ResNet-18 (He et al. 2016; torchvision's layout): convs, batch norms (4 vectors each), fc."""
    rng = np.random.default_rng(0)
    out: dict[str, Any] = {}

    def conv(name: str, c_out: int, c_in: int, k: int) -> None:
        out[name] = rng.standard_normal((c_out, c_in, k, k), dtype=np.float32)

    def bn(name: str, c: int) -> None:
        for field in ("weight", "bias", "running_mean", "running_var"):
            out[f"{name}.{field}"] = rng.standard_normal(c, dtype=np.float32)

    conv("conv1", 64, 3, 7)
    bn("bn1", 64)
    c_in = 64
    for i, c in enumerate((64, 128, 256, 512), start=1):
        for b in range(2):
            p = f"layer{i}.{b}"
            conv(f"{p}.conv1", c, c_in if b == 0 else c, 3)
            bn(f"{p}.bn1", c)
            conv(f"{p}.conv2", c, c, 3)
            bn(f"{p}.bn2", c)
            if b == 0 and c != c_in:
                conv(f"{p}.downsample.0", c, c_in, 1)
                bn(f"{p}.downsample.1", c)
        c_in = c
    out["fc.weight"] = rng.standard_normal((1000, 512), dtype=np.float32)
    out["fc.bias"] = rng.standard_normal(1000, dtype=np.float32)
    return {k.replace(".", "_"): ember.TensorData(v) for k, v in out.items()}


def small_record() -> dict[str, Any]:
    rng = np.random.default_rng(1)
    shapes = {"w1": (784, 128), "b1": (128,), "w2": (128, 10), "b2": (10,)}
    return {k: ember.TensorData(rng.standard_normal(s, dtype=np.float32)) for k, s in shapes.items()}


class _GoogleCrc32c:
    """google-crc32c's Checksum as a hasher (its update takes only read-only bytes: a copy per piece)."""

    def __init__(self) -> None:
        import google_crc32c

        self._c = google_crc32c.Checksum()

    def update(self, data: Any) -> None:
        self._c.update(bytes(data))

    def hexdigest(self) -> str:
        return self._c.hexdigest().decode()  # type: ignore[no-any-return]


def _register_candidates() -> list[str | None]:
    """The candidate algorithms (None: no digest), registering the bench-only ones with the record module."""
    from ember.record import _checksum

    names: list[str | None] = [None, "sum64", "xxh3-64"]
    _checksum.ALGORITHMS["sum64"] = _checksum.Sum64  # written here only to time it
    try:
        import crc32c

        _checksum.ALGORITHMS["crc32c"] = crc32c.CRC32CHash
        names.append("crc32c")
    except ImportError:
        print("crc32c not installed: skipped")
    try:
        import google_crc32c  # noqa: F401

        _checksum.ALGORITHMS["google-crc32c"] = _GoogleCrc32c
        names.append("google-crc32c")
    except ImportError:
        print("google-crc32c not installed: skipped")
    return [*names, "blake2b-256", "sha256"]


def digests(args: argparse.Namespace, directory: Path) -> None:
    records = {"resnet18": resnet18_record(), "small": small_record()}
    candidates = _register_candidates()
    kinds = {"mpk": NamedMpkFileRecorder, "safetensors": SafetensorsFileRecorder}
    for rname, record in records.items():
        size = sum(t.to_numpy().nbytes for t in record.values())
        reps = 1 if size > 1 << 20 else 50  # small records: time 50 saves/loads per sample
        print(f"\n{rname}: {len(record)} tensors, {size / 2**20:.2f} MiB; median of {args.rounds} interleaved rounds"
              f"{f' of {reps} repetitions' if reps > 1 else ''}")
        print(f"{'format':12s} {'digest':14s} {'save':>9s} {'ratio':>6s} {'load':>9s} {'ratio':>6s}")
        for kname, cls in kinds.items():
            times: dict[tuple[str | None, str], list[float]] = {}
            for _ in range(args.rounds):
                for alg in candidates:  # interleaved: machine noise hits every candidate alike
                    rec = cls(digest=alg)
                    path = directory / f"{rname}-{alg}.{rec.extension}"

                    def save(rec: Any = rec, path: Path = path, record: Any = record, reps: int = reps) -> None:
                        for _ in range(reps):
                            rec.record(record, path)

                    def load(rec: Any = rec, path: Path = path, reps: int = reps) -> None:
                        for _ in range(reps):
                            rec.load(path)

                    times.setdefault((alg, "save"), []).append(timed(save) / reps)
                    times.setdefault((alg, "load"), []).append(timed(load) / reps)
            med = {k: statistics.median(v) for k, v in times.items()}
            for alg in candidates:
                s, lo = med[(alg, "save")], med[(alg, "load")]
                print(f"{kname:12s} {alg or 'none':14s} {s * 1e3:7.2f}ms {med[(None, 'save')] / s:6.2f} "
                      f"{lo * 1e3:7.2f}ms {med[(None, 'load')] / lo:6.2f}")
    print("(ratio: throughput against no digest; 1.00 = free. Saves include the fsync of the atomic write.)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params", type=int, default=100_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=None)
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--digests", action="store_true", help="time the record digest candidates (issue 28)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.params, args.dir)
        return
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        directory = Path(tmp)
        if args.digests:
            digests(args, directory)
            return
        throughput(args, directory)
        if not args.skip_memory:
            memory(args, directory)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
