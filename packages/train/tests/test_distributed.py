"""Data-parallel training (``DistributedDataParallel``) through ``python -m ember_train.launch``: equivalence with a
single process of the global batch, rank-0-only artifacts, a dead rank, Ctrl-C and resume with another world size.

Each test starts real processes (``ddp_run.py``), two ranks over gloo on this machine's CPU.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ember_train import DistributedDataParallel, LearnerBuilder, LearnerError, MultiDevice

HERE = Path(__file__).resolve().parent
RUN = str(HERE / "ddp_run.py")

pytestmark = pytest.mark.skipif(not __import__("ember").backend("numpy").supports_collectives,
                                reason="collectives need ember-backend-torch (torch.distributed's gloo)")


def _single(d: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, RUN, str(d), *args], capture_output=True, text=True, timeout=120)


def _launch(d: Path, nproc: int, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ember_train.launch", "--nproc", str(nproc), RUN, str(d), "--ddp",
                           *args], capture_output=True, text=True, timeout=timeout)


def _ok(p: subprocess.CompletedProcess[str]) -> None:
    assert p.returncode == 0, p.stdout + p.stderr


def _params(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as f:
        return {k: f[k] for k in f.files}


def _log(path: Path) -> np.ndarray:
    return np.asarray([[float(x) for x in line.split(",")] for line in path.read_text().split()])


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_two_ranks_of_32_equal_one_process_of_64(tmp_path: Path, backend: str) -> None:
    """The core check: same seed, 20 steps; 2 ranks x 32 give the parameters and logged metrics of 1 x 64.

    jax: the steps compiled, 2 processes joined by jax.distributed without an init_process_group call in the script
    (the backend joins under the launcher); each step is one compiled program over both ranks (traced once), so
    the run makes fewer collective calls than steps (the metrics are reduced once, at the end: --log-interval 20)."""
    if backend != "numpy":
        pytest.importorskip(f"ember_{backend}")
    one, two = tmp_path / "one", tmp_path / "two"
    jax_args = ["--compile"] if backend == "jax" else []
    _ok(_single(one, "--backend", backend, "--batch", "64", "--items", "1280", *jax_args))
    ddp_args = [*jax_args, "--auto-join", "--log-interval", "20"] if backend == "jax" else []
    _ok(_launch(two, 2, "--backend", backend, "--batch", "32", "--items", "1280", *ddp_args))
    ref = _params(one / "params-rank0.npz")
    for rank in (0, 1):
        got = _params(two / f"params-rank{rank}.npz")
        for k, v in ref.items():
            np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-7, err_msg=f"{backend} rank {rank} {k}")
    for split, metric in [("train", "Loss"), ("train", "Accuracy"), ("valid", "Loss"), ("valid", "Accuracy")]:
        a, b = _log(one / split / "epoch-1" / f"{metric}.log"), _log(two / split / "epoch-1" / f"{metric}.log")
        assert a.shape == b.shape and (split != "train" or a.shape[0] == 20)
        np.testing.assert_allclose(b, a, rtol=1e-5, err_msg=f"{split} {metric}")
    s1, s2 = (d / "summary.json" for d in (one, two))
    assert s1.is_file() and s2.is_file()
    if backend == "jax":
        log = (two / "experiment.log").read_text()
        assert "the step is one compiled program over the 2 ranks" in log, log
        assert "the training step ran as 1 compiled program(s) over the ranks (1 trace(s))" in log, log
        calls = int(re.search(r"(\d+) collective calls", log).group(1))  # type: ignore[union-attr]
        assert calls < 20, f"{calls} collective calls for 20 steps: the gradients went through collectives"


def test_jax_joins_under_the_launcher_without_init_process_group(tmp_path: Path) -> None:
    """A plain jax script under ``ember_train.launch --backend jax``: its first device joins the run (auto-join);
    a script that calls ``init_process_group("jax")`` first still works, and joins once."""
    pytest.importorskip("ember_jax")
    script = tmp_path / "join.py"
    script.write_text(
        "import sys\n"
        "import ember\n"
        "from ember import distributed as dist\n"
        "if sys.argv[1] == 'explicit':\n"
        "    dist.init_process_group('jax', timeout=30)\n"
        "dev = ember.backend('jax').device()\n"
        "import jax\n"
        "g = dist.get_process_group()\n"
        "t = dist.all_reduce(ember.Tensor.from_data([float(g.rank + 1)], dev, ember.Float))\n"
        "print(f'joined rank {g.rank} of {g.world_size}, jax processes {jax.process_count()}, sum {t.to_numpy()[0]}')\n"
    )
    for mode in ("auto", "explicit"):
        p = subprocess.run([sys.executable, "-m", "ember_train.launch", "--nproc", "2", "--backend", "jax", str(script),
                            mode], capture_output=True, text=True, timeout=120)
        _ok(p)
        for rank in (0, 1):
            assert f"joined rank {rank} of 2, jax processes 2, sum 3.0" in p.stdout, (mode, p.stdout + p.stderr)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_overlapped_reduction_launches_buckets_during_backward(tmp_path: Path, backend: str) -> None:
    """With small buckets, the eager step launches gradient all-reduces while backward() runs (the hook feeds the
    Bucketer), gets the 1 x 64 result, and DistributedDataParallel(overlap=False) launches none before it returns."""
    if backend != "numpy":
        pytest.importorskip(f"ember_{backend}")
    one, two, off = tmp_path / "one", tmp_path / "two", tmp_path / "off"
    small = ("--bucket-bytes", "512", "--items", "320", "--trace")
    _ok(_single(one, "--backend", backend, "--batch", "64", "--items", "320"))
    _ok(_launch(two, 2, "--backend", backend, "--batch", "32", *small))
    _ok(_launch(off, 2, "--backend", backend, "--batch", "32", "--no-overlap", *small))
    ref = _params(one / "params-rank0.npz")
    for d in (two, off):
        for rank in (0, 1):
            got = _params(d / f"params-rank{rank}.npz")
            for k, v in ref.items():
                np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-7, err_msg=f"{d.name} rank {rank} {k}")
    for rank in (0, 1):
        on = json.loads((two / f"trace-rank{rank}.json").read_text())
        during = [e[1] - s[1] for s, e in zip(on[::2], on[1::2])]
        assert len(during) == 5 and all(n >= 1 for n in during), on  # buckets launched before backward returned
        late = json.loads((off / f"trace-rank{rank}.json").read_text())
        assert [e[1] - s[1] for s, e in zip(late[::2], late[1::2])] == [0] * 5, late


def test_torchrun_starts_the_same_run(tmp_path: Path) -> None:
    """``torchrun --nproc-per-node 2`` (``python -m torch.distributed.run``) instead of Ember's launcher."""
    pytest.importorskip("ember_torch")
    one, two = tmp_path / "one", tmp_path / "two"
    _ok(_single(one, "--backend", "torch", "--batch", "64", "--items", "256"))
    p = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", RUN, str(two), "--ddp",
                        "--backend", "torch", "--batch", "32", "--items", "256"], capture_output=True, text=True,
                       timeout=120)
    _ok(p)
    ref, got = _params(one / "params-rank0.npz"), _params(two / "params-rank1.npz")
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-7, err_msg=k)


