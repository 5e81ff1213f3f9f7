"""Bounds for reading untrusted files: bounded summaries for messages and the memory budget of one load.

A hostile file is small and describes something huge: a tuple DAG whose ``repr`` is exponential, views that
repeat one element billions of times, tensors shared under thousands of keys. ARCHITECTURE.md, "Trust": parsing is
bounded in time and memory, messages never ``repr`` attacker-sized objects, and a load materialises at most a
budget of bytes.

The budget (``max_bytes``) counts the bytes of every distinct tensor a load yields (a tensor shared under several
keys, or declared twice with the same view, counts once) plus storages that must be decompressed (a stored entry
is the file's own bytes). A ``torch.save`` file's tensors need about its own size; only repeated elements (zero or
overlapping strides) or one storage viewed many times go beyond it. Default: ``max(4 x file size, 256 MiB)``, or
the environment variable ``EMBER_IMPORT_MAX_BYTES`` (bytes; suffixes ``K``/``M``/``G``/``T`` accepted), or
``LoadArgs.with_max_bytes`` / ``read_pytorch(max_bytes=...)``. torch and safetensors need no such budget since
they keep views as views; Ember materialises every view as its own contiguous array.
"""

from __future__ import annotations

import os
from typing import Any

from ._errors import ModelImportError

__all__ = ["Budget", "ENV_MAX_BYTES", "default_max_bytes", "summary"]

ENV_MAX_BYTES = "EMBER_IMPORT_MAX_BYTES"
_FLOOR = 256 << 20
_SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def default_max_bytes(file_size: int) -> int:
    """The budget of one load of a ``file_size``-byte file: ``$EMBER_IMPORT_MAX_BYTES`` if set, else
    ``max(4 * file_size, 256 MiB)``.

    Raises:
        ModelImportError: the environment variable is not a byte count.
    """
    raw = os.environ.get(ENV_MAX_BYTES, "").strip()
    if not raw:
        return max(4 * int(file_size), _FLOOR)
    text = raw.upper().removesuffix("B").removesuffix("I")
    scale = _SUFFIX.get(text[-1:], 1)
    digits = text[:-1] if text[-1:] in _SUFFIX else text
    try:
        value = int(digits) * scale
    except ValueError:
        value = -1
    if value < 0:
        raise ModelImportError(
            f"{ENV_MAX_BYTES}={raw[:40]!r}: expected a byte count such as 2000000000 or 8G. Fix or unset the "
            "environment variable."
        )
    return value


def summary(obj: Any, limit: int = 80) -> str:
    """A ``repr``-like text of ``obj`` of at most ``limit`` characters, built in bounded time.

    Unlike ``f"{obj!r:.80}"`` (which builds the whole ``repr`` first, exponential for a shared-tuple DAG and
    gigabytes for a huge string), containers are visited only until the text is long enough.
    """
    out: list[str] = []
    size = 0

    def put(text: str) -> bool:
        nonlocal size
        out.append(text)
        size += len(text)
        return size < limit

    def walk(v: Any, depth: int) -> bool:
        if isinstance(v, (tuple, list, set, frozenset, dict)):
            brackets = {tuple: "()", list: "[]", dict: "{}"}.get(type(v), "{}")
            opens, closes = brackets[0], brackets[1]
            if depth > 8:
                return put("...")
            if not put(opens):
                return False
            items = v.items() if isinstance(v, dict) else v
            for i, item in enumerate(items):
                if i and not put(", "):
                    return False
                if isinstance(v, dict):
                    if not walk(item[0], depth + 1) or not put(": ") or not walk(item[1], depth + 1):
                        return False
                elif not walk(item, depth + 1):
                    return False
            return put(closes)
        if isinstance(v, (str, bytes, bytearray)):
            head = v[: limit + 1]
            text = repr(head if not isinstance(head, bytearray) else bytes(head))
            return put(text + ("..." if len(v) > len(head) else ""))
        if isinstance(v, (int, float, complex, bool, type(None))):
            if isinstance(v, int) and v.bit_length() > 256:
                return put(f"<int of {v.bit_length()} bits>")
            return put(repr(v))
        return put(f"<{type(v).__name__}>") if type(v).__repr__ is object.__repr__ else put(repr(v)[: limit + 1])

    walk(obj, 0)
    text = "".join(out)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class Budget:
    """Counts the bytes a load materialises and refuses to go past ``limit``, naming the file.

    Args:
        limit: the most bytes (see the module docstring for what counts).
        origin: the file, quoted, for messages.
    """

    __slots__ = ("limit", "origin", "used")

    def __init__(self, limit: int, origin: str) -> None:
        self.limit = int(limit)
        self.origin = origin
        self.used = 0

    def take(self, nbytes: int, what: str) -> None:
        """Count ``nbytes`` more for ``what`` (e.g. ``"a tensor of size [3, 4] (float32)"``).

        Raises:
            ModelImportError: the total would exceed the limit.
        """
        if self.used + nbytes > self.limit:
            raise ModelImportError(
                f"{self.origin}: {what} would bring what this load materialises to {self.used + nbytes} bytes, above "
                f"the budget of {self.limit} bytes (the file's tensors repeat or overlap their storages' elements, "
                f"or the file is corrupted or malicious). If the file is trusted, raise the budget with "
                f"LoadArgs.with_max_bytes(...), read_pytorch(max_bytes=...) or the {ENV_MAX_BYTES} environment "
                "variable."
            )
        self.used += nbytes
