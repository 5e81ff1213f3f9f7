"""ember.data loading: Batcher, DataLoaderBuilder, DataLoader (epochs, shuffling, workers, progress,
errors, interruption) and split_dataloader."""

from __future__ import annotations

import os
import signal
import threading
import time

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.data import (
    Batcher,
    DataLoader,
    DataLoaderBuilder,
    DataLoaderError,
    DatasetError,
    InMemDataset,
    Progress,
    split_dataloader,
)


def _loader_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ember-dataloader")]


@pytest.fixture(autouse=True)
def _no_threads_left_behind():
    assert _loader_threads() == []
    yield
    assert _loader_threads() == []


class ListBatcher:
    """Returns the items and the device it was given."""

    def batch(self, items: list[int], device: object) -> tuple[list[int], object]:
        return list(items), device


def _epoch(loader: DataLoader) -> list[list[int]]:
    return [items for items, _ in loader]


def test_batches_in_order_without_shuffle() -> None:
    loader = DataLoaderBuilder(ListBatcher()).batch_size(4).build(InMemDataset(range(10)))
    assert len(loader) == 3 and loader.num_items() == 10
    assert _epoch(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert _epoch(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]  # every epoch, same order
    assert len(DataLoaderBuilder(ListBatcher()).build(InMemDataset(range(3)))) == 3  # Burn's default batch 1
    empty = DataLoaderBuilder(ListBatcher()).batch_size(4).build(InMemDataset([]))
    assert len(empty) == 0 and _epoch(empty) == []


def test_batcher_protocol_and_plain_function() -> None:
    assert isinstance(ListBatcher(), Batcher)
    loader = DataLoaderBuilder(lambda items, device: sum(items)).batch_size(5).build(InMemDataset(range(10)))
    assert list(loader) == [10, 35]
    with pytest.raises(TypeError, match="expected a Batcher"):
        DataLoaderBuilder(42)


def test_tensor_batches_on_the_numpy_backend() -> None:
    device = ember.backend("numpy").device()
    data = np.arange(24, dtype=np.float64).reshape(6, 2, 2)

    def batcher(items: list[np.ndarray], dev: ember.Device) -> Tensor:
        return Tensor.from_data(np.stack(items), dev)

    loader = DataLoaderBuilder(batcher).batch_size(4).set_device(device).build(InMemDataset(list(data)))
    batches = list(loader)
    assert [b.shape for b in batches] == [(4, 2, 2), (2, 2, 2)]
    np.testing.assert_array_equal(batches[1].to_data().to_numpy(), data[4:])


def test_shuffle_is_deterministic_and_changes_every_epoch() -> None:
    def build(seed: int, workers: int = 0) -> DataLoader:
        return (DataLoaderBuilder(ListBatcher()).batch_size(7).shuffle(seed).num_workers(workers)
                .build(InMemDataset(range(50))))

    a, b = build(42), build(42)
    a0, a1, a2 = _epoch(a), _epoch(a), _epoch(a)
    for ep in (a0, a1, a2):
        flat = [i for batch in ep for i in batch]
        assert sorted(flat) == list(range(50))  # each item exactly once per epoch
        assert [len(x) for x in ep] == [7] * 7 + [1]
    assert a0 != a1 and a1 != a2 and a0 != [list(range(i, min(i + 7, 50))) for i in range(0, 50, 7)]
    assert [_epoch(b), _epoch(b), _epoch(b)] == [a0, a1, a2]  # same seed, same epochs
    assert _epoch(build(43)) != a0
    # the same sequence of batches with any number of workers
    c = build(42, workers=3)
    assert [_epoch(c), _epoch(c)] == [a0, a1]
    # resuming: set_epoch replays an epoch's order
    d = build(42)
    d.set_epoch(2)
    assert _epoch(d) == a2 and d.epoch == 3


def test_workers_give_the_same_batches_as_the_main_thread() -> None:
    data = InMemDataset(range(103))
    seen_threads = set()

    def batcher(items: list[int], device: object) -> list[int]:
        seen_threads.add(threading.current_thread().name)
        time.sleep(0.001)
        return [x * 2 for x in items]

    serial = list(DataLoaderBuilder(batcher).batch_size(8).build(data))
    assert seen_threads == {threading.main_thread().name}
    seen_threads.clear()
    parallel = list(DataLoaderBuilder(batcher).batch_size(8).num_workers(4).build(data))
    assert parallel == serial == [[2 * i for i in range(s, min(s + 8, 103))] for s in range(0, 103, 8)]
    assert seen_threads and all(name.startswith("ember-dataloader") for name in seen_threads)


def test_progress() -> None:
    loader = DataLoaderBuilder(ListBatcher()).batch_size(4).num_workers(2).build(InMemDataset(range(10)))
    assert loader.progress() == Progress(0, 10)
    it = iter(loader)
    assert it.progress() == Progress(0, 10) and len(it) == 3
    seen = []
    for _ in it:
        seen.append(it.progress())
        assert loader.progress() == it.progress()
    assert seen == [Progress(4, 10), Progress(8, 10), Progress(10, 10)]
    assert seen[-1].fraction == 1.0 and Progress(1, 4).fraction == 0.25


def test_device_is_passed_to_the_batcher() -> None:
    default = ember.device()
    data = InMemDataset(range(3))
    loader = DataLoaderBuilder(ListBatcher()).batch_size(2).build(data)
    assert loader.device is None and {dev for _, dev in loader} == {default}
    on_a = DataLoaderBuilder(ListBatcher()).batch_size(2).set_device("dev-a").build(data)
    assert {dev for _, dev in on_a} == {"dev-a"}
    moved = on_a.to_device("dev-b")
    assert {dev for _, dev in moved} == {"dev-b"} and on_a.device == "dev-a"  # to_device returns a new loader
    assert moved.batch_size == 2 and moved.num_items() == 3


def test_split_dataloader() -> None:
    loader = DataLoaderBuilder(ListBatcher()).batch_size(2).build(InMemDataset(range(10)))
    parts = split_dataloader(loader, ["d0", "d1", "d2"])
    assert [p.num_items() for p in parts] == [3, 3, 4]
    assert [[i for items, _ in p for i in items] for p in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    assert [{dev for _, dev in p} for p in parts] == [{"d0"}, {"d1"}, {"d2"}]
    (only,) = split_dataloader(loader, ["d0"])
    assert only.num_items() == 10 and only.device == "d0"
    with pytest.raises(DatasetError, match="at least one device"):
        split_dataloader(loader, [])
    shuffled = DataLoaderBuilder(ListBatcher()).batch_size(2).shuffle(1).build(InMemDataset(range(10)))
    halves = split_dataloader(shuffled, ["a", "b"])
    assert sorted(i for items, _ in halves[1] for i in items) == [5, 6, 7, 8, 9]


def test_batcher_error_names_the_batch_item_indices() -> None:
    received: list[list[int]] = []

    def batcher(items: list[int], device: object) -> list[int]:
        received.append(list(items))
        if 13 in items:
            raise ValueError("bad item 13")
        return items

    for workers in (0, 3):
        received.clear()
        loader = DataLoaderBuilder(batcher).batch_size(5).shuffle(0).num_workers(workers).build(InMemDataset(range(40)))
        with pytest.raises(DataLoaderError) as info:
            for _ in loader:
                pass
        err = info.value
        culprit = next(batch for batch in received if 13 in batch)
        assert list(err.indices) == culprit and err.stage == "batcher.batch"
        assert isinstance(err.__cause__, ValueError)
        assert f"dataset item indices {culprit}" in str(err) and "ValueError: bad item 13" in str(err)
        assert f"batch {err.batch_index}" in str(err)


def test_dataset_error_names_the_failing_index() -> None:
    class Flaky(InMemDataset):
        def get(self, index: int):
            if index == 7:
                raise KeyError("corrupt record")
            return super().get(index)

    loader = DataLoaderBuilder(ListBatcher()).batch_size(4).num_workers(2).build(Flaky(range(12)))
    pattern = r"dataset.get\(7\) raised KeyError.*batch 1 \(dataset item indices \[4, 5, 6, 7\]\)"
    with pytest.raises(DataLoaderError, match=pattern):
        list(loader)

    class Holes(InMemDataset):
        def get(self, index: int):
            return None if index == 2 else super().get(index)

    with pytest.raises(DataLoaderError, match=r"dataset.get\(2\) raised DatasetError: .*returned None"):
        list(DataLoaderBuilder(ListBatcher()).batch_size(4).build(Holes(range(5))))


def test_break_leaves_no_worker_thread() -> None:
    loader = DataLoaderBuilder(ListBatcher()).batch_size(2).num_workers(4).build(InMemDataset(range(1000)))
    for _ in loader:
        assert len(_loader_threads()) == 4
        break
    assert _loader_threads() == []
    it = iter(loader)
    next(it)
    assert len(_loader_threads()) == 4
    it.close()
    assert _loader_threads() == [] and list(it) == []
    with iter(loader) as it2:
        next(it2)
    assert _loader_threads() == []
    # an exhausted epoch releases its workers before the loop ends
    for _items, _ in DataLoaderBuilder(ListBatcher()).batch_size(6).num_workers(2).build(InMemDataset(range(10))):
        pass
    assert _loader_threads() == []


def test_ctrl_c_while_waiting_for_a_batch_leaves_no_worker_thread() -> None:
    started = threading.Event()
    armed = threading.Event()

    def slow(items: list[int], device: object) -> list[int]:
        started.set()
        time.sleep(0.5)
        return items

    def handler(signum: int, frame: object) -> None:
        if armed.is_set():  # only inside the guarded region below
            armed.clear()
            raise KeyboardInterrupt

    def interrupt() -> None:
        started.wait(10)
        time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    previous = signal.signal(signal.SIGINT, handler)
    killer = threading.Thread(target=interrupt)
    try:
        loader = DataLoaderBuilder(slow).batch_size(2).num_workers(2).build(InMemDataset(range(100)))
        armed.set()
        killer.start()
        t0 = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            for _ in loader:
                pass
        assert time.perf_counter() - t0 < 5
    finally:
        armed.clear()
        killer.join()
        signal.signal(signal.SIGINT, previous)
    assert _loader_threads() == []


def test_bad_settings() -> None:
    b = DataLoaderBuilder(ListBatcher())
    with pytest.raises(DatasetError, match="batch_size must be an int >= 1"):
        b.batch_size(0).build(InMemDataset(range(3)))
    with pytest.raises(DatasetError, match="num_workers must be an int >= 0"):
        DataLoaderBuilder(ListBatcher()).num_workers(-1).build(InMemDataset(range(3)))
    with pytest.raises(DatasetError, match="shuffle seed must be an int >= 0"):
        DataLoaderBuilder(ListBatcher()).shuffle(1.5).build(InMemDataset(range(3)))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a dataset"):
        DataLoaderBuilder(ListBatcher()).build([1, 2, 3])  # type: ignore[arg-type]
