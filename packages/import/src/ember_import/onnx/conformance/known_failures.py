"""The node cases each backend is known to fail, ``{case name or fnmatch pattern: reason}``.

Strict: a listed case that passes, or an entry that names no case of the suite, fails the run. Keep the
reason specific (the missing element type, the unsupported attribute), so the list says what is left to do.
"""

from __future__ import annotations

__all__ = ["KNOWN_FAILURES"]

#: shared by every backend (input the importer cannot represent at all)
_COMMON: dict[str, str] = {}

NUMPY: dict[str, str] = {**_COMMON}
TORCH: dict[str, str] = {**_COMMON}
JAX: dict[str, str] = {**_COMMON}

KNOWN_FAILURES: dict[str, dict[str, str]] = {"numpy": NUMPY, "torch": TORCH, "jax": JAX}
