"""``ember.distributed``'s own logic (buckets, byte counts, mean, Bool, Autodiff unwrapping, wrapping, checks) on
the numpy backend with an in-process fake engine: rank 0 of 2, whose peer holds the same values plus one. The
engines themselves, across real processes, are the conformance suite's (``test_collectives.py``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember import CollectiveError, Tensor
from ember.autodiff import Autodiff
from ember.backend import Collectives

ember_numpy = pytest.importorskip("ember_numpy")


class FakeEngine(Collectives):
    """World of 2: the other rank's tensor is this one plus 1 (bools: negated)."""

    engine = "fake"

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[int, ...], str]] = []

    def init(self, *, rank: int, world_size: int, local_rank: int, master_addr: str, master_port: int,
             timeout: float, backend: Any, device: Any) -> Any:
        self.args = (rank, world_size, local_rank, master_addr, master_port, timeout)
        return device if device is not None else backend.device()

    def destroy(self) -> None:
        self.calls.append(("destroy", (), ""))

    def _other(self, p: Any) -> np.ndarray:
        p = np.asarray(p)
        return ~p if p.dtype == bool else p + 1

    def all_reduce(self, p: Any, *, owned: bool = False) -> Any:
        self.calls.append(("all_reduce", np.shape(p), str(np.asarray(p).dtype)))
        out = np.asarray(p) + self._other(p)
        return out.astype(np.asarray(p).dtype)

    def broadcast(self, p: Any, src: int) -> Any:
        self.calls.append(("broadcast", np.shape(p), str(src)))
        return np.array(p, copy=True) if src == 0 else self._other(p)

    def all_gather(self, p: Any) -> list[Any]:
        self.calls.append(("all_gather", np.shape(p), ""))
        return [np.array(p, copy=True), self._other(p)]

    def barrier(self) -> None:
        self.calls.append(("barrier", (), ""))


class FakeBackend(ember_numpy.NumpyBackend):
    supports_collectives = True

    def collectives(self) -> Any:
        self.engine = FakeEngine()
        return self.engine


@pytest.fixture
def group(monkeypatch: pytest.MonkeyPatch) -> Any:
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(k, raising=False)
    B = FakeBackend()  # noqa: N806
    dist.destroy_process_group()
    g = dist.init_process_group(B, rank=0, world_size=2, master_port=1234, timeout=5)
    yield g, B.engine, B.device()
    dist.destroy_process_group()


def test_init_reads_torchrun_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.7")
    monkeypatch.setenv("MASTER_PORT", "29500")
    B = FakeBackend()  # noqa: N806
    dist.destroy_process_group()
    try:
        g = dist.init_process_group(B)
        assert (g.rank, g.world_size, g.local_rank, g.engine, g.backend) == (1, 4, 0, "fake", "numpy")
        assert B.engine.args == (1, 4, 0, "10.0.0.7", 29500, 60.0)
        assert dist.get_rank() == 1 and dist.get_world_size() == 4 and "rank=1" in repr(g)
    finally:
        dist.destroy_process_group()
    monkeypatch.setenv("RANK", "x")
    with pytest.raises(CollectiveError, match="RANK='x'"):
        dist.init_process_group(B)


def test_all_reduce_sum_mean_bool_int(group: Any) -> None:
    g, eng, dev = group
    x = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], dev)
    np.testing.assert_array_equal(dist.all_reduce(x).to_numpy(), [[3.0, 5.0], [7.0, 9.0]])
    np.testing.assert_array_equal(dist.all_reduce(x, "mean").to_numpy(), [[1.5, 2.5], [3.5, 4.5]])
    i = Tensor.from_data([1, 2], dev, ember.Int)
    ri = dist.all_reduce(i)
    assert ri.kind is ember.Int and ri.dtype is i.dtype and ri.to_numpy().tolist() == [3, 5]
    b = Tensor.from_data([True, False], dev, ember.Bool)
    rb = dist.all_reduce(b)  # a logical or: the peer holds the negation
    assert rb.kind is ember.Bool and rb.to_numpy().tolist() == [True, True]
    assert eng.calls[-1][2] == str(dev.backend.int_dtype.to_numpy()), "Bool is reduced as Int"
    assert (g.stats.calls, g.stats.bytes) == (4, 16 + 16 + 2 * 8 + 2)


