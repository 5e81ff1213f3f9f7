"""The fault suite's runner: every corpus case loaded in a child process under limits, its outcome classified.

``python -m tests.fault [--full] [-k PATTERN] [-v]`` discovers ``tests/fault/corpus_*.py``, calls each module's
``cases(full)``, writes each case's bytes to ``<tmp>/<n>/<case.filename>`` and loads it in a fresh
``python -c`` child that first sets ``RLIMIT_AS`` to ``case.memory_mib`` (before importing anything), with
``case.seconds`` of wall time. The child reports one JSON line; the parent sorts the outcome into

- ``clean error``: an ``ember.EmberError`` whose message names the file (passes when ``expect == "error"``);
- ``exact load``: it loaded, ``expect == "exact"`` and the case's check passed;
- ``hang``: the time limit ran out;
- ``crash``: a signal, no verdict, a ``MemoryError``, any other exception type, an EmberError that does not name
  the file, or a check that itself failed with something else than ``AssertionError``;
- ``silent difference``: it loaded while ``expect == "error"``, or the check raised ``AssertionError``;
- ``false refusal``: a clean error where an exact load was expected.

BLAS and OpenMP pools are held to one thread in the child (``OPENBLAS_NUM_THREADS=1``...) and glibc to two malloc
arenas: each pool thread and arena reserves address space, which ``RLIMIT_AS`` counts (measured: numpy, ember and
ember_import imported take about 115 MiB of address space that way, 155 MiB with OpenBLAS's default threads on two
cores, and up to a few GiB on a many-core machine without the variables).
"""

from __future__ import annotations

import argparse
import fnmatch
import importlib
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from ._case import Case

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

CLEAN, EXACT, HANG, CRASH, SILENT, REFUSED = (
    "clean error", "exact load", "hang", "crash", "silent difference", "false refusal",
)
CLASSES = (CLEAN, EXACT, HANG, CRASH, SILENT, REFUSED)
_PLURAL = {CLEAN: "clean errors", EXACT: "exact loads", HANG: "hangs", CRASH: "crashes",
           SILENT: "silent differences", REFUSED: "false refusals"}
_VERDICT = "FAULT-VERDICT "

#: the child: limits first, then imports, then one JSON verdict line on stdout
_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    limit = int(sys.argv[4]) << 20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    def say(**verdict):
        with open("/proc/self/status") as f:  # VmHWM: this process's peak RSS (ru_maxrss survives exec)
            hwm = [ln for ln in f if ln.startswith("VmHWM:")]
        verdict["peak_mib"] = int(hwm[0].split()[1]) // 1024 if hwm else None
        sys.stdout.write("@VERDICT@" + json.dumps(verdict) + "\\n")
        sys.stdout.flush()

    def call(spec, arg):
        import importlib
        module, name = spec.split(":")
        return getattr(importlib.import_module(module), name)(arg)

    path, loader, check = sys.argv[1], sys.argv[2], sys.argv[3]
    try:
        import ember
        loaded = call(loader, path)
    except BaseException as exc:
        try:
            ember_error = isinstance(exc, ember.EmberError)
        except NameError:
            ember_error = False
        say(outcome="raised", type=type(exc).__module__ + "." + type(exc).__qualname__, ember=ember_error,
            names_file=path in str(exc), message=str(exc)[:2000])
    else:
        if not check:
            say(outcome="loaded", check="none")
        else:
            try:
                call(check, loaded)
            except AssertionError as exc:
                say(outcome="loaded", check="failed", message=str(exc)[:2000])
            except BaseException as exc:
                say(outcome="loaded", check="error", type=type(exc).__qualname__, message=str(exc)[:2000])
            else:
                say(outcome="loaded", check="passed")
    """
).replace("@VERDICT@", _VERDICT)

#: environment of every child: one thread per pool, two malloc arenas, the repository first on the path
CHILD_ENV = {
    "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMEXPR_NUM_THREADS": "1",
    "VECLIB_MAXIMUM_THREADS": "1", "MALLOC_ARENA_MAX": "2", "PYTHONDONTWRITEBYTECODE": "1",
}


@dataclass(frozen=True)
class Result:
    case: Case
    cls: str
    passed: bool
    detail: str
    seconds: float
    peak_mib: int | None = None

    def line(self) -> str:
        peak = f", {self.peak_mib} MiB" if self.peak_mib is not None else ""
        return f"FAIL {self.case.name} [{self.cls}] ({self.seconds:.1f} s{peak}): {self.detail}"


def discover(full: bool, pattern: str | None = None, directory: Path = HERE) -> list[Case]:
    """Every case of every ``corpus_*.py`` in ``directory`` (module ``tests.fault.corpus_*``), optionally only
    those whose name matches ``pattern`` (a substring, or a glob when it holds ``*?[``)."""
    cases: list[Case] = []
    for file in sorted(directory.glob("corpus_*.py")):
        module = importlib.import_module(f"tests.fault.{file.stem}")
        cases.extend(module.cases(full))
    names = Counter(c.name for c in cases)
    dups = sorted(n for n, k in names.items() if k > 1)
    if dups:
        raise ValueError(f"fault corpus: case names used more than once: {', '.join(dups)}")
    if pattern:
        glob = any(ch in pattern for ch in "*?[")
        cases = [c for c in cases if (fnmatch.fnmatch(c.name, pattern) if glob else pattern in c.name)]
    return cases


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(CHILD_ENV)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def run_case(case: Case, workdir: Path) -> Result:
    """Write ``case`` under ``workdir`` and load it in a limited child; the classified :class:`Result`."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / case.filename
    path.write_bytes(case.data)
    argv = [sys.executable, "-c", _CHILD, str(path), case.loader, case.check or "", str(int(case.memory_mib))]
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=case.seconds, env=_env(), cwd=ROOT)
    except subprocess.TimeoutExpired:
        return Result(case, HANG, False, f"no outcome after {case.seconds:g} s", time.monotonic() - start)
    seconds = time.monotonic() - start
    verdicts = [ln[len(_VERDICT):] for ln in proc.stdout.splitlines() if ln.startswith(_VERDICT)]
    if proc.returncode < 0:
        return Result(case, CRASH, False, f"killed by signal {-proc.returncode}; {proc.stderr[-300:]!r}", seconds)
    if not verdicts:
        return Result(case, CRASH, False, f"exit {proc.returncode} without a verdict: {proc.stderr[-300:]!r}", seconds)
    v = json.loads(verdicts[-1])
    return classify(case, v, seconds, str(path))


