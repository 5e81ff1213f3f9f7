"""The conformance suite's known-failures list: strict xfails, and stale entries fail the run.

Each case runs ``python -m ember.testing`` in a subprocess with a throwaway plugin that registers a
numpy-derived backend carrying a ``conformance_known_failures`` list.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("ember_numpy")

PLUGIN = textwrap.dedent(
    """
    import ember
    from ember.backend import BackendSpec
    from ember_numpy import NumpyBackend

    class Flaky(NumpyBackend):
        conformance_known_failures = KNOWN

    ember.backend.register(BackendSpec("flaky", lambda: Flaky))
    """
)


def _run(tmp_path: Path, known: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "flaky_plugin.py").write_text(PLUGIN.replace("KNOWN", repr(known)))
    cmd = [sys.executable, "-m", "ember.testing", "--backend", "flaky", "-p", "flaky_plugin",
           "-q", "-p", "no:cacheprovider", *args]
    return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)})


def test_a_known_failure_that_passes_fails_the_run(tmp_path: Path) -> None:
    proc = _run(tmp_path, {"*test_scalar_is_rank_zero*": "demo"}, "-k", "test_scalar_is_rank_zero")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "XPASS(strict)" in proc.stdout and "known failure: demo" in proc.stdout


def test_a_stale_entry_fails_the_whole_suite(tmp_path: Path) -> None:
    proc = _run(tmp_path, {"*test_scalar_is_rank_zero*": "demo", "*no_such_test*": "stale"}, "--collect-only")
    assert proc.returncode != 0, proc.stdout
    out = proc.stdout + proc.stderr
    assert "match no test" in out and "*no_such_test*" in out and "*test_scalar_is_rank_zero*" not in out.split(
        "match no test")[1]


def test_a_selection_does_not_call_entries_stale(tmp_path: Path) -> None:
    proc = _run(tmp_path, {"*no_such_test*": "stale"}, "-k", "test_scalar_is_rank_zero")
    assert proc.returncode == 0, proc.stdout + proc.stderr
