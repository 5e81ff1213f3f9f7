"""``Replicas`` (the Learner's side of ``DistributedDataParallel``), mostly in one process (a group of one over
gloo): ``grads_overlapped``'s hook feeds the buckets during ``backward()``, the result equals ``reduce_grads``, a
step whose gradients are not the ones the hook saw falls back (on every rank, when only one rank's did: 2 ranks);
``start`` refuses a group of another backend and uses the strategy's timeout; only engine failures blame the peers;
a failure after the join leaves the group."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
import helpers as h
from ember import distributed as dist
from ember.autodiff import Autodiff
from ember_train import DistributedDataParallel, TrainOutput
from ember_train._parallel import Replicas

HERE = Path(__file__).resolve().parent

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
    data = h.dataset(8, 3)
    first = h.batcher([data.get(i) for i in (0, 1)], batch.inputs.device)

    def twice() -> Any:
        model.train_step(first)  # a first backward() on other data, whose gradients the hook sees and are dropped
        out = model.train_step(batch)
        return out.grads, out.item

    got, _ = replicas.grads_overlapped(model, twice, lambda: False)
    ref = replicas.reduce_grads(_plain(model, batch)[0])
    dropped = _plain(model, first)[0]
    assert any(not np.array_equal(a.to_numpy(), b.to_numpy())
               for (_, a), (_, b) in zip(dropped.items(), ref.items())), "the two backward passes must differ"
    for (_, a), (_, b) in zip(got.items(), ref.items()):  # the returned gradients were reduced, not the first ones
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


_ONE_RANK_FALLS_BACK = """
import sys
import numpy as np
import ember
import helpers as h
from ember.autodiff import Autodiff
from ember.optim import SgdConfig
from ember_train import DistributedDataParallel
from ember_train._parallel import Replicas

device = Autodiff(ember.backend("numpy", float_dtype="float64")).device()
device.backend.seed(0)
replicas = Replicas(DistributedDataParallel(overlap=True, bucket_bytes=256, first_bucket_bytes=256, timeout=20))
replicas.start(device)
r = replicas.rank
model = replicas.sync_model(h.Mlp.init(device, dropout=0.0))
optim = SgdConfig().init()
data = h.dataset(48, 3)
for step in range(3):
    half = h.batcher([data.get(i) for i in range(16 * step + 8 * r, 16 * step + 8 * r + 8)], device)

    def grad_step():
        if r == 1:  # a second backward() on rank 1 only: this rank falls back, rank 0 does not see it itself
            model.train_step(half)
        out = model.train_step(half)
        return out.grads, out.item

    grads, _ = replicas.grads_overlapped(model, grad_step, lambda: False)
    model = optim.step(0.5, model, grads)
total = replicas.sum([1.0])  # the collectives still match after the steps
np.savez(sys.argv[1] + f"/params-rank{r}.npz", *[p.val().to_numpy() for p in model.params()])
print(f"rank {r} done, sum {total[0]}", flush=True)
replicas.close()
"""


def test_a_fallback_on_one_rank_only_falls_back_on_every_rank(tmp_path: Path) -> None:
    """Rank 1 runs two backward passes in its step (its overlapped reduction did not see the returned gradients),
    rank 0 one: the ranks agree through the flag in the last bucket, both fall back (same collectives, no gloo
    mismatch), and 3 SGD steps give the parameters of one process on the global batches of 16."""
    script = tmp_path / "fallback.py"
    script.write_text(_ONE_RANK_FALLS_BACK)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-m", "ember_train.launch", "--nproc", "2", "--backend", "numpy", str(script),
                        str(tmp_path)], capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    for rank in (0, 1):
        assert f"rank {rank} done, sum 2.0" in p.stdout, p.stdout + p.stderr
    # the reference: one process, the same model and optimizer, each step on the global batch of 16
    from ember.optim import SgdConfig

    device = Autodiff(ember.backend("numpy", float_dtype="float64")).device()
    device.backend.seed(0)
    model = h.Mlp.init(device, dropout=0.0)
    optim = SgdConfig().init()
    data = h.dataset(48, 3)
    for step in range(3):
        batch = h.batcher([data.get(i) for i in range(16 * step, 16 * step + 16)], device)
        model = optim.step(0.5, model, model.train_step(batch).grads)
    ref = [p.val().to_numpy() for p in model.params()]
    for rank in (0, 1):
        with np.load(tmp_path / f"params-rank{rank}.npz") as f:
            got = [f[f"arr_{i}"] for i in range(len(f.files))]
        assert len(got) == len(ref)
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, err_msg=f"rank {rank}")


def test_a_group_of_another_backend_is_refused_by_start(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process group initialized on torch while the model trains on numpy: ``start`` says so (found, expected,
    what to do) instead of every collective failing later as "rank ... died"; the user's group is left alone."""
    pytest.importorskip("ember_torch")
    from ember_train import LearnerError

    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    group = dist.init_process_group("torch")
    try:
        replicas = Replicas(DistributedDataParallel())
        with pytest.raises(LearnerError) as err:
            replicas.start(Autodiff(ember.backend("numpy")).device())
        msg = str(err.value)
        assert "runs on the 'torch' backend" in msg and "inner backend 'numpy'" in msg, msg
        assert "init_process_group('numpy')" in msg and "died" not in msg, msg
        assert dist.is_initialized() and dist.get_process_group() is group
    finally:
        dist.destroy_process_group()


