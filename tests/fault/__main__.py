"""``python -m tests.fault [--full] [-k PATTERN] [-v] [--list]``: the fault suite (see :mod:`tests.fault._runner`)."""

from __future__ import annotations

from ._runner import main

raise SystemExit(main())
