"""Tar-format checkpoints of PyTorch < 0.4 (issue 34): read like the zip format, with the same guarantees.

Today's torch cannot write them, so the files are built member by member in the layout torch's own reader
(``torch/serialization.py`` ``legacy_load``) expects, by ``_import_craft.write_tar``. The independent expectation
is torch itself: every benign file is first loaded with ``torch.load(path, weights_only=False)`` (torch's tar
reader), and Ember must give the same values. The hostile files must end in a ModelImportError naming the file.
"""

from __future__ import annotations

import pickle
import tarfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import _import_craft as craft
from ember import DType
from ember_import import LoadArgs, ModelImportError, load_tensors, read_pytorch


def _write(tmp_path: Path, members: list[tuple[str, bytes]], name: str = "old.pt", **kw: Any) -> Path:
    path = tmp_path / name
    craft.write_tar(path, members, **kw)
    return path


def _torch_values(path: Path) -> dict[str, np.ndarray]:
    torch = pytest.importorskip("torch")
    loaded = torch.load(path, weights_only=False)
    out: dict[str, np.ndarray] = {}

    def walk(prefix: str, v: Any) -> None:
        if isinstance(v, torch.Tensor):
            out[prefix] = v.numpy()
        elif isinstance(v, torch.storage.TypedStorage):
            with warnings.catch_warnings():  # (TypedStorage is deprecated; the file holds one)
                warnings.simplefilter("ignore")
                out[prefix] = torch.empty(0, dtype=v.dtype).set_(v._untyped_storage).numpy()
        elif isinstance(v, dict):
            for k, c in v.items():
                walk(f"{prefix}.{k}" if prefix else str(k), c)
    walk("", loaded)
    return out


def _assert_same(path: Path, want: dict[str, np.ndarray], **kw: Any) -> None:
    f = read_pytorch(path, **kw)
    assert f.format == "pytorch-tar"
    got = {k: v.to_numpy() for k, v in f.tensors.items()}
    assert sorted(got) == sorted(want)
    for k, w in want.items():
        assert got[k].dtype == w.dtype and got[k].shape == w.shape, k
        np.testing.assert_array_equal(got[k], w, err_msg=k)


def _model() -> dict[str, np.ndarray]:
    """``Sequential(Linear(4, 3), BatchNorm1d(3))`` as torch 0.3 saved it, plus every element type of the time."""
    w = (np.arange(12, dtype=np.float32).reshape(3, 4) - 6) / np.float32(10)
    return {
        "0.weight": w, "0.weight.T": w.T,
        "0.bias": np.array([0.5, -0.25, 0.125], np.float32),
        "1.running_mean": np.array([0.1, 0.2, 0.3], np.float32),
        "1.running_var": np.array([1.5, 2.5, 3.5], np.float32),
        "d": np.linspace(-1, 1, 5), "h": np.array([[1.5, -2.0]], np.float16),
        "l": np.array([7, -(2**40)], np.int64), "i": np.arange(6, dtype=np.int32).reshape(1, 2, 3),
        "s": np.array([-3, 3], np.int16), "c": np.array([-128, 127], np.int8), "u": np.array([0, 255], np.uint8),
        "scalar": np.array(2.5, np.float32), "empty": np.zeros((0, 3), np.float32),
    }


@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
def test_state_dict_matches_torch(tmp_path: Path, mmap: bool) -> None:
    arrays = _model()
    path = _write(tmp_path, craft.tar_checkpoint(arrays))
    want = _torch_values(path)
    for k, a in arrays.items():  # torch agrees with the arrays the file was built from
        np.testing.assert_array_equal(want[k], a)
    _assert_same(path, want, mmap=mmap)


def test_storage_views_offsets_strides_and_nesting_match_torch(tmp_path: Path) -> None:
    """A storage view (a slice of another storage), a tensor at an offset with strides, a stride-0 (expanded)
    tensor, a bare storage, the same tensor twice and a checkpoint dict around the state_dict."""
    data = np.arange(20, dtype=np.float32) / np.float32(4)
    storages = [(1, "FloatStorage", 20, data.tobytes()), (5, "LongStorage", 2, np.array([3, 9], np.int64).tobytes())]
    views = [(2, 1, 10, 6)]  # storage 2: elements 10..15 of storage 1
    tensors = [
        (11, 1, (2, 3), (1, 2), 4, "FloatTensor"),  # a strided view at offset 4
        (12, 2, (2, 3), (3, 1), 0, "FloatTensor"),  # the whole view storage
        (13, 1, (3, 4), (0, 1), 1, "FloatTensor"),  # expanded along dim 0
        (14, 5, (), (), 1, "LongTensor"),
    ]
    inner = craft.tar_object({"a": 11, "b": 12, "c": 13, "again": 11})
    obj = craft._p2(craft.EMPTY_DICT + craft.st("model") + inner[2:-1] + craft.SETITEM
                    + craft.st("epoch") + craft.num(3) + craft.SETITEM
                    + craft.st("step") + craft.st("14") + craft.BINPERSID + craft.SETITEM
                    + craft.st("raw") + craft.st("5") + craft.BINPERSID + craft.SETITEM)
    members = [("sys_info", pickle.dumps(craft.SYS_INFO, protocol=2)), ("pickle", obj),
               ("tensors", craft.tar_tensors(tensors)), ("storages", craft.tar_storages(storages, views))]
    path = _write(tmp_path, members)
    want = _torch_values(path)
    np.testing.assert_array_equal(want["model.a"], np.lib.stride_tricks.as_strided(
        data[4:], (2, 3), (4, 8)))
    np.testing.assert_array_equal(want["model.b"], data[10:16].reshape(2, 3))
    np.testing.assert_array_equal(want["raw"], [3, 9])
    _assert_same(path, want)
    f = read_pytorch(path)
    assert f.root["epoch"] == 3 and f.tensors["model.again"] is f.tensors["model.a"]


