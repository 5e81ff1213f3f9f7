"""``MnistDataset``: the MNIST handwritten digits (LeCun, Cortes and Burges), as Burn's
``burn::data::dataset::vision::MnistDataset``."""

from __future__ import annotations

import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._dataset import Dataset
from .._errors import DatasetError
from ._download import download_verified
from ._idx import read_idx

__all__ = ["MnistDataset", "MnistItem", "MIRRORS", "FILES", "mnist_dir", "mnist_missing"]

WIDTH = 28
HEIGHT = 28

#: The public mirrors tried in order (PyTorch's and TensorFlow's; yann.lecun.com no longer serves the files).
MIRRORS: tuple[str, ...] = (
    "https://ossci-datasets.s3.amazonaws.com/mnist",
    "https://storage.googleapis.com/cvdf-datasets/mnist",
)
"""The MNIST download mirrors, tried in order (files checked by sha256)."""

#: file stem -> (SHA-256 of the distributed ``.gz`` file, SHA-256 of its decompressed content).
FILES: dict[str, tuple[str, str]] = {
    "train-images-idx3-ubyte": ("440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
                                "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"),
    "train-labels-idx1-ubyte": ("3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
                                "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5"),
    "t10k-images-idx3-ubyte": ("8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
                               "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7"),
    "t10k-labels-idx1-ubyte": ("f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
                               "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2"),
}

_SPLITS = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", 60000),
           "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", 10000)}

# Arrays already read, shared (read-only) by the datasets alive: keyed by file identity.
_CACHE: weakref.WeakValueDictionary[tuple[str, int, int], np.ndarray] = weakref.WeakValueDictionary()


@dataclass(slots=True, eq=False)
class MnistItem:
    """One MNIST example (Burn's ``MnistItem``).

    Attributes:
        image: ``[28, 28]`` uint8 pixel intensities, 0 (background) to 255 (ink); a read-only view into
            the dataset's storage. Burn stores the same values as f32; convert with
            ``image.astype(np.float32)`` (the guide normalizes with ``((x / 255) - 0.1307) / 0.3081``).
        label: the digit, an int in ``0..9``.
    """

    image: np.ndarray
    label: int


def mnist_dir(root: str | os.PathLike[str] | None = None) -> Path:
    """Where the MNIST files are looked for and downloaded to.

    ``root`` when given (the directory holding the files); else ``$EMBER_DATA_DIR/mnist`` (or
    ``$EMBER_DATA_DIR`` itself if it holds the files and has no ``mnist`` subdirectory); else
    ``$XDG_CACHE_HOME/ember/mnist``, by default ``~/.cache/ember/mnist``.
    """
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get("EMBER_DATA_DIR")
    if env:
        base = Path(env).expanduser()
        if not (base / "mnist").is_dir() and any(_find(base, stem) for stem in FILES):
            return base
        return base / "mnist"
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "ember" / "mnist"


def _find(directory: Path, stem: str) -> Path | None:
    """The file for ``stem`` in ``directory``: ``stem.gz``, ``stem``, or the ``train-images.idx3-ubyte``
    spelling some copies use."""
    dotted = stem.replace("-idx", ".idx")
    for name in (stem + ".gz", stem, dotted + ".gz", dotted):
        p = directory / name
        if p.is_file():
            return p
    return None


def mnist_missing(root: str | os.PathLike[str] | None = None,
                  splits: Sequence[str] = ("train", "test")) -> list[str]:
    """The MNIST files of ``splits`` absent from :func:`mnist_dir` ``(root)``, as their distributed names
    (``train-images-idx3-ubyte.gz``, ...; a decompressed copy counts as present), in the order train images,
    train labels, test images, test labels. Reads nothing and creates nothing: for a program that checks its
    inputs before it starts.

    Raises:
        ValueError: a split other than ``"train"`` and ``"test"``.
    """
    unknown = [s for s in splits if s not in _SPLITS]
    if unknown:
        raise ValueError(f"mnist_missing: splits are 'train' and 'test', got {unknown}.")
    directory = mnist_dir(root)
    stems = [stem for split in _SPLITS if split in splits for stem in _SPLITS[split][:2]]
    return [stem + ".gz" for stem in stems if _find(directory, stem) is None]


def _read(path: Path) -> np.ndarray:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    arr = _CACHE.get(key)
    if arr is None:
        arr = read_idx(path)
        _CACHE[key] = arr
    return arr


def _missing_error(directory: Path, missing: list[str], failures: list[str], download: bool) -> DatasetError:
    wanted = "\n".join(f"  {directory / (stem + '.gz')}" for stem in missing)
    urls = "\n".join(f"  {MIRRORS[0]}/{stem}.gz" for stem in missing)
    tried = ("\nDownload attempts failed:\n" + "\n".join(f"  {f}" for f in failures)) if failures else ""
    how = "" if download else " (download=False)"
    return DatasetError(
        f"MNIST files not found{how}. Put these files (gzipped as distributed, or decompressed without .gz) at:\n"
        f"{wanted}\nThey are available from:\n{urls}\n(or {MIRRORS[1]}/...). Alternatively set EMBER_DATA_DIR to a "
        f"directory whose mnist/ subdirectory holds them, or pass root=DIRECTORY.{tried}"
    )


