"""``python -m ember_import.onnx.conformance --backend NAME [-k FILTER] [--per-op] [-v]``.

Prints pass/fail counts (per op with ``--per-op``), the unexpected failures with their messages, listed
cases that now pass and stale list entries; exits 1 when any of those three is non-empty, else 0.
``--all-failures`` prints every failing case (to rebuild a known-failures list).
"""

from __future__ import annotations

import argparse
import sys

from ._runner import run_suite


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ember_import.onnx.conformance", description=__doc__)
    parser.add_argument("--backend", default="numpy", help="an installed Ember backend (default numpy)")
    parser.add_argument("-k", dest="filter", default=None, help="regular expression selecting case names")
    parser.add_argument("--per-op", action="store_true", help="print passed/total per operator")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case as it finishes")
    parser.add_argument("--all-failures", action="store_true", help="print every failing case and why")
    parser.add_argument("--no-known", action="store_true", help="ignore the known-failures list")
    args = parser.parse_args(argv)

    def progress(r: object) -> None:
        if args.verbose:
            print(f"{r.status.upper():5} {r.name} ({r.seconds * 1000:.0f} ms) {r.message[:300]}")  # type: ignore[attr-defined]

    report = run_suite(args.backend, args.filter, {} if args.no_known else None, progress)
    total = len(report.results)
    failed = [r for r in report.results if r.status != "pass"]
    if args.per_op:
        print(f"{'operator':<34} passed / cases")
        for op, (good, n) in report.per_op().items():
            print(f"{op:<34} {good:>6} / {n}")
    if args.all_failures:
        for r in failed:
            print(f"{r.status.upper():5} {r.name}: {r.message[:400]}")
    if report.unexpected_failures and not args.all_failures:
        print(f"\n{len(report.unexpected_failures)} unexpected failure(s):")
        for r in report.unexpected_failures:
            print(f"  {r.name}: {r.message[:400]}")
    if report.unexpected_passes:
        print(f"\n{len(report.unexpected_passes)} listed case(s) now pass; remove them from known_failures.py:")
        for name in report.unexpected_passes:
            print(f"  {name}")
    if report.stale:
        print(f"\n{len(report.stale)} known-failures entr(y/ies) match no case: {', '.join(report.stale)}")
    print(f"\nONNX node suite on {args.backend}: {report.passed} passed, {len(failed)} failed of {total} cases "
          f"({len(report.unexpected_failures)} unexpected failures, {len(report.unexpected_passes)} unexpected "
          f"passes, {len(report.stale)} stale entries)")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
