"""ember.data SQLite storage: SqliteDatasetWriter (atomic) and SqliteDataset (concurrent readers)."""

from __future__ import annotations

import dataclasses
import os
import pickle
import sqlite3
import subprocess
import sys
import threading

import numpy as np
import pytest

from ember.data import DatasetError, SqliteDataset, SqliteDatasetWriter


@dataclasses.dataclass
class Example:
    image: np.ndarray
    label: int
    name: str
    tags: list


def _examples(n: int) -> list[Example]:
    rng = np.random.default_rng(0)
    return [Example(rng.integers(0, 256, (4, 3), dtype=np.uint8), i % 10, f"ex{i}", [i, str(i), b"\x00"])
            for i in range(n)]


def _write(path, n_train=50, n_test=7) -> list[Example]:
    items = _examples(n_train + n_test)
    with SqliteDatasetWriter(path) as w:
        for it in items[:n_train]:
            w.write("train", it)
        for it in items[n_train:]:
            w.write("test", it)
    return items


def _eq(a: Example, b: Example) -> bool:
    return (np.array_equal(a.image, b.image) and a.image.dtype == b.image.dtype and a.label == b.label
            and a.name == b.name and a.tags == b.tags)


def test_roundtrip_items_as_dataclasses_and_dicts(tmp_path) -> None:
    db = tmp_path / "d.db"
    items = _write(db)
    assert SqliteDataset.splits(db) == ["test", "train"]
    train = SqliteDataset(db, "train", Example)
    test = SqliteDataset.from_db_file(db, "test", Example)
    assert len(train) == 50 and len(test) == 7
    assert all(_eq(train.get(i), items[i]) for i in range(50))
    assert all(_eq(test.get(i), items[50 + i]) for i in range(7))
    assert train.get(50) is None and train.get(-1) is None
    row = SqliteDataset(db, "train").get(3)
    assert isinstance(row, dict) and sorted(row) == ["image", "label", "name", "tags"]
    assert row["image"].shape == (4, 3) and row["image"].dtype == np.uint8 and row["image"].flags.writeable


def test_numpy_values_roundtrip(tmp_path) -> None:
    db = tmp_path / "np.db"
    values = {
        "f32": np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3),
        "f64_fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
        "i64": np.array([-(2**40), 3]),
        "b": np.array([True, False]),
        "scalar": np.float32(1.5),
        "empty": np.zeros((0, 4), np.int16),
        "none": None,
        "tuple": (1, 2.5, "x"),
    }
    with SqliteDatasetWriter(db) as w:
        assert w.write("s", values) == 0
        assert w.write("s", {"k": 1}) == 1
    got = SqliteDataset(db, "s").get(0)
    for k in ("f32", "f64_fortran", "i64", "b", "empty"):
        np.testing.assert_array_equal(got[k], values[k])
        assert got[k].dtype == values[k].dtype and got[k].shape == values[k].shape
    assert got["scalar"] == 1.5 and got["none"] is None and got["tuple"] == [1, 2.5, "x"]


def test_unstorable_value_is_a_type_error(tmp_path) -> None:
    with SqliteDatasetWriter(tmp_path / "x.db") as w:
        with pytest.raises(TypeError, match="cannot store a value of type object"):
            w.write("train", {"x": object()})


def test_writer_is_atomic(tmp_path) -> None:
    db = tmp_path / "sub" / "a.db"
    w = SqliteDatasetWriter(db)
    w.write("train", {"x": 1})
    assert not db.exists()  # nothing is published before close
    w.close()
    assert db.exists() and len(SqliteDataset(db, "train")) == 1
    w.close()  # idempotent
    with pytest.raises(DatasetError, match="is completed"):
        w.write("train", {"x": 2})
    assert sorted(p.name for p in db.parent.iterdir()) == ["a.db"]  # no temporary file left


def test_writer_exception_leaves_nothing(tmp_path) -> None:
    db = tmp_path / "b.db"
    with pytest.raises(RuntimeError, match="boom"):
        with SqliteDatasetWriter(db) as w:
            w.write("train", {"x": 1})
            raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_writer_refuses_to_overwrite_unless_asked(tmp_path) -> None:
    db = tmp_path / "c.db"
    _write(db, 3, 1)
    with pytest.raises(DatasetError, match="already exists; pass overwrite=True"):
        SqliteDatasetWriter(db)
    reader = SqliteDataset(db, "train")
    old = reader.get(0)
    with SqliteDatasetWriter(db, overwrite=True) as w:
        w.write("valid", {"x": 1})
    assert SqliteDataset.splits(db) == ["valid"]
    # a reader opened before the replacement keeps reading the old file (the rename is atomic)
    assert reader.get(0)["name"] == old["name"]


def test_many_rows_and_flushes(tmp_path) -> None:
    db = tmp_path / "big.db"
    with SqliteDatasetWriter(db) as w:
        for i in range(3000):
            w.write("train", {"i": i, "sq": i * i})
        assert w.counts() == {"train": 3000}
    ds = SqliteDataset(db, "train")
    assert len(ds) == 3000
    assert [ds.get(i)["sq"] for i in (0, 1023, 1024, 2999)] == [0, 1023**2, 1024**2, 2999**2]


