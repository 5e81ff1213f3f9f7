"""Sharded data loaders for data-parallel training: ``DataLoader.shard`` / ``DataLoaderBuilder.shard``."""

from __future__ import annotations

import pytest

from ember.data import DataLoaderBuilder, DatasetError, InMemDataset


def _items(items: list[int], device: object) -> list[int]:
    return list(items)


def _epoch(n: int, batch: int, seed: int | None, rank: int, world: int, workers: int = 0) -> list[list[int]]:
    builder = DataLoaderBuilder(_items).batch_size(batch).num_workers(workers).shard(rank, world)
    if seed is not None:
        builder = builder.shuffle(seed)
    return list(builder.build(InMemDataset(list(range(n)))))


@pytest.mark.parametrize("seed", [None, 7])
@pytest.mark.parametrize("n", [64 * 5, 64 * 5 + 10, 64 * 5 + 1])
def test_shards_are_the_halves_of_the_global_batches(n: int, seed: int | None) -> None:
    whole = _epoch(n, 64, seed, 0, 1)
    parts = [_epoch(n, 32, seed, r, 2) for r in range(2)]
    assert len(parts[0]) == len(parts[1]) == len(whole)
    for b, batch in enumerate(whole):
        if len(batch) >= 2:  # a last batch of one item: both ranks take it (next test)
            assert parts[0][b] + parts[1][b] == batch
    if len(whole[-1]) >= 2:  # disjoint shards, together the whole epoch (the last partial batch is kept)
        assert sorted(i for p in parts for batch in p for i in batch) == list(range(n))


def test_last_batch_with_fewer_items_than_ranks_repeats_its_last_item() -> None:
    parts = [_epoch(9, 2, None, r, 4) for r in range(4)]  # global batch 8: the last holds only item 8
    assert [len(p) for p in parts] == [2, 2, 2, 2]
    assert [p[-1] for p in parts] == [[8], [8], [8], [8]]
    assert [p[0] for p in parts] == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_uneven_last_batch_is_split_evenly() -> None:
    parts = [_epoch(70, 32, None, r, 2) for r in range(2)]   # global 64, then 6 items: 3 + 3
    assert parts[0][-1] == [64, 65, 66] and parts[1][-1] == [67, 68, 69]
    parts = [_epoch(69, 32, None, r, 2) for r in range(2)]   # 5 items: 3 + 2
    assert parts[0][-1] == [64, 65, 66] and parts[1][-1] == [67, 68]


def test_same_shuffle_on_every_rank_and_workers_do_not_change_it() -> None:
    a = _epoch(200, 16, 3, 1, 2)
    assert _epoch(200, 16, 3, 1, 2, workers=2) == a
    assert a != _epoch(200, 16, 3, 0, 2)


def test_len_settings_and_errors() -> None:
    loader = DataLoaderBuilder(_items).batch_size(32).build(InMemDataset(list(range(130))))
    sharded = loader.shard(1, 2)
    assert (sharded.rank, sharded.world_size, sharded.batch_size, sharded.global_batch_size) == (1, 2, 32, 64)
    assert len(sharded) == 3 and len(loader) == 5 and loader.world_size == 1
    assert sharded.shard(0, 1).global_batch_size == 32
    assert "world_size=2" in repr(sharded)
    it = iter(sharded)
    next(it)
    assert it.progress().items_processed == 64  # progress counts every rank's items
    it.close()
    with pytest.raises(DatasetError, match="rank must be < world_size"):
        loader.shard(2, 2)
    with pytest.raises(DatasetError, match="world_size"):
        loader.shard(0, 0)
