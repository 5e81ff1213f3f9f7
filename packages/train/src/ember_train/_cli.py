"""The ``ember-train`` command: ``summary ARTIFACT_DIR`` and ``plot ARTIFACT_DIR -o curves.png``."""

from __future__ import annotations

import argparse
import sys

from ._errors import LearnerError
from ._summary import LearnerSummary

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember-train", description="Inspect Ember training artifact directories.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("summary", help="print the summary table (best and last value per metric and split)")
    p.add_argument("artifact_dir")
    p = sub.add_parser("plot", help="draw the metric curves (needs matplotlib)")
    p.add_argument("artifact_dir")
    p.add_argument("-o", "--output", default="curves.png", help="image file to write (default curves.png)")
    args = parser.parse_args(argv)
    try:
        if args.command == "summary":
            sys.stdout.write(LearnerSummary.from_dir(args.artifact_dir).table())
            return 0
        from ._plot import plot_curves

        out = plot_curves(args.artifact_dir, args.output)
        print(f"wrote {out}")
        return 0
    except (FileNotFoundError, LearnerError) as exc:
        print(f"ember-train: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
