"""``python -m ember_train summary DIR`` / ``python -m ember_train plot DIR [--compare OTHER ...]``."""

from ._cli import main

raise SystemExit(main())