def classify(case: Case, v: dict[str, Any], seconds: float, path: str) -> Result:
    """The class of a child's verdict ``v`` for ``case`` (see the module docstring)."""
    peak = v.get("peak_mib")
    message = v.get("message", "")
    if v["outcome"] == "raised":
        kind = v["type"]
        if kind.endswith("MemoryError"):
            return Result(case, CRASH, False, f"MemoryError escaped: {message[:200]}", seconds, peak)
        if not v["ember"]:
            return Result(case, CRASH, False, f"{kind} (not an EmberError): {message[:200]}", seconds, peak)
        if not v["names_file"]:
            return Result(case, CRASH, False, f"{kind} does not name the file: {message[:200]}", seconds, peak)
        if case.expect == "exact":
            return Result(case, REFUSED, False, f"expected an exact load, got {kind}: {message[:200]}", seconds,
                          peak)
        return Result(case, CLEAN, True, kind, seconds, peak)
    if case.expect == "error":
        return Result(case, SILENT, False, "loaded, but the file must be refused", seconds, peak)
    check = v.get("check")
    if check == "failed":
        return Result(case, SILENT, False, f"loaded with different values: {message[:300]}", seconds, peak)
    if check == "error":
        return Result(case, CRASH, False, f"the check raised {v.get('type')}: {message[:200]}", seconds, peak)
    return Result(case, EXACT, True, f"check {check}", seconds, peak)


def run(cases: Sequence[Case], *, verbose: bool = False, out: TextIO | None = None) -> list[Result]:
    """Run ``cases`` one by one (in a fresh temporary directory), printing failures as they come."""
    stream = out if out is not None else sys.stdout
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="ember-fault-") as tmp:
        for i, case in enumerate(cases):
            r = run_case(case, Path(tmp) / str(i))
            results.append(r)
            if not r.passed:
                print(r.line(), file=stream, flush=True)
            elif verbose:
                print(f"ok   {case.name} [{r.cls}] ({r.seconds:.1f} s, {r.peak_mib} MiB)", file=stream, flush=True)
    return results


def summary(results: Iterable[Result]) -> str:
    """``N passed, N failed`` and the count of each class."""
    results = list(results)
    passed = sum(r.passed for r in results)
    counts = Counter(r.cls for r in results)
    per = ", ".join(f"{counts.get(c, 0)} {_PLURAL[c] if counts.get(c, 0) != 1 else c}" for c in CLASSES)
    return f"{passed} passed, {len(results) - passed} failed ({len(results)} cases: {per})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fault", description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="every case (default: the fast subset)")
    parser.add_argument("-k", dest="pattern", help="only cases whose name contains PATTERN (or matches a glob)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print passing cases too")
    parser.add_argument("--list", action="store_true", help="list the selected cases and exit")
    args = parser.parse_args(argv)
    cases = discover(args.full, args.pattern)
    if args.list:
        for c in cases:
            print(f"{c.name}  {c.filename}  expect={c.expect}  {len(c.data)} bytes  {c.memory_mib} MiB  "
                  f"{c.seconds:g} s")
        return 0
    results = run(cases, verbose=args.verbose)
    print(summary(results))
    return 0 if all(r.passed for r in results) else 1
