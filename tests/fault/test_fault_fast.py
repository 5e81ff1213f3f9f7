"""The fault suite's fast subset as a pytest test (``nox -s tests`` runs it; ``nox -s fault`` runs everything).

Also checks the runner's classification on files whose outcome is known: a file that loads while it must be
refused is a silent difference, a wrong check value is one too, a loader raising a plain exception is a crash,
an error where an exact load was expected is a false refusal,
and a child that runs out of time is a hang.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fault import _runner
from tests.fault._case import Case
from tests.fault.corpus_pt import _hand_written


def sleep_forever(path: str) -> None:
    """(in the child) a loader that never returns."""
    import time

    while True:
        time.sleep(60)


def test_fast_subset_has_no_failures() -> None:
    cases = _runner.discover(full=False)
    assert any(c.expect == "exact" for c in cases) and any(c.expect == "error" for c in cases)
    results = _runner.run(cases)
    failures = [r.line() for r in results if not r.passed]
    assert not failures, "\n".join(failures) + "\n" + _runner.summary(results)


@pytest.mark.parametrize(
    ("case", "cls"),
    [
        (Case("meta/loads-but-hostile", "a.pt", _hand_written(), "ember_import:read_pytorch"), _runner.SILENT),
        (Case("meta/wrong-check", "b.pt", _hand_written(), "ember_import:read_pytorch", "exact",
              "tests.fault.corpus_pt:check_model"), _runner.SILENT),
        (Case("meta/not-ember", "c.pt", b"", "json:loads"), _runner.CRASH),
        (Case("meta/hang", "d.pt", b"", "tests.fault.test_fault_fast:sleep_forever", seconds=3.0), _runner.HANG),
        (Case("meta/refused", "e.pt", b"nope", "ember_import:read_pytorch", "exact"), _runner.REFUSED),
        (Case("meta/clean", "f.pt", b"nope", "ember_import:read_pytorch"), _runner.CLEAN),
    ],
    ids=lambda v: v.name if isinstance(v, Case) else str(v),
)
def test_runner_classifies(tmp_path: Path, case: Case, cls: str) -> None:
    result = _runner.run_case(case, tmp_path)
    assert result.cls == cls, result.line()
    assert result.passed == (cls in (_runner.CLEAN, _runner.EXACT))