def test_all_reduce_many_buckets_by_dtype_in_order(group: Any) -> None:
    g, eng, dev = group
    shapes = [(3,), (2, 5), (), (7,), (4, 4)]  # float32: 12, 40, 4, 28, 64 bytes
    ts = [Tensor.from_data(np.full(s, float(k)), dev) for k, s in enumerate(shapes)]
    ts.insert(1, Tensor.from_data([5, 6], dev, ember.Int))
    ts.append(Tensor.from_data([True], dev, ember.Bool))
    eng.calls.clear()
    out = dist.all_reduce_many(ts, "sum", bucket_bytes=48)
    # float buckets of at most 48 bytes in order: [12], [40, 4], [28], [64] (larger than a bucket: alone);
    # the Int tensor a bucket of its dtype; Bool one by one
    assert [c[1] for c in eng.calls if c[2] == "float32"] == [(3,), (11,), (7,), (4, 4)]  # alone: not flattened
    assert [c[1] for c in eng.calls if c[2] == "int64"] == [(2,), (1,)]
    assert (g.stats.calls, g.stats.bytes) == (6, 12 + 40 + 4 + 28 + 64 + 16 + 1)
    for t, r in zip(ts, out):
        assert r.shape == t.shape and r.kind is t.kind and r.dtype is t.dtype and r.device is t.device
    np.testing.assert_array_equal(out[3].to_numpy(), np.full((), 2 * 2.0 + 1))
    np.testing.assert_array_equal(out[5].to_numpy(), np.full((4, 4), 2 * 4.0 + 1))
    assert out[1].to_numpy().tolist() == [11, 13] and out[-1].to_numpy().tolist() == [True]
    means = dist.all_reduce_many(ts[2:6], "mean")
    np.testing.assert_array_equal(means[0].to_numpy(), np.full((2, 5), 1.5))
    with pytest.raises(ember.KindError, match="mean"):
        dist.all_reduce_many(ts, "mean")


def test_autodiff_tensors_give_constants(group: Any) -> None:
    _, _, dev = group
    ad = Autodiff(dev.backend).device()
    a = Tensor.from_data([1.0, 2.0], ad).require_grad()
    for r in (dist.all_reduce(a), dist.broadcast(a, 1), *dist.all_gather(a), *dist.all_reduce_many([a, a * 2.0])):
        assert r.device is ad and r.kind is ember.Float and not r.is_require_grad()
    np.testing.assert_array_equal(dist.broadcast(a, 1).to_numpy(), [2.0, 3.0])
    g = a.mul(dist.all_reduce(a, "mean")).sum().backward()
    np.testing.assert_array_equal(a.grad(g).to_numpy(), [1.5, 2.5])


def test_broadcast_gather_barrier_destroy(group: Any) -> None:
    g, eng, dev = group
    x = Tensor.from_data([1, 2, 3], dev, ember.Int)
    assert dist.broadcast(x).to_numpy().tolist() == [1, 2, 3]
    assert [t.to_numpy().tolist() for t in dist.all_gather(x)] == [[1, 2, 3], [2, 3, 4]]
    dist.barrier()
    assert [c[0] for c in eng.calls] == ["broadcast", "all_gather", "barrier"]
    assert x.to_numpy().tolist() == [1, 2, 3]
    dist.destroy_process_group(g)
    assert eng.calls[-1][0] == "destroy" and not dist.is_initialized()
    dist.destroy_process_group(g)  # a destroyed group: nothing to do


def test_engine_failures_become_collective_errors(group: Any) -> None:
    g, eng, dev = group

    def boom(p: Any, *, owned: bool = False) -> Any:
        raise RuntimeError("Connection closed by peer")

    eng.all_reduce = boom
    with pytest.raises(CollectiveError, match="all_reduce failed in the fake engine.*Connection closed by peer"):
        dist.all_reduce(Tensor.from_data([1.0], dev))


def test_bucketer_ready_refuses_a_wrong_value_without_changing_anything(group: Any) -> None:
    """A value of another shape or dtype than planned is refused before the bucketer changes: the error names the
    expected and found shape (or dtype), and the right value given afterwards reduces as if nothing happened."""
    from ember import DTypeError, ShapeError

    g, eng, dev = group
    likes = [Tensor.from_data(np.zeros((2, 3), np.float32), dev), Tensor.from_data(np.zeros(4, np.float32), dev)]
    b = dist.Bucketer(likes, "sum", g)
    with pytest.raises(ShapeError, match=r"tensor 0 was planned with shape \[2, 3\], got \[3, 2\]"):
        b.ready(0, Tensor.from_data(np.ones((3, 2), np.float32), dev))
    with pytest.raises(DTypeError, match="tensor 1 was planned as .*float32.*got .*int"):
        b.ready(1, Tensor.from_data(np.ones(4, np.int64), dev))
    with pytest.raises(CollectiveError, match=r"index 2 is out of range \[0, 2\)"):
        b.ready(2, likes[0])
    assert b.launched == 0 and eng.calls == []
    b.ready(0, Tensor.from_data(np.full((2, 3), 2.0, np.float32), dev))
    b.ready(1, Tensor.from_data(np.full(4, 3.0, np.float32), dev))
    out = b.wait()
    np.testing.assert_array_equal(out[0].to_numpy(), np.full((2, 3), 5.0))  # 2 + (2 + 1) from the fake peer
    np.testing.assert_array_equal(out[1].to_numpy(), np.full(4, 7.0))
    assert len([c for c in eng.calls if c[0] == "all_reduce"]) == 1  # one bucket, launched once


def test_bucketer_is_waited_on_once(group: Any) -> None:
    """A second ``wait()`` (or a ``ready()`` after it) is a CollectiveError that says so, not an AttributeError."""
    g, _, dev = group
    b = dist.Bucketer([Tensor.from_data([1.0], dev)], "sum", g)
    b.ready(0, Tensor.from_data([1.0], dev))
    assert b.wait()[0].to_numpy().tolist() == [3.0]
    with pytest.raises(CollectiveError, match="already waited"):
        b.wait()
    with pytest.raises(CollectiveError, match="wait\\(\\) was already called"):
        b.ready(0, Tensor.from_data([1.0], dev))
