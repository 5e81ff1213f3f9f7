"""``threads=N`` on the numpy backend: the BLAS pool (threadpoolctl), process-wide; ``blas_threads`` is its
deprecated former name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import ember
from ember import ConfigError
from ember_numpy import NumpyBackend


def _blas_threads() -> set[int]:
    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


@pytest.fixture(autouse=True)
def two_blas_threads() -> Iterator[None]:
    """Start each test with 2 BLAS threads and give the process its own setting back afterwards."""
    if not _blas_threads():
        pytest.skip("numpy's BLAS exposes no thread pool to threadpoolctl here")
    with threadpool_limits(limits=2, user_api="blas"):
        yield


def test_threads_sets_the_blas_pool_and_is_recorded_in_the_options() -> None:
    assert _blas_threads() == {2}
    b = NumpyBackend(threads=1)
    assert _blas_threads() == {1}
    assert b.options["threads"] == 1
    assert "blas_threads" not in b.options


def test_threads_through_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    from ember.backend import _registry

    # an empty instance cache: another test in this process may have made the same backend, whose threads were set
    # then (the fixture has set them to 2 since)
    monkeypatch.setattr(_registry._REGISTRY, "_instances", {})
    b = ember.backend("numpy", threads=1)
    assert _blas_threads() == {1} and b.options["threads"] == 1


def test_without_threads_the_pool_is_left_alone() -> None:
    b = NumpyBackend()
    assert _blas_threads() == {2} and "threads" not in b.options


def test_blas_threads_is_a_deprecated_alias_of_threads() -> None:
    with pytest.warns(DeprecationWarning, match=r"blas_threads=N\) is deprecated.*threads=N"):
        b = NumpyBackend(blas_threads=1)
    assert _blas_threads() == {1} and b.options["threads"] == 1


def test_threads_and_blas_threads_together_are_refused() -> None:
    with pytest.raises(ConfigError, match="threads=1 and blas_threads=2.*give threads only"):
        NumpyBackend(threads=1, blas_threads=2)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_threads_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ConfigError, match=rf"numpy backend: threads must be a positive int.*got {bad!r}"):
        NumpyBackend(threads=bad)  # type: ignore[arg-type]
    assert _blas_threads() == {2}