class MnistDataset(Dataset[MnistItem]):
    """The MNIST digits: 60,000 training and 10,000 test images of ``[28, 28]`` pixels with labels.

    >>> train = MnistDataset.train()                 # doctest: +SKIP
    >>> item = train.get(0); item.image.shape, item.label
    ((28, 28), 5)

    :meth:`train` and :meth:`test` read the four standard IDX files (gzipped or not) from
    :func:`mnist_dir`; when they are absent, they are downloaded from :data:`MIRRORS` with urllib and
    checked against their SHA-256 (:data:`FILES`). The arrays are read once per process while a dataset
    using them is alive; items are views into them (read-only).

    Args:
        images: ``[n, 28, 28]`` uint8.
        labels: ``[n]`` integers in ``0..9``.

    Raises:
        DatasetError: shapes, dtypes or label values that are not MNIST's.
    """

    __slots__ = ("_images", "_labels", "_label_list")

    def __init__(self, images: np.ndarray, labels: np.ndarray, *, source: str = "MnistDataset") -> None:
        images = np.asarray(images)
        labels = np.asarray(labels)
        if images.ndim != 3 or images.shape[1:] != (HEIGHT, WIDTH) or images.dtype != np.uint8:
            raise DatasetError(
                f"{source}: MNIST images must be [n, {HEIGHT}, {WIDTH}] uint8, found "
                f"{list(images.shape)} {images.dtype}."
            )
        if labels.ndim != 1 or labels.dtype.kind not in "iu" or len(labels) != len(images):
            raise DatasetError(
                f"{source}: MNIST labels must be [n] integers with n = {len(images)} images, found "
                f"{list(labels.shape)} {labels.dtype}."
            )
        if labels.size and (labels.min() < 0 or labels.max() > 9):
            raise DatasetError(f"{source}: MNIST labels must lie in 0..9, found {labels.min()}..{labels.max()}.")
        if images.flags.writeable:
            images = images.view()
            images.flags.writeable = False
        self._images = images
        self._labels = labels
        self._label_list: list[int] = labels.tolist()

    @classmethod
    def train(cls, root: str | os.PathLike[str] | None = None, *, download: bool = True,
              mirrors: Sequence[str] | None = None) -> MnistDataset:
        """The 60,000 training examples (Burn's ``MnistDataset::train``).

        Args:
            root: the directory holding the files (default: :func:`mnist_dir`).
            download: fetch missing files from ``mirrors``.
            mirrors: base URLs tried in order (default :data:`MIRRORS`).

        Raises:
            DatasetError: the files are missing and cannot be downloaded (the message says which files to
                put where), or a file is malformed (names it).
        """
        return cls._load("train", root, download, mirrors)

    @classmethod
    def test(cls, root: str | os.PathLike[str] | None = None, *, download: bool = True,
             mirrors: Sequence[str] | None = None) -> MnistDataset:
        """The 10,000 test examples (Burn's ``MnistDataset::test``); arguments as :meth:`train`."""
        return cls._load("test", root, download, mirrors)

    @classmethod
    def _load(cls, split: str, root: Any, download: bool, mirrors: Sequence[str] | None) -> MnistDataset:
        directory = mnist_dir(root)
        images_stem, labels_stem, count = _SPLITS[split]
        stems = (images_stem, labels_stem)
        missing = [s for s in stems if _find(directory, s) is None]
        failures: list[str] = []
        if missing and download:
            for stem in missing:
                gz_sha, raw_sha = FILES[stem]
                urls = [f"{m.rstrip('/')}/{stem}.gz" for m in (mirrors if mirrors is not None else MIRRORS)]
                try:
                    failures += download_verified(stem + ".gz", urls, directory / (stem + ".gz"), gz_sha, raw_sha)
                except OSError as exc:  # the directory cannot be created or written
                    failures.append(f"{directory}: {exc}")
            missing = [s for s in stems if _find(directory, s) is None]
        if missing:
            raise _missing_error(directory, missing, failures, download)
        images_path, labels_path = (_find(directory, s) for s in stems)
        assert images_path is not None and labels_path is not None
        images = _read(images_path)
        labels = _read(labels_path)
        if images.ndim != 3 or images.shape[1:] != (HEIGHT, WIDTH) or images.dtype != np.uint8:
            raise DatasetError(
                f"{images_path}: expected MNIST images [n, 28, 28] uint8, the IDX file holds "
                f"{list(images.shape)} {images.dtype}."
            )
        if labels.ndim != 1 or len(labels) != len(images):
            raise DatasetError(
                f"{labels_path}: expected {len(images)} labels to match {images_path.name}, the IDX file holds "
                f"shape {list(labels.shape)}."
            )
        if len(images) != count:
            raise DatasetError(f"{images_path}: MNIST {split} has {count} images, the file holds {len(images)}.")
        return cls(images, labels, source=str(labels_path))

    @property
    def images(self) -> np.ndarray:
        """All images, ``[n, 28, 28]`` uint8 (read-only): for vectorized preprocessing."""
        return self._images

    @property
    def labels(self) -> np.ndarray:
        """All labels, ``[n]`` (uint8 when read from IDX)."""
        return self._labels

    def get(self, index: int) -> MnistItem | None:
        if 0 <= index < len(self._label_list):
            return MnistItem(self._images[index], self._label_list[index])
        return None

    def __len__(self) -> int:
        return len(self._label_list)
