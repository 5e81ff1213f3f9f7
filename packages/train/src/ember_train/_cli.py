"""The ``ember-train`` command (also ``python -m ember_train``): ``summary ARTIFACT_DIR`` and
``plot ARTIFACT_DIR [--compare OTHER_DIR ...] [-o OUTPUT_DIR]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._errors import LearnerError
from ._summary import LearnerSummary

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember-train", description="Inspect Ember training artifact directories.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("summary", help="print the summary table (best and last value per metric and split)")
    p.add_argument("artifact_dir")
    p = sub.add_parser("plot", help="draw the metric curves from the logs (needs matplotlib)")
    p.add_argument("artifact_dir")
    p.add_argument("--compare", nargs="+", default=[], metavar="OTHER_DIR",
                   help="other artifact directories drawn on the same figures")
    p.add_argument("-o", "--output", default=None,
                   help="folder for <Metric>.png and index.html (default ARTIFACT_DIR/plots, or "
                        "ARTIFACT_DIR/plots/compare with --compare)")
    args = parser.parse_args(argv)
    try:
        if args.command == "summary":
            sys.stdout.write(LearnerSummary.from_dir(args.artifact_dir).table())
            return 0
        from .plots import plot_runs, require_matplotlib

        require_matplotlib()
        out = args.output or Path(args.artifact_dir) / "plots" / ("compare" if args.compare else "")
        written = plot_runs([args.artifact_dir, *args.compare], out)
        print(f"wrote {len(written) - 2} figure(s), {written[-2].name} and {written[-1]}")
        return 0
    except (FileNotFoundError, LearnerError) as exc:
        print(f"ember-train: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
