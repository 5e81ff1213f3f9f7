"""What ``threads`` does on each backend: the cores a matmul loop keeps busy, with and without ``threads=1``.

Each case runs in a fresh process (the settings are process-wide, and jax reads its flag once, at start): the
backend is created with the option first, then float32 matmuls ``[N, N] @ [N, N]`` run for about a second and the
process's CPU time (user + system, ``resource.getrusage``) is divided by the wall time: about 1.0 means one core,
about the machine's core count means all of them. A benchmark, not a test: it prints the table and asserts nothing.

Run: ``python bench/threads.py [--n 1024] [--seconds 1.0] [--only numpy,torch,jax]``. On a 2-core machine the
difference is at most 2x; the figures worth quoting come from a machine with more cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

_CHILD = r"""
import json, resource, sys, time
import ember
from ember import Distribution, Tensor

name, threads, n, seconds = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
options = {} if threads is None else {"threads": threads}
device = ember.backend(name, **options).device()
a = Tensor.random([n, n], Distribution.uniform(-1.0, 1.0), device)
(a @ a).sum().to_data()  # warm up (and compile, on jax)
t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
steps = 0
while time.perf_counter() - t0 < seconds:
    (a @ a).sum().to_data()
    steps += 1
wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(json.dumps({"cores_busy": cpu / wall, "ms_per_matmul": 1e3 * wall / steps}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--only", default="numpy,torch,jax")
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPUs; float32 matmul [{args.n}, {args.n}]; CPU time / wall time of the loop")
    print(f"{'backend':8} {'threads':8} {'cores busy':>10} {'ms / matmul':>12}")
    for name in args.only.split(","):
        for threads in (None, 1):
            proc = subprocess.run([sys.executable, "-c", _CHILD, name, json.dumps(threads), str(args.n),
                                   str(args.seconds)], capture_output=True, text=True, timeout=600)
            if proc.returncode:
                print(f"{name:8} {threads!s:8} failed: {proc.stderr.strip().splitlines()[-1:]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"{name:8} {threads!s:8} {r['cores_busy']:10.2f} {r['ms_per_matmul']:12.2f}")


if __name__ == "__main__":
    main()
