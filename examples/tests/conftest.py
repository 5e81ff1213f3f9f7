"""Fixtures for the example tests: ``examples/`` on ``sys.path`` and the MNIST directory.

The MNIST tests use the real files from ``$EMBER_DATA_DIR/mnist`` or the cache (``~/.cache/ember/mnist``),
else the machine's shared copy ``<repo>/../shared/data/mnist``; without any, they are skipped (no download
from tests).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1]
if str(EXAMPLES) not in sys.path:
    sys.path.insert(0, str(EXAMPLES))

from ember.data.vision import mnist_dir  # noqa: E402

_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")


def _complete(d: Path) -> bool:
    return all((d / s).is_file() or (d / (s + ".gz")).is_file() for s in _STEMS)


@pytest.fixture(scope="session")
def mnist_root() -> Path:
    for d in (mnist_dir(), EXAMPLES.parent.parent / "shared" / "data" / "mnist"):
        if _complete(d):
            return d
    pytest.skip("MNIST files not found: set EMBER_DATA_DIR to a directory whose mnist/ holds them")


@pytest.fixture(scope="session")
def examples_dir() -> Path:
    return EXAMPLES
