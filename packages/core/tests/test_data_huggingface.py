"""ember.data.HuggingfaceDatasetLoader on local CSV / JSON files (no network); skipped without `datasets`."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from ember.data import DatasetError, HuggingfaceDatasetLoader, SqliteDataset

datasets = pytest.importorskip("datasets")


@dataclasses.dataclass
class Row:
    text: str
    label: int
    score: float


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.setenv("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")


def test_local_csv_to_sqlite(tmp_path) -> None:
    train = tmp_path / "train.csv"
    test = tmp_path / "test.csv"
    train.write_text("text,label,score\nhello,1,0.5\nworld,0,1.25\n\"a, b\",2,-3.0\n", encoding="utf-8")
    test.write_text("text,label,score\nbye,1,2.0\n", encoding="utf-8")
    loader = (HuggingfaceDatasetLoader("csv").with_data_files({"train": str(train), "test": str(test)})
              .with_base_dir(tmp_path / "db").with_huggingface_cache_dir(tmp_path / "hf-cache"))
    ds = loader.dataset("train")
    assert isinstance(ds, SqliteDataset) and len(ds) == 3
    assert [ds.get(i) for i in range(3)] == [
        {"text": "hello", "label": 1, "score": 0.5},
        {"text": "world", "label": 0, "score": 1.25},
        {"text": "a, b", "label": 2, "score": -3.0},
    ]
    assert loader.dataset("test", Row).get(0) == Row("bye", 1, 2.0)
    db = loader.db_file()
    assert db.parent == tmp_path / "db" and db.name.startswith("csv-") and db.suffix == ".db"
    assert SqliteDataset.splits(db) == ["test", "train"]
    # the converted file is reused: same path, not rewritten
    mtime = db.stat().st_mtime_ns
    assert loader.db_file() == db and db.stat().st_mtime_ns == mtime
    with pytest.raises(DatasetError, match="no split 'valid'"):
        loader.dataset("valid")


def test_local_json_lines_with_arrays(tmp_path) -> None:
    rows = [{"x": [1.0, 2.0], "y": i} for i in range(4)]
    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    ds = (HuggingfaceDatasetLoader("json").with_data_files(f).with_base_dir(tmp_path / "db")
          .with_huggingface_cache_dir(tmp_path / "hf-cache").dataset("train"))
    assert len(ds) == 4 and ds.get(3) == {"x": [1.0, 2.0], "y": 3}
    assert np.allclose(ds.get(0)["x"], [1.0, 2.0])


def test_load_failure_is_a_dataset_error(tmp_path) -> None:
    loader = (HuggingfaceDatasetLoader("csv").with_data_files(str(tmp_path / "missing.csv"))
              .with_base_dir(tmp_path / "db").with_huggingface_cache_dir(tmp_path / "hf-cache"))
    with pytest.raises(DatasetError, match=r"datasets.load_dataset\('csv'"):
        loader.dataset("train")
    assert not (tmp_path / "db").exists() or list((tmp_path / "db").iterdir()) == []