def test_without_sys_info_and_in_any_member_order(tmp_path: Path) -> None:
    members = craft.tar_checkpoint({"w": np.arange(4, dtype=np.float64)})
    path = _write(tmp_path, members[::-1][:3])  # storages, tensors, pickle; no sys_info
    _assert_same(path, _torch_values(path))


def test_empty_state_dict(tmp_path: Path) -> None:
    path = _write(tmp_path, craft.tar_checkpoint({}))
    assert _torch_values(path) == {}
    assert read_pytorch(path).root == {}


def test_big_endian_writer_is_read_in_its_byte_order(tmp_path: Path) -> None:
    """sys_info says the writer was big-endian (torch 2 ignores it and would read garbage): Ember honours it."""
    arrays = {"w": np.arange(6, dtype=np.float32).reshape(2, 3) - 2, "n": np.array([1, -(2**33)], np.int64)}
    path = _write(tmp_path, craft.tar_checkpoint(arrays, order=">"))
    _assert_same(path, arrays)


def test_loading_through_load_args_and_the_recorder_path(tmp_path: Path) -> None:
    path = _write(tmp_path, craft.tar_checkpoint({"fc.weight": np.ones((2, 2), np.float32),
                                                  "fc.bias": np.zeros(2, np.float32)}))
    result = load_tensors(LoadArgs(path).with_key_remap(r"^fc\.", "linear."))
    assert sorted(result.tensors) == ["linear.bias", "linear.weight"]
    assert result.tensors["linear.weight"].dtype is DType.FLOAT32


#: Burn's tar fixtures (``burn-store``'s ``create_tar_format.py``): name -> tensors, in Burn's layout
BURN_FIXTURES: dict[str, dict[str, Any]] = {
    "tar_float32": {"tensor": np.array([1.0, 2.5, -3.7, 0.0], np.float32)},
    "tar_float64": {"tensor": np.array([1.1, 2.2, 3.3])},
    "tar_int64": {"tensor": np.array([100, -200, 300, 0], np.int64)},
    "tar_weight_bias": {"weight": np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], np.float32),
                        "bias": np.array([0.01, 0.02], np.float32)},
    "tar_multi_dtype": {"float_tensor": np.array([1.5, 2.5, 3.5], np.float32),
                        "double_tensor": np.array([1.111, 2.222]), "int_tensor": np.array([10, 20, 30, 40], np.int64)},
    "tar_2d_tensor": {"matrix": np.arange(1, 13, dtype=np.float32).reshape(3, 4)},
}


@pytest.mark.parametrize("persistent", [False, True], ids=["plain-tuple", "persistent-id"])
@pytest.mark.parametrize("name", sorted(BURN_FIXTURES))
def test_burns_tar_fixtures_read_as_burn_does(tmp_path: Path, name: str, persistent: bool) -> None:
    """Burn's six tar fixtures have no view list and no ``tensors`` member and rebuild tensors from zip-style
    storage tuples: torch 2.13 cannot read them (it stops where the view list should be), Burn and Ember do."""
    path = _write(tmp_path, craft.burn_tar(BURN_FIXTURES[name], persistent=persistent), f"{name}.tar")
    _assert_same(path, BURN_FIXTURES[name])
    torch = pytest.importorskip("torch")
    with pytest.raises(EOFError):
        torch.load(path, weights_only=False)


# --- hostile tar files: each ends in a ModelImportError naming the file -------------------------------------

def _good() -> list[tuple[str, bytes]]:
    return craft.tar_checkpoint({"w": np.arange(4, dtype=np.float32)})


def _swap(members: list[tuple[str, bytes]], name: str, data: bytes) -> list[tuple[str, bytes]]:
    return [(n, data if n == name else d) for n, d in members]


