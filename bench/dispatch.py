"""Dispatch overhead: Ember on the numpy backend against raw numpy, in the same process.

Each case runs the same work twice: through ``ember.Tensor`` ops on ``ember.backend("numpy")``
and as the plain numpy expression a numpy user would write. The two are timed in alternating
batches (interleaved, so that load from other processes hits both alike), and the table gives
the median time per call of each, Ember's overhead in microseconds and the ratio Ember / numpy
of the medians (the verdict uses it). The ratio of the fastest batches ("min ratio") is printed
too: it is the steadier figure when other processes load the machine.
A benchmark, not a test: it never fails on time, it only reports (ARCHITECTURE.md, "Performance").

BLAS threads are set with threadpoolctl: 1 thread for every case, and matmul again with 2
(PERF-NOTES: a second BLAS thread can help big matmuls but hurts under load).

The default clock is the process's CPU time (``time.process_time``, every thread of this
process): time during which other processes hold the cores is not counted, which makes the
figures usable on a loaded machine. With 2 BLAS threads it adds up both threads' time, so that
row compares work, not latency; ``--clock wall`` times with ``time.perf_counter`` instead.

Usage::

    python bench/dispatch.py            # under a minute on 2 cores
    python bench/dispatch.py --repeats 31 --batch-ms 40   # steadier figures
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

import ember
from ember import Tensor

Fn = Callable[[], object]


@dataclass
class Case:
    name: str
    ember_fn: Fn
    numpy_fn: Fn
    target: float | None  # the ratio the issue asks for, None if it sets none
    threads: int = 1


@dataclass
class Result:
    case: Case
    ember_s: float  # medians
    numpy_s: float
    ember_min: float
    numpy_min: float

    @property
    def ratio(self) -> float:
        return self.ember_s / self.numpy_s

    @property
    def ratio_min(self) -> float:
        return self.ember_min / self.numpy_min


#: the clock batches are timed with; set by ``--clock``
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = time.process_time


def _per_call(fn: Fn, n: int) -> float:
    t0 = _clock()
    for _ in range(n):
        fn()
    return (_clock() - t0) / n


def _batch_size(fn: Fn, batch_s: float) -> int:
    """Calls per batch so that one batch of ``fn`` takes about ``batch_s`` seconds."""
    n = 1
    while True:
        t = _per_call(fn, n)
        if t * n >= batch_s / 8 or n >= 1 << 20:
            return max(1, round(batch_s / t))
        n *= 4


def measure(case: Case, repeats: int, batch_s: float) -> Result:
    """Median seconds per call of each side over ``repeats`` interleaved batches."""
    with threadpool_limits(limits=case.threads, user_api="blas"):
        for fn in (case.ember_fn, case.numpy_fn):  # warm-up (first-call caches, page faults)
            fn()
        n = _batch_size(case.numpy_fn, batch_s)
        ember_t: list[float] = []
        numpy_t: list[float] = []
        for r in range(repeats):
            # alternate which side goes first, so neither always follows the other
            if r % 2:
                numpy_t.append(_per_call(case.numpy_fn, n))
                ember_t.append(_per_call(case.ember_fn, n))
            else:
                ember_t.append(_per_call(case.ember_fn, n))
                numpy_t.append(_per_call(case.numpy_fn, n))
    return Result(case, statistics.median(ember_t), statistics.median(numpy_t), min(ember_t), min(numpy_t))


def cases() -> list[Case]:
    device = ember.backend("numpy").device()  # float32 by default
    rng = np.random.default_rng(0)

    def pair(*shape: int) -> tuple[np.ndarray, Tensor]:
        x = rng.standard_normal(shape, dtype=np.float32)
        return x, Tensor.from_data(x, device)

    out: list[Case] = []
    for n in (4, 1000):
        (x, a), (y, b) = pair(n, n), pair(n, n)
        out.append(Case(f"add {n}x{n}", lambda a=a, b=b: a + b, lambda x=x, y=y: x + y, 3.0 if n == 4 else 1.05))
    (x, a), (y, b) = pair(2048, 2048), pair(2048, 2048)
    for threads in (1, 2):
        out.append(Case(f"matmul 2048x2048, {threads} BLAS thread{'s' * (threads > 1)}",
                        lambda a=a, b=b: a @ b, lambda x=x, y=y: x @ y, 1.05, threads))
    for n in (4, 1000):
        x, a = pair(n, n)
        out.append(Case(f"sum_dim(1) {n}x{n}", lambda a=a: a.sum_dim(1),
                        lambda x=x: x.sum(axis=1, keepdims=True), None))

    (x, a), (y, b) = pair(64, 64), pair(64, 64)

    def chain_ember(a: Tensor = a, b: Tensor = b) -> Tensor:
        t = a
        for _ in range(5):  # 4 ops a round: mul, add, tanh, sub
            t = (t * 0.5 + b).tanh() - a
        return t

    def chain_numpy(x: np.ndarray = x, y: np.ndarray = y) -> np.ndarray:
        t = x
        for _ in range(5):
            t = np.tanh(t * 0.5 + y) - x
        return t

    out.append(Case("chain of 20 elementwise ops 64x64", chain_ember, chain_numpy, None))
    return out


def check_same_work(case: Case) -> None:
    """The two sides must compute the same values (not a timing check)."""
    got = case.ember_fn()
    assert isinstance(got, Tensor)
    np.testing.assert_allclose(got.to_data().to_numpy(), np.asarray(case.numpy_fn()), rtol=1e-4, atol=1e-3)


def report(results: list[Result]) -> str:
    header = ("case", "ember µs", "numpy µs", "overhead µs", "ratio", "min ratio", "target", "")
    rows = [header]
    for r in results:
        target = "-" if r.case.target is None else f"<= {r.case.target:g}x"
        verdict = "" if r.case.target is None else ("ok" if r.ratio <= r.case.target else "OVER")
        rows.append((r.case.name, f"{r.ember_s * 1e6:,.2f}", f"{r.numpy_s * 1e6:,.2f}",
                     f"{(r.ember_s - r.numpy_s) * 1e6:+,.2f}", f"{r.ratio:.3f}x", f"{r.ratio_min:.3f}x", target,
                     verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for k, row in enumerate(rows):
        cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:-1], widths[1:-1])] + [row[-1]]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=21, help="interleaved batches per side (median taken)")
    parser.add_argument("--batch-ms", type=float, default=20.0, help="target duration of one batch")
    parser.add_argument("-k", default="", help="only cases whose name contains this text")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="cpu",
                        help="cpu: this process's CPU time (default, robust to load); wall: elapsed time")
    args = parser.parse_args(argv)
    global _clock
    _clock = CLOCKS[args.clock]

    blas = [f"{i.get('internal_api')} {i.get('version')}" for i in threadpool_info() if i.get("user_api") == "blas"]
    print(f"ember {ember.__version__} / numpy {np.__version__} ({', '.join(blas) or 'BLAS unknown'}) / "
          f"Python {platform.python_version()} / {platform.machine()}")
    print(f"median of {args.repeats} interleaved batches of ~{args.batch_ms:g} ms per side; float32; "
          f"{args.clock} clock\n")
    results = []
    for case in cases():
        if args.k not in case.name:
            continue
        check_same_work(case)
        results.append(measure(case, args.repeats, args.batch_ms / 1000))
        print(f"  measured {case.name}", file=sys.stderr)
    print(report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
