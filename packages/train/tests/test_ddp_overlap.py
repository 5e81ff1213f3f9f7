"""``Replicas.grads_overlapped`` in one process (a group of one over gloo): the hook feeds the buckets during
``backward()``, the result equals ``reduce_grads``, and a step whose gradients are not the ones the hook saw falls
back to reducing the returned gradients."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
import helpers as h
from ember import distributed as dist
from ember.autodiff import Autodiff
from ember_train import DistributedDataParallel, TrainOutput
from ember_train._parallel import Replicas

pytestmark = pytest.mark.skipif(not ember.backend("numpy").supports_collectives,
                                reason="collectives need ember-backend-torch (torch.distributed's gloo)")


@pytest.fixture
def setup(monkeypatch: pytest.MonkeyPatch) -> Any:
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    device = Autodiff(ember.backend("numpy", float_dtype="float64")).device()
    device.backend.seed(0)
    replicas = Replicas(DistributedDataParallel(overlap=True, bucket_bytes=256, first_bucket_bytes=256))
    replicas.start(device)
    model = h.Mlp.init(device, dropout=0.0)
    data = h.dataset(8, 3)
    batch = h.batcher([data.get(i) for i in range(8)], device)
    yield replicas, model, batch
    replicas.close()


def _plain(model: Any, batch: Any) -> Any:
    out = model.train_step(batch)
    return out.grads, out.item


def test_overlapped_equals_reduce_grads_and_launches_during_backward(setup: Any) -> None:
    replicas, model, batch = setup
    assert replicas.overlaps(False) and not replicas.overlaps(True)
    stats = replicas.group.stats
    during: list[int] = []

    def grad_step() -> Any:
        before = stats.calls
        out = model.train_step(batch)
        during.append(stats.calls - before)
        return out.grads, out.item

    got, _ = replicas.grads_overlapped(model, grad_step, lambda: True)
    assert during[0] >= 1, "a bucket was launched before backward() returned"
    assert replicas.stop_seen
    ref = replicas.reduce_grads(_plain(model, batch)[0], stop=False)
    assert not replicas.stop_seen
    assert [k for k, _ in got.items()] == [k for k, _ in ref.items()]
    for (_, a), (_, b) in zip(got.items(), ref.items()):
        assert a.device is b.device
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())


def test_two_backward_passes_in_a_step_fall_back(setup: Any) -> None:
    replicas, model, batch = setup

    def twice() -> Any:
        model.train_step(batch)  # a first backward() whose gradients are dropped
        out = model.train_step(batch)
        return out.grads, out.item

    got, _ = replicas.grads_overlapped(model, twice, lambda: False)
    ref = replicas.reduce_grads(_plain(model, batch)[0])
    for (_, a), (_, b) in zip(got.items(), ref.items()):
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())

    def changed() -> Any:  # gradients replaced inside the step: the reduction must use the returned ones
        out = model.train_step(batch)
        from ember.optim import GradientsParams

        return GradientsParams({k: g.mul_scalar(2.0) for k, g in out.grads.items()}), out.item

    got, _ = replicas.grads_overlapped(model, changed, lambda: False)
    for (_, a), (_, b) in zip(got.items(), ref.items()):
        np.testing.assert_allclose(a.to_numpy(), 2 * b.to_numpy())
    assert dist.is_initialized()
    assert isinstance(model.train_step(batch), TrainOutput)


def test_default_overlaps_on_nccl_and_across_machines_only(setup: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``overlap=None``: not between CPU ranks of one machine (gloo threads would take the backward pass's cores),
    yes when the ranks span machines or the engine is nccl; ``True``/``False`` are taken as given."""
    replicas, _, _ = setup
    auto = Replicas(DistributedDataParallel())
    auto.group, auto.world_size = replicas.group, replicas.world_size
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(replicas.world_size))       # every rank here (the launcher's case)
    assert replicas.group.engine == "gloo" and not auto.overlaps(False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "0")                             # fewer local ranks: several machines
    assert auto.overlaps(False) and not auto.overlaps(True)
    monkeypatch.delenv("LOCAL_WORLD_SIZE")                                  # unknown: as several machines
    assert auto.overlaps(False)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(replicas.world_size))
    monkeypatch.setattr(replicas.group, "engine", "nccl")
    assert auto.overlaps(False)
    off = Replicas(DistributedDataParallel(overlap=False))
    off.group, off.world_size = replicas.group, replicas.world_size
    assert not off.overlaps(False) and replicas.overlaps(False)
