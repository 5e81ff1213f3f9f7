"""ember.data.vision.MnistDataset: reading the real IDX files, downloading from (local) mirrors with
SHA-256 checks, the offline error, and malformed files."""

from __future__ import annotations

import functools
import gzip
import http.server
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from ember.data import DatasetError
from ember.data.vision import MnistDataset, MnistItem, mnist_dir, mnist_missing

# The repository is cloned with shared/ beside it: <root>/main/packages/core/tests/this.py -> <root>/shared.
SHARED_MNIST = Path(os.environ.get("EMBER_TEST_MNIST") or
                    Path(__file__).resolve().parents[3].parent / "shared" / "data" / "mnist")
needs_mnist = pytest.mark.skipif(not (SHARED_MNIST / "t10k-labels-idx1-ubyte.gz").is_file(),
                                 reason=f"MNIST files not found in {SHARED_MNIST} (set EMBER_TEST_MNIST)")

# Published class frequencies of MNIST (LeCun et al.), an expectation independent of the reader.
TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path) -> None:
    monkeypatch.delenv("EMBER_DATA_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@needs_mnist
def test_train_and_test_from_the_real_files() -> None:
    train = MnistDataset.train(SHARED_MNIST)
    test = MnistDataset.test(root=SHARED_MNIST)
    assert len(train) == 60000 and len(test) == 10000
    assert np.bincount(train.labels, minlength=10).tolist() == TRAIN_COUNTS
    assert np.bincount(test.labels, minlength=10).tolist() == TEST_COUNTS
    item = train.get(0)
    assert isinstance(item, MnistItem) and item.label == 5 and type(item.label) is int
    assert item.image.shape == (28, 28) and item.image.dtype == np.uint8
    assert test.get(0).label == 7 and train.get(60000) is None
    # pixels against an independent read of the raw IDX bytes
    with gzip.open(SHARED_MNIST / "t10k-images-idx3-ubyte.gz", "rb") as f:
        raw = f.read()
    assert int.from_bytes(raw[:4], "big") == 2051
    np.testing.assert_array_equal(test.get(9999).image, np.frombuffer(raw[16 + 9999 * 784:], np.uint8).reshape(28, 28))
    assert 0 <= int(train.images.min()) and int(train.images.max()) == 255
    with pytest.raises(ValueError):
        item.image[0, 0] = 1  # items are read-only views into the shared storage


@needs_mnist
def test_env_var_and_default_directory(monkeypatch, tmp_path) -> None:
    data = tmp_path / "data"
    shutil.copytree(SHARED_MNIST, data / "mnist")
    monkeypatch.setenv("EMBER_DATA_DIR", str(data))
    assert mnist_dir() == data / "mnist"
    assert len(MnistDataset.test()) == 10000
    monkeypatch.setenv("EMBER_DATA_DIR", str(data / "mnist"))  # the files directly in it work too
    assert mnist_dir() == data / "mnist" and len(MnistDataset.test()) == 10000
    monkeypatch.delenv("EMBER_DATA_DIR")
    assert mnist_dir() == tmp_path / "xdg-cache" / "ember" / "mnist"
    assert mnist_dir("~/x") == Path.home() / "x"


@needs_mnist
def test_decompressed_files_are_read_too(tmp_path) -> None:
    for stem in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        with gzip.open(SHARED_MNIST / f"{stem}.gz", "rb") as src:
            (tmp_path / stem).write_bytes(src.read())
    ds = MnistDataset.test(tmp_path, download=False)
    assert len(ds) == 10000 and np.bincount(ds.labels).tolist() == TEST_COUNTS


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server(tmp_path) -> Iterator[str]:
    """A local HTTP server: /good/ serves the real files, /bad/ corrupted copies, /none/ nothing."""
    root = tmp_path / "www"
    (root / "good").mkdir(parents=True)
    (root / "bad").mkdir()
    for f in SHARED_MNIST.glob("*.gz"):
        shutil.copy(f, root / "good" / f.name)
        (root / "bad" / f.name).write_bytes(gzip.compress(b"\x00\x00\x08\x01" + b"\x00" * 8))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@needs_mnist
def test_download_from_mirrors_with_sha256_check(server, tmp_path) -> None:
    target = tmp_path / "dl"
    # the first mirror has no files, the second serves corrupted ones, the third the real ones
    ds = MnistDataset.test(target, mirrors=[f"{server}/none", f"{server}/bad", f"{server}/good/"])
    assert len(ds) == 10000 and np.bincount(ds.labels).tolist() == TEST_COUNTS
    assert sorted(p.name for p in target.iterdir()) == ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    # the default location (XDG cache) is used when no root is given
    assert len(MnistDataset.test(mirrors=[f"{server}/good"])) == 10000
    assert (tmp_path / "xdg-cache" / "ember" / "mnist" / "t10k-labels-idx1-ubyte.gz").is_file()


@needs_mnist
def test_corrupted_download_is_rejected(server, tmp_path) -> None:
    target = tmp_path / "dl"
    with pytest.raises(DatasetError) as info:
        MnistDataset.test(target, mirrors=[f"{server}/bad"])
    msg = str(info.value)
    assert "SHA-256 mismatch" in msg and str(target / "t10k-images-idx3-ubyte.gz") in msg
    assert not target.exists() or list(target.iterdir()) == []  # nothing unverified is kept


def test_offline_error_says_which_files_to_put_where(tmp_path) -> None:
    target = tmp_path / "empty"
    with pytest.raises(DatasetError) as info:
        MnistDataset.train(target, mirrors=["http://127.0.0.1:9"])  # nothing listens on port 9
    msg = str(info.value)
    assert str(target / "train-images-idx3-ubyte.gz") in msg and str(target / "train-labels-idx1-ubyte.gz") in msg
    assert "ossci-datasets.s3.amazonaws.com/mnist/train-images-idx3-ubyte.gz" in msg
    assert "EMBER_DATA_DIR" in msg and "http://127.0.0.1:9/train-images-idx3-ubyte.gz" in msg
    with pytest.raises(DatasetError, match=r"not found \(download=False\)"):
        MnistDataset.test(target, download=False)


def test_a_failed_download_creates_no_directory(tmp_path) -> None:
    """A mistyped root must not appear on disk because a download was tried there (issue 28)."""
    target = tmp_path / "mistyped" / "mnist"
    with pytest.raises(DatasetError):
        MnistDataset.train(target, mirrors=["http://127.0.0.1:9"])
    assert not (tmp_path / "mistyped").exists()
    with pytest.raises(DatasetError):
        MnistDataset.test()  # the default cache directory: not created either
    assert not (tmp_path / "xdg-cache").exists()


@needs_mnist
def test_a_rejected_download_creates_no_directory(server, tmp_path) -> None:
    target = tmp_path / "mistyped" / "mnist"
    with pytest.raises(DatasetError, match="SHA-256 mismatch"):
        MnistDataset.test(target, mirrors=[f"{server}/bad"])
    assert not (tmp_path / "mistyped").exists()
    assert len(MnistDataset.test(target, mirrors=[f"{server}/good"])) == 10000  # created once a download succeeds
    assert sorted(p.name for p in target.iterdir()) == ["t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]


def test_mnist_missing_names_the_absent_files(tmp_path) -> None:
    assert mnist_missing(tmp_path / "nowhere") == ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                                                   "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    assert not (tmp_path / "nowhere").exists()
    (tmp_path / "t10k-images-idx3-ubyte").write_bytes(b"")  # decompressed copies count
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(b"")
    assert mnist_missing(tmp_path) == ["train-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    assert mnist_missing(tmp_path, splits=("test",)) == ["t10k-labels-idx1-ubyte.gz"]
    with pytest.raises(ValueError, match="'train' and 'test'"):
        mnist_missing(tmp_path, splits=("valid",))


def _write_gz(path: Path, data: bytes) -> None:
    path.write_bytes(gzip.compress(data))


def test_malformed_idx_files_name_the_file(tmp_path) -> None:
    labels = b"\x00\x00\x08\x01" + (3).to_bytes(4, "big") + bytes([1, 2, 3])
    images_header = b"\x00\x00\x08\x03" + (3).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2
    cases = {
        "bad magic": (b"\x12\x34\x56\x78" + bytes(3 * 784), r"not an IDX file \(bad magic number 12345678"),
        "truncated": (images_header + bytes(2 * 784), r"IDX data truncated: the header gives shape \[3, 28, 28\]"),
        "trailing": (images_header + bytes(3 * 784 + 5), "IDX data has trailing bytes"),
    }
    for name, (images, pattern) in cases.items():
        d = tmp_path / name.replace(" ", "_")
        d.mkdir()
        _write_gz(d / "t10k-images-idx3-ubyte.gz", images)
        _write_gz(d / "t10k-labels-idx1-ubyte.gz", labels)
        with pytest.raises(DatasetError, match=pattern) as info:
            MnistDataset.test(d, download=False)
        assert "t10k-images-idx3-ubyte.gz" in str(info.value)
    d = tmp_path / "badgz"
    d.mkdir()
    (d / "t10k-images-idx3-ubyte.gz").write_bytes(gzip.compress(images_header + bytes(3 * 784))[:-20])
    _write_gz(d / "t10k-labels-idx1-ubyte.gz", labels)
    with pytest.raises(DatasetError, match=r"t10k-images-idx3-ubyte\.gz: corrupt or truncated gzip"):
        MnistDataset.test(d, download=False)
    d = tmp_path / "count"
    d.mkdir()
    _write_gz(d / "t10k-images-idx3-ubyte.gz", images_header + bytes(3 * 784))
    _write_gz(d / "t10k-labels-idx1-ubyte.gz", labels)
    with pytest.raises(DatasetError, match="MNIST test has 10000 images, the file holds 3"):
        MnistDataset.test(d, download=False)


def test_from_arrays_and_validation() -> None:
    images = np.zeros((2, 28, 28), np.uint8)
    ds = MnistDataset(images, np.array([3, 4]))
    assert ds.get(1).label == 4 and len(ds) == 2
    with pytest.raises(DatasetError, match=r"must be \[n, 28, 28\] uint8"):
        MnistDataset(np.zeros((2, 28, 28), np.float32), np.array([1, 2]))
    with pytest.raises(DatasetError, match="must lie in 0..9"):
        MnistDataset(images, np.array([1, 10]))
