"""``InMemDataset``: items held in a Python list (Burn's ``InMemDataset``)."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ._dataset import Dataset, check_dataset
from ._errors import DatasetError
from ._rows import csv_converters, infer_csv_columns, make_item

__all__ = ["InMemDataset"]

I = TypeVar("I")  # noqa: E741


class InMemDataset(Dataset[I]):
    """A dataset whose items are held in memory, in a list.

    >>> ds = InMemDataset([{"x": 1}, {"x": 2}])
    >>> len(ds), ds.get(1), ds.get(2)
    (2, {'x': 2}, None)

    Build one from any iterable of items, from another dataset (:meth:`from_dataset`), from a file of
    JSON rows (:meth:`from_json_rows`) or from a CSV file (:meth:`from_csv`), as Burn does.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[I]) -> None:
        self._items: list[I] = list(items)

    def get(self, index: int) -> I | None:
        items = self._items
        if 0 <= index < len(items):
            return items[index]
        return None

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> list[I]:
        """The list of items (not a copy: do not mutate it while a data loader reads the dataset)."""
        return self._items

    @classmethod
    def from_dataset(cls, dataset: Dataset[I]) -> InMemDataset[I]:
        """Read every item of ``dataset`` into memory (Burn's ``InMemDataset::from_dataset``)."""
        check_dataset("InMemDataset.from_dataset", dataset)
        return cls(dataset.get(i) for i in range(len(dataset)))  # type: ignore[misc]

    @classmethod
    def from_json_rows(
        cls, path: str | os.PathLike[str], item_type: Callable[..., I] | None = None
    ) -> InMemDataset[Any]:
        """One item per line of a JSON-lines file (Burn's ``from_json_rows``).

        Args:
            path: a UTF-8 file with one JSON value per line (blank lines are skipped).
            item_type: when given (e.g. a dataclass), each line must be an object and the item is
                ``item_type(**row)``; else the item is the decoded JSON value.

        Raises:
            DatasetError: a line is not valid JSON (names the file and line) or does not fit ``item_type``.
            FileNotFoundError: ``path`` does not exist.
        """
        items: list[Any] = []
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(
                        f"{os.fspath(path)}, line {lineno}: not valid JSON ({exc.msg} at column {exc.colno}). "
                        "from_json_rows expects one JSON value per line (JSON Lines)."
                    ) from None
                items.append(make_item(item_type, row, f"{os.fspath(path)}, line {lineno}"))
        return cls(items)

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        item_type: Callable[..., I] | None = None,
        *,
        delimiter: str = ",",
        quotechar: str = '"',
    ) -> InMemDataset[Any]:
        """One item per row of a CSV file with a header line (Burn's ``from_csv``).

        Cells are typed column by column: with a dataclass ``item_type``, from its field annotations
        (``int``, ``float``, ``bool`` and their ``Optional`` forms; other fields keep the text); without,
        a column whose non-empty cells all parse as ``int`` holds ints, else ``float`` if they all parse
        as floats, else strings, and an empty cell of a numeric column is ``None`` (pandas' rule).

        Args:
            path: a UTF-8 CSV file whose first row names the columns.
            item_type: build each item as ``item_type(**row)``; else the item is the row dict.
            delimiter: as in :func:`csv.reader`.
            quotechar: as in :func:`csv.reader`.

        Raises:
            DatasetError: the file has no header, a row has more or fewer cells than the header, a cell
                does not parse as its field's type (names the file, line and column).
            FileNotFoundError: ``path`` does not exist.
        """
        where = os.fspath(path)
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.reader(f, delimiter=delimiter, quotechar=quotechar)
            try:
                header = next(reader)
            except StopIteration:
                raise DatasetError(
                    f"{where}: the CSV file is empty; expected a header row naming the columns."
                ) from None
            except csv.Error as exc:
                raise DatasetError(f"{where}: malformed CSV header ({exc}).") from None
            rows: list[tuple[int, dict[str, str]]] = []
            try:
                for cells in reader:
                    if not cells:
                        continue
                    if len(cells) != len(header):
                        raise DatasetError(
                            f"{where}, line {reader.line_num}: {len(cells)} cells, expected {len(header)} "
                            f"(the header names {header})."
                        )
                    rows.append((reader.line_num, dict(zip(header, cells))))
            except csv.Error as exc:
                raise DatasetError(f"{where}, line {reader.line_num}: malformed CSV ({exc}).") from None
        if item_type is not None:
            convs = csv_converters(item_type, header)
        else:
            convs = infer_csv_columns(header, [r for _, r in rows])
        items: list[Any] = []
        for lineno, row in rows:
            for name, conv in convs.items():
                try:
                    row[name] = conv(row[name])
                except ValueError as exc:
                    raise DatasetError(f"{where}, line {lineno}, column {name!r}: {exc}.") from None
            items.append(make_item(item_type, row, f"{where}, line {lineno}"))
        return cls(items)
