"""The fault suite's unit: one hostile or malformed file and what loading it must end in (ARCHITECTURE.md, "Trust").

Each corpus module (``tests/fault/corpus_<area>.py``: ``pt``, ``onnx``, ``record``, ``safetensors``...) exposes
``cases(full: bool) -> list[Case]``; ``full=False`` is the fast subset the normal ``nox -s tests`` run takes,
``full=True`` everything (``nox -s fault``). The runner (``python -m tests.fault``) writes each case's bytes to
``<tmp>/<case.filename>``, loads it in a child process under a memory limit (``RLIMIT_AS``) and a time limit, and
sorts the outcome into: a clean error (an ``ember.EmberError`` whose message names the file), an exact load (the
loader returned and ``expect`` agrees), a hang (time limit), a crash (a signal, a ``MemoryError``, any other
exception type, or an error that does not name the file) and a silent difference (it loaded, but not what
``expect`` says).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["error", "exact"]


@dataclass(frozen=True)
class Case:
    #: unique, readable id, e.g. ``"pt/stride0-views"``
    name: str
    #: the file name the bytes are written to (its suffix picks the format for loaders that look at it)
    filename: str
    #: the file's whole content
    data: bytes
    #: ``"package.module:function"``, called as ``function(path: str) -> object`` in the child process
    loader: str
    #: what must happen: ``"error"`` (a clean EmberError naming the file) or ``"exact"`` (it loads)
    expect: Outcome = "error"
    #: for ``"exact"``: ``"package.module:function"`` called as ``function(loaded) -> None`` in the child; it
    #: raises ``AssertionError`` when the loaded value is not what the file holds (a silent difference)
    check: str | None = None
    #: child's address-space limit in MiB and wall-time limit in seconds
    memory_mib: int = 1024
    seconds: float = 60.0
    #: free text: why this file is hostile and what it once did
    note: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