def test_concurrent_readers(tmp_path) -> None:
    db = tmp_path / "conc.db"
    with SqliteDatasetWriter(db) as w:
        for i in range(500):
            w.write("train", {"i": i, "v": np.full(8, i, np.int32)})
    ds = SqliteDataset(db, "train")
    errors: list[str] = []

    def reader(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for i in rng.integers(0, 500, 400):
            item = ds.get(int(i))
            if item["i"] != i or not np.all(item["v"] == i):
                errors.append(f"{i}: {item}")

    threads = [threading.Thread(target=reader, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    # a second dataset on the same file reads concurrently too, and a pickled copy reopens the file
    copy = pickle.loads(pickle.dumps(ds))
    assert copy.get(499)["i"] == 499 and len(copy) == 500
    ds.close()
    assert ds.get(1)["i"] == 1  # reopens after close


def test_missing_file_and_split(tmp_path) -> None:
    with pytest.raises(DatasetError, match=r"nope\.db: no such SQLite dataset file"):
        SqliteDataset(tmp_path / "nope.db", "train")
    db = tmp_path / "s.db"
    _write(db, 2, 1)
    with pytest.raises(DatasetError, match=r"no split 'valid'; the file has splits \['test', 'train'\]"):
        SqliteDataset(db, "valid")
    with pytest.raises(DatasetError, match="invalid split name"):
        SqliteDataset(db, "train; DROP TABLE train")


def test_malformed_sqlite_file_names_the_file(tmp_path) -> None:
    bad = tmp_path / "garbage.db"
    bad.write_bytes(b"this is not an sqlite database at all" * 100)
    with pytest.raises(DatasetError, match=r"garbage\.db: not a readable SQLite dataset file"):
        SqliteDataset(bad, "train")

    db = tmp_path / "trunc.db"
    with SqliteDatasetWriter(db) as w:
        for i in range(2000):
            w.write("train", {"i": i, "pad": b"x" * 200})
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 3])
    with pytest.raises(DatasetError, match=r"trunc\.db"):
        ds = SqliteDataset(db, "train")
        for i in range(len(ds)):
            ds.get(i)


def test_foreign_table_and_bad_blob(tmp_path) -> None:
    db = tmp_path / "foreign.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE train (a INTEGER)")
    conn.execute("CREATE TABLE test (row_id INTEGER PRIMARY KEY, item BLOB)")
    conn.execute("INSERT INTO test VALUES (0, x'c1')")  # 0xc1 is never valid msgpack
    conn.commit()
    conn.close()
    with pytest.raises(DatasetError, match=r"columns \['a'\], expected \(row_id, item\)"):
        SqliteDataset(db, "train")
    with pytest.raises(DatasetError, match=r"foreign\.db: split 'test', row 0: the item does not decode"):
        SqliteDataset(db, "test").get(0)


def test_item_type_mismatch(tmp_path) -> None:
    db = tmp_path / "m.db"
    with SqliteDatasetWriter(db) as w:
        w.write("train", {"image": np.zeros(1), "label": 1})
    pattern = r"split 'train', row 0: the row does not fit .*missing fields \['name', 'tags'\]"
    with pytest.raises(DatasetError, match=pattern):
        SqliteDataset(db, "train", Example).get(0)


def test_loader_workers_read_sqlite(tmp_path) -> None:
    from ember.data import DataLoaderBuilder

    db = tmp_path / "l.db"
    with SqliteDatasetWriter(db) as w:
        for i in range(97):
            w.write("train", {"i": i, "v": np.arange(3) * i})
    ds = SqliteDataset(db, "train")

    def batcher(items: list[dict], device: object) -> np.ndarray:
        return np.stack([it["v"] for it in items])

    serial = [b.tolist() for b in DataLoaderBuilder(batcher).batch_size(10).shuffle(5).build(ds)]
    threaded = [b.tolist() for b in DataLoaderBuilder(batcher).batch_size(10).shuffle(5).num_workers(3).build(ds)]
    assert serial == threaded and sorted(row[1] for b in serial for row in b) == list(range(97))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_reads_with_its_own_connection(tmp_path) -> None:
    # Fork in a fresh interpreter: the pytest process may hold torch/jax, whose at-fork
    # handlers are not ours to test.
    db = tmp_path / "f.db"
    with SqliteDatasetWriter(db) as w:
        for i in range(20):
            w.write("train", {"i": i})
    script = f"""
import os, sys
from ember.data import SqliteDataset
ds = SqliteDataset({str(db)!r}, "train")
assert ds.get(0)["i"] == 0  # the parent has an open connection now
pid = os.fork()
if pid == 0:
    code = 1
    try:
        code = 0 if [ds.get(i)["i"] for i in range(20)] == list(range(20)) else 2
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0, status
assert ds.get(19)["i"] == 19
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