HOSTILE_TAR: dict[str, tuple[Any, str]] = {
    "symlink": (lambda p: _write(p, _good() + [("link", b"")], kinds={"link": tarfile.SYMTYPE}), "a link"),
    "hardlink": (lambda p: _write(p, _good() + [("hard", b"")], kinds={"hard": tarfile.LNKTYPE}), "a link"),
    "device": (lambda p: _write(p, _good() + [("dev", b"")], kinds={"dev": tarfile.CHRTYPE}), "a device"),
    "directory": (lambda p: _write(p, [("d", b"")] + _good(), kinds={"d": tarfile.DIRTYPE}), "a directory"),
    "absolute": (lambda p: _write(p, _good() + [("/etc/cron.d/x", b"x")]), "absolute"),
    "dotdot": (lambda p: _write(p, _good() + [("../../x", b"x")]), "'..'"),
    "duplicate": (lambda p: _write(p, _good() + [("pickle", craft.tar_object({"w": 2000}))]), "more than once"),
    "size-past-end": (lambda p: _write(p, _good(), sizes={"storages": 1 << 30}), "past the end"),
    "missing-member": (lambda p: _write(p, _good()[:3]), "without the member"),
    "tensor-twice": (lambda p: _write(p, _swap(_good(), "tensors", craft.tar_tensors(
        [(2000, 1000, (4,), (1,), 0, "FloatTensor")] * 2))), "declared twice"),
    "too-many-members": (lambda p: _write(p, _good() + [(f"m{i}", b"") for i in range(70)]), "more than 64"),
    "forged-numel": (lambda p: _write(p, _swap(_good(), "storages", craft.tar_storages(
        [(1000, "FloatStorage", 1 << 40, b"\0" * 16)]))), "declares"),
    "storage-count": (lambda p: _write(p, _swap(_good(), "storages", craft._p2(craft.num(10**9)))),
                      "storage count"),
    "tensor-outside": (lambda p: _write(p, _swap(_good(), "tensors", craft.tar_tensors(
        [(2000, 1000, (4,), (1,), 2, "FloatTensor")]))), "holds only"),
    "negative-stride": (lambda p: _write(p, _swap(_good(), "tensors", craft.tar_tensors(
        [(2000, 1000, (2,), (-1,), 3, "FloatTensor")]))), "negative"),
    "huge-rank": (lambda p: _write(p, _swap(_good(), "tensors", craft._p2(craft.num(1)) + craft._p2(craft.tup(
        [craft.num(2000), craft.num(1000), craft.glob("torch", "FloatTensor")])) + b"\xff\xff\xff\x7f" + b"\0" * 28)),
                  "rank"),
    "view-outside": (lambda p: _write(p, _swap(_good(), "storages", craft.tar_storages(
        [(1000, "FloatStorage", 4, b"\0" * 16)], [(7, 1000, 3, 5)]))), "outside"),
    "view-of-unknown-root": (lambda p: _write(p, _swap(_good(), "storages", craft.tar_storages(
        [(1000, "FloatStorage", 4, b"\0" * 16)], [(7, 99, 0, 1)]))), "views storage 99"),
    "unknown-key": (lambda p: _write(p, _swap(_good(), "pickle", craft.tar_object({"w": 31337}))), "31337"),
    "stride0-budget": (lambda p: _write(p, _swap(_good(), "tensors", craft.tar_tensors(
        [(2000, 1000, (1 << 20, 1 << 12), (0, 0), 0, "FloatTensor")]))), "limit"),
    "global": (lambda p: _write(p, _swap(_good(), "pickle", craft._p2(
        craft.glob("os", "system") + craft.tup([craft.st("echo pwned")]) + craft.REDUCE))), "os.system"),
    "module": (lambda p: _write(p, _swap(_good(), "pickle", craft._p2(craft.tup(
        [craft.glob("torch.nn.modules.linear", "Linear"), craft.st("f.py"), craft.st("src")]) + craft.BINPERSID))),
               "nn.Module"),
    "untyped-key": (lambda p: _write(p, _swap(_good(), "pickle", craft.tar_object({"w": craft.st("x1")
                                                                                    + craft.BINPERSID}))),
                    "integer key"),
    "burn-ref-wrong-size": (lambda p: _write(p, craft.burn_tar({"w": np.zeros(4, np.float32)}, numel_delta=5)),
                            "but the file stores"),
    "burn-ref-unknown": (lambda p: _write(p, _swap(craft.burn_tar({"w": np.zeros(4, np.float32)}), "storages",
                                                   craft.tar_storages([(7, "FloatStorage", 4, b"\0" * 16)]))),
                         "storage 0, which the file does not hold"),
    "truncated": (lambda p: p.joinpath("old.pt").write_bytes(
        _write(p, _good(), "full.pt").read_bytes()[:1500]) and p / "old.pt", "truncated"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TAR))
def test_hostile_tar_ends_in_a_clean_error_naming_the_file(tmp_path: Path, name: str) -> None:
    build, match = HOSTILE_TAR[name]
    path = build(tmp_path)
    with pytest.raises(ModelImportError, match=match) as info:
        read_pytorch(path, max_tensor_bytes=1 << 24)
    assert str(path) in str(info.value)
    assert not (tmp_path / "etc").exists() and not list(tmp_path.parent.glob("x"))  # nothing extracted