def test_only_engine_failures_blame_the_peers(setup: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A collective refused before it reaches the engine (a tensor of another backend) is this rank's error; a
    failure inside the engine (here a transport error, simulated) names the peers that may have died."""
    from ember_train import LearnerError

    replicas, _, _ = setup
    other = ember.Tensor.from_data(np.ones(2), ember.backend("numpy", float_dtype="float32").device())
    monkeypatch.setattr(replicas.group, "backend", "torch")  # the tensor's backend is not the group's
    with pytest.raises(LearnerError) as err, replicas._peers("averaging the gradients"):
        dist.all_reduce(other, group=replicas.group)
    msg = str(err.value)
    assert "no other rank is to blame" in msg and "died" not in msg and "backend 'torch'" in msg, msg
    monkeypatch.setattr(replicas.group, "backend", "numpy")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Connection reset by peer")

    monkeypatch.setattr(replicas.group._collectives, "all_reduce", broken)
    with pytest.raises(LearnerError) as err, replicas._peers("averaging the gradients"):
        dist.all_reduce(other, group=replicas.group)
    msg = str(err.value)
    assert "died, stopped or did not answer" in msg and "Connection reset by peer" in msg, msg


def test_the_default_timeout_covers_rank_0_alone_writing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The group the Learner joins waits PyTorch's 30 minutes by default, not 60 s: the other ranks wait in their
    next collective while rank 0 alone writes checkpoints, the summary and plots. An explicit timeout is kept."""
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    device = Autodiff(ember.backend("numpy")).device()
    for strategy, expected in ((DistributedDataParallel(), 1800.0), (DistributedDataParallel(timeout=5), 5.0)):
        replicas = Replicas(strategy)
        replicas.start(device)
        try:
            assert replicas.group.timeout == expected
        finally:
            replicas.close()


def test_a_failure_right_after_the_join_leaves_the_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``fit`` joins the group inside its ``try``: an error raised once the group is joined (here the experiment log
    failing as the join is logged) still leaves it, so the process can join again."""
    from ember.optim import SgdConfig
    from ember_train import LearnerBuilder, _parallel

    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)

    class Broken:
        def info(self, *args: Any) -> None:
            raise OSError("No space left on device")

    monkeypatch.setattr(_parallel, "LOGGER", Broken())
    device = h.devices()
    learner = LearnerBuilder(tmp_path).devices([device]).learning_strategy(DistributedDataParallel()).build(
        h.Classifier.init(device), SgdConfig().init(), 0.1)
    train, _ = h.loaders()
    with pytest.raises(OSError, match="No space left"):
        learner.fit(train)
    assert not dist.is_initialized()


def test_jax_leaves_jax_distributed_when_the_join_fails_after_initialize(monkeypatch: pytest.MonkeyPatch) -> None:
    """``jax.distributed.initialize`` succeeded, then the mesh check failed: the engine shuts ``jax.distributed``
    down again (a corrected ``init_process_group`` can join) and reports the check's error."""
    pytest.importorskip("ember_jax")
    import jax

    from ember import CollectiveError
    from ember_jax import _collectives as jc

    calls: list[str] = []
    monkeypatch.setattr(jax.distributed, "initialize", lambda **kw: calls.append("initialize"))
    monkeypatch.setattr(jax.distributed, "shutdown", lambda: calls.append("shutdown"))
    engine = jc.JaxCollectives()
    backend = ember.backend("jax")
    with pytest.raises(CollectiveError, match="jax sees 1 process"):
        engine.init(rank=0, world_size=2, local_rank=0, master_addr="127.0.0.1", master_port=1, timeout=5.0,
                    backend=backend, device=backend.device())
    assert calls == ["initialize", "shutdown"]
    assert not engine._joined
    engine.destroy()  # nothing left to leave
    assert calls == ["initialize", "shutdown"]