def test_multi_device_in_one_process_equals_one_device(tmp_path: Path) -> None:
    """MultiDevice on 2 forced CPU devices of jax (one compiled program over both, the batch of 64 split in two):
    the parameters and logged metrics of one device with the whole batch; a resume continues it exactly."""
    pytest.importorskip("ember_jax")
    one, two = tmp_path / "one", tmp_path / "two"
    _ok(_single(one, "--backend", "jax", "--batch", "64"))
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    p = subprocess.run([sys.executable, RUN, str(two), "--backend", "jax", "--batch", "64", "--devices", "2",
                        "--compile"], capture_output=True, text=True, timeout=120, env=env)
    _ok(p)
    assert "parameters on [2] devices" in p.stdout
    ref, got = _params(one / "params-rank0.npz"), _params(two / "params-rank0.npz")
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-5, atol=1e-7, err_msg=k)
    for split, metric in [("train", "Loss"), ("train", "Accuracy"), ("valid", "Loss"), ("valid", "Accuracy")]:
        a, b = _log(one / split / "epoch-1" / f"{metric}.log"), _log(two / split / "epoch-1" / f"{metric}.log")
        np.testing.assert_allclose(b, a, rtol=1e-5, err_msg=f"{split} {metric}")
    # resumed from its checkpoint for a second epoch: the parameters of two uninterrupted epochs
    args = ["--backend", "jax", "--batch", "64", "--devices", "2", "--compile", "--items", "256"]
    for d, extra in ((tmp_path / "resumed", ["--epochs", "1"]), (tmp_path / "resumed", ["--epochs", "2",
                                                                                         "--checkpoint", "1"]),
                     (tmp_path / "straight", ["--epochs", "2"])):
        _ok(subprocess.run([sys.executable, RUN, str(d), *args, *extra], capture_output=True, text=True,
                           timeout=120, env=env))
    ref, got = _params(tmp_path / "straight" / "params-rank0.npz"), _params(tmp_path / "resumed" / "params-rank0.npz")
    for k, v in ref.items():
        np.testing.assert_allclose(got[k], v, rtol=1e-6, err_msg=f"resumed {k}")


