"""The built Book: ``$EMBER_DOCS_SITE`` when the docs session built it, else built here once (``mkdocs build
--strict`` into a temporary folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = os.environ.get("EMBER_DOCS_SITE")
    if built and (Path(built) / "index.html").is_file():
        return Path(built)
    pytest.importorskip("mkdocs", reason="needs the docs tools: nox -s docs (or pip install -r docs/requirements.txt)")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], cwd=ROOT,
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return out
