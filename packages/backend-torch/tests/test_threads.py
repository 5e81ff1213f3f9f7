"""``threads=N`` on the torch backend: ``torch.set_num_threads(N)``, torch's intra-op pool, process-wide."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

import ember
from ember import ConfigError
from ember_torch import TorchBackend


@pytest.fixture(autouse=True)
def restore_torch_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_threads_sets_torchs_intra_op_pool() -> None:
    b = TorchBackend(threads=1)
    assert torch.get_num_threads() == 1
    assert b.options["threads"] == 1
    TorchBackend(threads=3)
    assert torch.get_num_threads() == 3


def test_threads_through_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    from ember.backend import _registry

    # an empty instance cache: another test in this process may have made the same backend, whose threads were set
    # then (the fixture has set them to 2 since)
    monkeypatch.setattr(_registry._REGISTRY, "_instances", {})
    b = ember.backend("torch", threads=1)  # refused before: the torch backend had no thread option
    assert b.options["threads"] == 1 and torch.get_num_threads() == 1


def test_without_threads_torchs_setting_is_left_alone() -> None:
    b = TorchBackend()
    assert torch.get_num_threads() == 2 and "threads" not in b.options


@pytest.mark.parametrize("bad", [0, 2.0, "1", False])
def test_threads_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ConfigError, match=rf"torch backend: threads must be a positive int.*got {bad!r}"):
        TorchBackend(threads=bad)  # type: ignore[arg-type]
    assert torch.get_num_threads() == 2
