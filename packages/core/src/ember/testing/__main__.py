"""``python -m ember.testing --backend NAME [pytest args...]``: run the conformance suite."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    import pytest

    args = list(sys.argv[1:] if argv is None else argv)
    backend = None
    if "--backend" in args:
        i = args.index("--backend")
        backend = args[i + 1]
        del args[i : i + 2]
    extra = ["--ember-backend", backend] if backend else []
    return int(pytest.main(["-p", "ember.testing.plugin", "--pyargs", "ember.testing.conformance", *extra, *args]))


if __name__ == "__main__":
    sys.exit(main())
