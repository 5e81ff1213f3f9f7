"""Fixtures shared by the torch backend's tests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def inductor_cache(tmp_path_factory: Any) -> Iterator[None]:
    """One inductor cache directory per test module (compiled kernels are reused between its tests, and no test
    reads kernels another module's run left behind). Use with ``pytestmark = pytest.mark.usefixtures(...)``."""
    old = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(Path(tmp_path_factory.mktemp("inductor")))
    yield
    if old is None:
        os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
    else:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = old
