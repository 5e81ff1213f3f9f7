"""Run a snippet in a fresh interpreter: jax's x64 mode and its device count are process-wide
settings fixed at first use, so tests of them cannot share this process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def run(code: str, **env: str) -> str:
    """Run ``code`` with ``env`` added to the environment; return its stdout (fails on error)."""
    full = {**os.environ, "JAX_PLATFORMS": "cpu", **env}
    full.pop("JAX_ENABLE_X64", None)
    proc = subprocess.run(
        [sys.executable, "-W", "error", "-c", textwrap.dedent(code)],
        capture_output=True, text=True, env=full, timeout=300,
    )
    assert proc.returncode == 0, f"snippet failed:\n{proc.stderr}"
    return proc.stdout
