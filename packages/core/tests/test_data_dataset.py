"""ember.data datasets and lazy transforms: InMemDataset (list, JSON rows, CSV) and the transforms."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import numpy as np
import pytest

import ember
from ember.data import (
    ComposedDataset,
    Dataset,
    DatasetError,
    InMemDataset,
    MapperDataset,
    PartialDataset,
    SamplerDataset,
    SelectionDataset,
    ShuffledDataset,
    WindowsDataset,
)


@dataclasses.dataclass
class Row:
    name: str
    x: int
    y: float
    ok: bool
    note: str | None = None


# -- the Dataset protocol -------------------------------------------------------------------------


def test_get_past_the_end_returns_none_and_getitem_follows_python_rules() -> None:
    ds = InMemDataset(["a", "b", "c"])
    assert len(ds) == 3 and not ds.is_empty()
    assert [ds.get(i) for i in range(4)] == ["a", "b", "c", None]
    assert ds.get(-1) is None  # get never wraps negative indices
    assert ds[0] == "a" and ds[-1] == "c" and ds[-3] == "a"
    with pytest.raises(ember.IndexError, match="index 3 is out of range for a dataset of 3"):
        ds[3]
    with pytest.raises(IndexError):  # the builtin too
        ds[-4]
    with pytest.raises(TypeError, match="PartialDataset"):
        ds[0:2]  # type: ignore[index]
    assert list(ds) == ["a", "b", "c"] and list(ds.iter()) == ["a", "b", "c"]
    assert InMemDataset([]).is_empty()


def test_structural_dataset_check() -> None:
    class Squares:
        def get(self, index: int) -> int | None:
            return index * index if 0 <= index < 5 else None

        def __len__(self) -> int:
            return 5

    assert isinstance(Squares(), Dataset)
    assert not isinstance([1, 2], Dataset)
    assert not isinstance({0: "a"}, Dataset)  # dict.get takes keys
    # any object with get/__len__ works with the transforms
    assert list(PartialDataset(Squares(), 1, 4)) == [1, 4, 9]
    with pytest.raises(TypeError, match="expected a dataset"):
        PartialDataset([1, 2, 3], 0, 1)  # type: ignore[arg-type]


# -- InMemDataset from files ------------------------------------------------------------------------


def test_from_json_rows(tmp_path) -> None:
    p = tmp_path / "rows.jsonl"
    rows = [{"name": "a", "x": 1, "y": 0.5, "ok": True}, {"name": "b", "x": 2, "y": -1.0, "ok": False, "note": "n"}]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    assert InMemDataset.from_json_rows(p).items == rows
    typed = InMemDataset.from_json_rows(p, Row)
    assert typed.get(1) == Row("b", 2, -1.0, False, "n")


def test_from_json_rows_errors_name_file_and_line(tmp_path) -> None:
    p = tmp_path / "bad.jsonl"
    p.write_text('{"x": 1}\n{"x": \n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.jsonl, line 2: not valid JSON"):
        InMemDataset.from_json_rows(p)
    q = tmp_path / "fields.jsonl"
    q.write_text('{"name": "a", "x": 1, "y": 2.0, "ok": true, "extra": 3}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"fields\.jsonl, line 1: .*unknown fields \['extra'\]"):
        InMemDataset.from_json_rows(q, Row)


def test_from_csv_infers_column_types(tmp_path) -> None:
    p = tmp_path / "t.csv"
    p.write_text('name,x,y,ok\n"a, b",1,0.5,true\nc,2,,false\nd,-3,1e3,true\n', encoding="utf-8")
    ds = InMemDataset.from_csv(p)
    assert ds.items == [
        {"name": "a, b", "x": 1, "y": 0.5, "ok": "true"},
        {"name": "c", "x": 2, "y": None, "ok": "false"},
        {"name": "d", "x": -3, "y": 1000.0, "ok": "true"},
    ]
    assert type(ds.get(0)["x"]) is int and type(ds.get(0)["y"]) is float


def test_from_csv_with_dataclass(tmp_path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("name,x,y,ok,note\na,1,2,yes,\nb,2,0.25,0,hi\n", encoding="utf-8")
    ds = InMemDataset.from_csv(p, Row)
    assert ds.items == [Row("a", 1, 2.0, True, None), Row("b", 2, 0.25, False, "hi")]
    bad = tmp_path / "bad.csv"
    bad.write_text("name,x,y,ok\na,one,2,yes\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.csv, line 2, column 'x'"):
        InMemDataset.from_csv(bad, Row)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b\n1,2\n3\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"ragged\.csv, line 3: 1 cells, expected 2"):
        InMemDataset.from_csv(ragged)
    tsv = tmp_path / "t.tsv"
    tsv.write_text("a\tb\n1\tx\n", encoding="utf-8")
    assert InMemDataset.from_csv(tsv, delimiter="\t").items == [{"a": 1, "b": "x"}]


# -- transforms ---------------------------------------------------------------------------------


def test_shuffled_dataset_is_a_seeded_permutation() -> None:
    base = InMemDataset(range(100))
    a = ShuffledDataset(base, seed=7)
    assert sorted(a) == list(range(100)) and list(a) != list(range(100))
    assert list(a) == list(ShuffledDataset.with_seed(base, 7))
    assert list(a) != list(ShuffledDataset(base, seed=8))
    assert a.get(100) is None and len(a) == 100


def test_sampler_with_replacement() -> None:
    base = InMemDataset(range(10))
    s = SamplerDataset(base, 5000, seed=0)
    assert len(s) == 5000 and s.get(5000) is None
    counts = Counter(s)
    assert set(counts) == set(range(10))
    # uniform draws: each value 500 +- 5 sigma (sigma = sqrt(5000 * 0.1 * 0.9) ~ 21)
    assert all(abs(c - 500) < 110 for c in counts.values())
    assert list(s) == list(SamplerDataset.with_replacement(base, 5000, seed=0))
    assert list(SamplerDataset(base, 20, seed=1)) != list(SamplerDataset(base, 20, seed=2))


def test_sampler_without_replacement_cycles_permutations() -> None:
    base = InMemDataset(range(10))
    s = SamplerDataset.without_replacement(base, 25, seed=3)
    items = list(s)
    assert sorted(items[:10]) == list(range(10)) and sorted(items[10:20]) == list(range(10))
    assert len(set(items[20:])) == 5
    counts = Counter(items)
    assert all(c in (2, 3) for c in counts.values())
    assert len(set(SamplerDataset(base, 4, replacement=False, seed=0))) == 4
    with pytest.raises(DatasetError, match="empty dataset"):
        SamplerDataset(InMemDataset([]), 3)
    with pytest.raises(DatasetError, match="size must be an int >= 0"):
        SamplerDataset(base, -1)


def test_partial_dataset_and_split() -> None:
    base = InMemDataset(range(10))
    p = PartialDataset(base, 2, 5)
    assert list(p) == [2, 3, 4] and p.get(3) is None and len(p) == 3
    assert list(PartialDataset(base, 8, 100)) == [8, 9]
    parts = PartialDataset.split(base, 3)
    assert [list(x) for x in parts] == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    with pytest.raises(DatasetError, match="0 <= start <= end"):
        PartialDataset(base, 5, 2)


def test_mapper_dataset_with_function_and_mapper_object() -> None:
    base = InMemDataset([1, 2, 3])

    class Double:
        def map(self, item: int) -> int:
            return 2 * item

    assert list(MapperDataset(base, Double())) == [2, 4, 6]
    m = MapperDataset(base, lambda x: x + 0.5)
    assert list(m) == [1.5, 2.5, 3.5] and m.get(3) is None
    with pytest.raises(TypeError, match="map"):
        MapperDataset(base, 3)  # type: ignore[arg-type]


def test_composed_dataset_concatenates() -> None:
    c = ComposedDataset([InMemDataset("ab"), InMemDataset([]), InMemDataset("cde")])
    assert len(c) == 5 and list(c) == list("abcde")
    assert c.get(2) == "c" and c.get(5) is None and c.get(-1) is None
    assert len(ComposedDataset([])) == 0


def test_windows_dataset() -> None:
    w = WindowsDataset(InMemDataset(range(5)), 3)
    assert len(w) == 3 and list(w) == [[0, 1, 2], [1, 2, 3], [2, 3, 4]] and w.get(3) is None
    assert len(WindowsDataset(InMemDataset(range(2)), 3)) == 0
    with pytest.raises(DatasetError, match="size must be an int >= 1"):
        WindowsDataset(InMemDataset(range(2)), 0)


def test_selection_dataset() -> None:
    base = InMemDataset("abcdef")
    s = SelectionDataset(base, [5, 0, 0, 2])
    assert list(s) == ["f", "a", "a", "c"] and s.get(4) is None
    assert list(s.slice(1, 3)) == ["a", "a"]
    assert list(SelectionDataset.new_select_all(base)) == list("abcdef")
    sh = SelectionDataset.new_shuffled(base, seed=1)
    assert sorted(sh) == list("abcdef")
    assert list(sh) == list(SelectionDataset.new_shuffled(base, seed=1))
    assert sorted(s.shuffled(0)) == sorted(s)
    with pytest.raises(DatasetError, match="index 6 at position 1 is out of range for a dataset of 6"):
        SelectionDataset(base, [0, 6])
    assert SelectionDataset.from_indices_unchecked(base, [0, 6]).get(1) is None
    with pytest.raises(DatasetError, match="integer indices"):
        SelectionDataset(base, [0.5])
    assert s.indices.dtype == np.int64 and not s.indices.flags.writeable


def test_transforms_compose_lazily() -> None:
    calls = []
    base = MapperDataset(InMemDataset(range(1000)), lambda x: calls.append(x) or x * 10)
    view = PartialDataset(ShuffledDataset(base, seed=0), 0, 3)
    assert calls == []  # nothing read at construction
    out = list(view)
    assert len(out) == 3 and sorted(calls) == sorted(x // 10 for x in out)