def test_only_rank_0_writes_artifacts(tmp_path: Path) -> None:
    _ok(_launch(tmp_path, 2, "--items", "256", "--batch", "32", "--artifacts-per-rank"))
    main, other = tmp_path / "rank-0", tmp_path / "rank-1"
    for name in ("summary.json", "summary.txt", "experiment.log", "train/epoch-1/Loss.log", "checkpoint"):
        assert (main / name).exists(), name
    assert not other.exists() or list(other.iterdir()) == []
    assert (tmp_path / "params-rank1.npz").is_file()  # rank 1 trained


def test_dead_rank_stops_the_run_then_resume_completes_with_another_world_size(tmp_path: Path) -> None:
    """Rank 1 is SIGKILLed in epoch 2 (of 3, 4 steps an epoch): the launcher names it and exits non-zero within
    60 s; the run resumes from checkpoint 1 with 2 ranks, and also with 1 process."""
    args = ("--items", "256", "--epochs", "3", "--timeout", "20", "--batch", "32")
    start = time.monotonic()
    p = _launch(tmp_path, 2, *args, "--die-after", "6")
    assert time.monotonic() - start < 60
    assert p.returncode != 0
    assert "rank 1" in p.stderr and "SIGKILL" in p.stderr, p.stderr
    assert (tmp_path / "checkpoint" / "model-1.mpk").is_file()
    assert not (tmp_path / "checkpoint" / "model-2.mpk").exists()
    copy = tmp_path.parent / (tmp_path.name + "-one")
    shutil.copytree(tmp_path, copy)
    resumed = _launch(tmp_path, 2, *args, "--checkpoint", "1")
    _ok(resumed)
    assert "rank 0: epoch 3" in resumed.stdout and (tmp_path / "summary.json").is_file()
    # the same checkpoint, resumed by one process of the same global batch (64)
    one = _single(copy, *args[:-2], "--batch", "64", "--checkpoint", "1")
    _ok(one)
    assert "rank 0: epoch 3" in one.stdout


def test_without_a_launcher_the_survivor_fails_naming_the_dead_rank(tmp_path: Path) -> None:
    """Two ranks started by hand (torchrun's variables, no watching launcher): rank 1 dies, rank 0's next collective
    fails within the timeout with a LearnerError naming rank 1, instead of hanging."""
    from ember_train.launch import free_port, rank_environment

    port = free_port()
    procs = []
    for rank in (0, 1):
        env = {**os.environ, **rank_environment(rank, 2, "127.0.0.1", port)}
        procs.append(subprocess.Popen([sys.executable, RUN, str(tmp_path), "--ddp", "--items", "256", "--batch", "32",
                                       "--epochs", "3", "--timeout", "10", "--die-after", "3"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    start = time.monotonic()
    out, err = procs[0].communicate(timeout=60)
    procs[1].communicate(timeout=60)
    assert time.monotonic() - start < 60
    assert procs[1].returncode == -signal.SIGKILL
    assert procs[0].returncode != 0
    assert "LearnerError: DistributedDataParallel: rank 0 of 2 stopped" in err and "rank 1 died" in err, err[-2000:]


def test_ctrl_c_stops_every_rank_with_a_resumable_checkpoint(tmp_path: Path) -> None:
    args = ("--items", "256", "--epochs", "2", "--timeout", "20", "--batch", "32")
    p = subprocess.Popen([sys.executable, "-m", "ember_train.launch", "--nproc", "2", RUN, str(tmp_path), "--ddp",
                          *args, "--slow-after", "3", "--slow-s", "0.3"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "slow-rank0").exists() and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, out + err
    assert "interrupted=True, resume=1" in out, out + err
    assert list((tmp_path / "checkpoint").glob("model-1-*.mpk"))   # an interrupted epoch's: model-<epoch>-<iteration>
    manifest = json.loads((tmp_path / "checkpoint" / "manifest-1.json").read_text())
    assert len(manifest["state"]["ranks"]) == 2   # both ranks' random states, gathered by rank 0
    copy = tmp_path.parent / (tmp_path.name + "-one")
    shutil.copytree(tmp_path, copy)
    half = tmp_path.parent / (tmp_path.name + "-half")
    shutil.copytree(tmp_path, half)
    _ok(_launch(tmp_path, 2, *args, "--checkpoint", "1"))
    # inside epoch 1, resumed by one process of the same global batch: it skips the items already trained on
    one = _single(copy, *args[:-2], "--batch", "64", "--checkpoint", "1")
    _ok(one)
    assert "rank 0: epoch 2" in one.stdout
    assert "skipping" not in (copy / "experiment.log").read_text()  # same global batch: same iteration
    # a global batch of 32: twice the iterations already done are skipped
    _ok(_single(half, *args[:-2], "--batch", "32", "--checkpoint", "1"))
    assert "skipping" in (half / "experiment.log").read_text()


def test_mid_epoch_resume_with_dropout_on_two_ranks_is_bitwise(tmp_path: Path) -> None:
    """Each rank draws its own dropout masks: the checkpoint holds both ranks' random states (gathered by rank 0),
    each rank restores its own, and the resumed run equals the uninterrupted one bit for bit."""
    args = ("--items", "256", "--batch", "32", "--epochs", "2", "--dropout", "0.3", "--timeout", "30")
    _ok(_launch(tmp_path / "ref", 2, *args))
    first = _launch(tmp_path / "r", 2, *args, "--stop-at", "1", "2")
    _ok(first)
    assert "interrupted=True, resume=1" in first.stdout
    manifest = json.loads((tmp_path / "r" / "checkpoint" / "manifest-1.json").read_text())
    # (the stop flag rides with the next step's gradient all-reduce: the ranks stop after step 3)
    assert manifest["progress"]["iteration"] in (2, 3) and len(manifest["state"]["ranks"]) == 2
    _ok(_launch(tmp_path / "r", 2, *args, "--checkpoint", "1"))
    for rank in (0, 1):
        ref = _params(tmp_path / "ref" / f"params-rank{rank}.npz")
        got = _params(tmp_path / "r" / f"params-rank{rank}.npz")
        for k, v in ref.items():
            np.testing.assert_array_equal(got[k], v, err_msg=f"rank {rank} {k}")


def test_builder_refuses_what_it_cannot_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import helpers as h
    from ember.optim import SgdConfig

    dev = h.devices()
    with pytest.raises(LearnerError, match="MultiDevice: training on several devices of one process needs"):
        LearnerBuilder(tmp_path).devices([dev, dev]).build(h.Classifier.init(dev), SgdConfig().init(), 0.1)
    with pytest.raises(LearnerError, match="DistributedDataParallel strategy"):
        LearnerBuilder(tmp_path).learning_strategy(MultiDevice((dev, dev))).build(
            h.Classifier.init(dev), SgdConfig().init(), 0.1)
    with pytest.raises(LearnerError, match="two or more devices"):
        LearnerBuilder(tmp_path).learning_strategy(MultiDevice((dev,))).build(
            h.Classifier.init(dev), SgdConfig().init(), 0.1)
    with pytest.raises(LearnerError, match="learning_strategy"):
        LearnerBuilder(tmp_path).learning_strategy("ddp")  # type: ignore[arg-type]
    with pytest.raises(LearnerError, match="timeout"):
        DistributedDataParallel(timeout=0)
    dev = h.devices()
    monkeypatch.setattr(dev.inner.backend, "supports_collectives", False)
    with pytest.raises(LearnerError, match="needs collective ops"):
        LearnerBuilder(tmp_path).devices([dev]).learning_strategy(DistributedDataParallel()).build(
            h.Classifier.init(dev), SgdConfig().init(), 0.1)


def test_one_program_needs_equal_blocks_at_every_step() -> None:
    """The jax DDP step is one program over the ranks only when every rank's batch has the same rows at each step
    (else the Learner keeps the two halves): the last partial global batch must split evenly."""
    from ember.data import DataLoaderBuilder, InMemDataset
    from ember_train._parallel import splits_evenly

    def loader(n: int, batch: int, world: int) -> object:
        return DataLoaderBuilder(lambda items, device: items).batch_size(batch).build(
            InMemDataset(list(range(n)))).shard(0, world)

    assert splits_evenly(None, 2)
    assert splits_evenly(loader(1280, 32, 2), 2)      # no partial batch
    assert splits_evenly(loader(200, 32, 2), 2)       # 200 % 64 = 8: 4 and 4
    assert not splits_evenly(loader(201, 32, 2), 2)   # 9: 5 and 4
    assert splits_evenly(loader(1, 32, 2), 2)         # 1: 1 and the last item again
    assert not splits_evenly(object(), 2)             # cannot tell


_BATCH_NORM_RUN = """
import sys
from pathlib import Path
import numpy as np
import ember
import helpers as h
from ember.autodiff import Autodiff
from ember.data import DataLoaderBuilder
from ember.optim import SgdConfig
from ember_train import DistributedDataParallel, LearnerBuilder
from ember_train.renderer import MetricsRenderer

device = Autodiff(ember.backend("numpy", float_dtype="float64")).device()
device.backend.seed(0)
model = h.BnMlp.init(device)
train = DataLoaderBuilder(h.batcher).batch_size(8).build(h.dataset(32, 1))
learner = (LearnerBuilder(Path(sys.argv[1]) / "run").renderer(MetricsRenderer()).plots(False).num_epochs(1)
           .learning_strategy(DistributedDataParallel(timeout=30)).build(model, SgdConfig().init(), 0.0))
result = learner.fit(train)
bn = result.model.bn
import os
np.savez(Path(sys.argv[1]) / f"bn-rank{os.environ['RANK']}.npz", mean=bn.running_mean.value().to_numpy(),
         var=bn.running_var.value().to_numpy())
"""


def test_batch_norm_running_states_are_averaged_over_the_ranks(tmp_path: Path) -> None:
    """A BatchNorm model on 2 ranks (lr 0, so that the parameters stay the initial ones): after the epoch each rank
    holds the same running mean and variance, the mean of what each rank's shard gives alone (computed here, in
    one process, from the same batches)."""
    import ember
    import helpers as h
    from ember.autodiff import Autodiff
    from ember.data import DataLoaderBuilder

    script = tmp_path / "bn.py"
    script.write_text(_BATCH_NORM_RUN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run([sys.executable, "-m", "ember_train.launch", "--nproc", "2", "--backend", "numpy", str(script),
                        str(tmp_path)], capture_output=True, text=True, timeout=120, env=env)
    _ok(p)
    per_rank = []
    for rank in (0, 1):
        device = Autodiff(ember.backend("numpy", float_dtype="float64")).device()
        device.backend.seed(0)
        model = h.BnMlp.init(device)
        loader = DataLoaderBuilder(h.batcher).batch_size(8).build(h.dataset(32, 1)).shard(rank, 2)
        for batch in loader.to_device(device):
            model.forward_classification(batch)  # a training forward updates the running states
        per_rank.append((model.bn.running_mean.value().to_numpy(), model.bn.running_var.value().to_numpy()))
    assert not np.allclose(per_rank[0][0], per_rank[1][0])  # the shards' statistics differ
    for rank in (0, 1):
        with np.load(tmp_path / f"bn-rank{rank}.npz") as got:
            np.testing.assert_allclose(got["mean"], (per_rank[0][0] + per_rank[1][0]) / 2, rtol=1e-12,
                                       err_msg=f"rank {rank}")
            np.testing.assert_allclose(got["var"], (per_rank[0][1] + per_rank[1][1]) / 2, rtol=1e-12,
                                       err_msg=f"rank {rank}")
