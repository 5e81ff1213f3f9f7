"""Files written by ``torch.save`` read back exactly: every dtype, both formats, pickle protocols 2/4/5.

Expected values come from the torch tensors themselves (exact equality; bfloat16 compared bit for bit).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pytest

from ember import DType, TensorData
from ember_import import LoadArgs, ModelImportError, load_tensors, read_pytorch

torch = pytest.importorskip("torch")

FORMATS = [
    pytest.param(True, 2, id="zip-p2"),
    pytest.param(True, 4, id="zip-p4"),
    pytest.param(True, 5, id="zip-p5"),
    pytest.param(False, 2, id="legacy-p2"),
    pytest.param(False, 4, id="legacy-p4"),
    pytest.param(False, 5, id="legacy-p5"),
]
DTYPES = {
    "float16": (torch.float16, DType.FLOAT16),
    "bfloat16": (torch.bfloat16, DType.BFLOAT16),
    "float32": (torch.float32, DType.FLOAT32),
    "float64": (torch.float64, DType.FLOAT64),
    "int8": (torch.int8, DType.INT8),
    "int16": (torch.int16, DType.INT16),
    "int32": (torch.int32, DType.INT32),
    "int64": (torch.int64, DType.INT64),
    "uint8": (torch.uint8, DType.UINT8),
    "bool": (torch.bool, DType.BOOL),
}


def _sample(tdtype: torch.dtype, shape: tuple[int, ...], seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    if tdtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if tdtype.is_floating_point:
        x = torch.randn(shape, generator=g, dtype=torch.float64) * 100
        return x.to(tdtype)
    info = torch.iinfo(tdtype)
    low, high = max(info.min, -(2**40)), min(info.max, 2**40)
    return torch.randint(low, high, shape, generator=g, dtype=torch.int64).to(tdtype)


def assert_same(data: TensorData, ref: torch.Tensor) -> None:
    """Exact comparison against the torch tensor: shape, dtype and every bit."""
    ref = ref.detach()
    assert data.shape == tuple(ref.shape)
    assert data.dtype is {v[0]: v[1] for v in DTYPES.values()}[ref.dtype]
    if ref.dtype == torch.bfloat16:
        expected = ref.contiguous().view(torch.int16).numpy().view(np.uint16)
        np.testing.assert_array_equal(data.as_bits(), expected)
    else:
        expected = ref.contiguous().numpy()
        assert data.as_bits().dtype == expected.dtype
        np.testing.assert_array_equal(data.as_bits(), expected)
    assert data.as_bits().flags.c_contiguous


def _save(obj: object, path: Path, zipped: bool, proto: int) -> Path:
    torch.save(obj, path, _use_new_zipfile_serialization=zipped, pickle_protocol=proto)
    return path


@pytest.mark.parametrize(("zipped", "proto"), FORMATS)
@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
def test_every_dtype(tmp_path: Path, zipped: bool, proto: int, mmap: bool) -> None:
    sd = {name: _sample(td, (3, 5), i) for i, (name, (td, _)) in enumerate(DTYPES.items())}
    sd["scalar"] = torch.tensor(2.5)
    sd["empty"] = torch.zeros(0, 4, dtype=torch.int32)
    f = read_pytorch(_save(sd, tmp_path / "m.pt", zipped, proto), mmap=mmap)
    assert f.format == ("pytorch-zip" if zipped else "pytorch-legacy")
    assert list(f.tensors) == list(sd)
    for k, t in sd.items():
        assert_same(f.tensors[k], t)


def test_bool_values(tmp_path: Path) -> None:
    t = torch.tensor([[True, False, True], [False, False, True]])
    f = read_pytorch(_save({"b": t}, tmp_path / "m.pt", True, 2))
    assert f.tensors["b"].to_list() == [[True, False, True], [False, False, True]]


def test_bfloat16_special_values(tmp_path: Path) -> None:
    t = torch.tensor([0.0, -0.0, 1.0, -2.5, float("inf"), float("-inf"), 3.0e38, 1e-40], dtype=torch.bfloat16)
    f = read_pytorch(_save({"x": t}, tmp_path / "m.pt", True, 2))
    assert_same(f.tensors["x"], t)
    np.testing.assert_array_equal(f.tensors["x"].to_numpy(), t.float().numpy())


@pytest.mark.parametrize(("zipped", "proto"), FORMATS)
@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
def test_strided_views_and_shared_storage(tmp_path: Path, zipped: bool, proto: int, mmap: bool) -> None:
    base = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    views = {
        "base": base,
        "transposed": base.t(),
        "sliced": base[1:5, 2:9:3],
        "row": base[3],
        "offset_flat": base.view(-1)[17:29],
        "permuted": base.reshape(2, 3, 10).permute(2, 0, 1),
        "expanded": torch.arange(4.0).unsqueeze(0).expand(3, 4),
        "bf16_t": torch.randn(4, 3).to(torch.bfloat16).t(),
        "int_slice": torch.arange(100, dtype=torch.int64)[::7],
        "bool_t": (torch.arange(12).reshape(3, 4) % 3 == 0).t(),
    }
    f = read_pytorch(_save(views, tmp_path / "m.pt", zipped, proto), mmap=mmap)
    for k, t in views.items():
        assert_same(f.tensors[k], t)


def test_shared_storage_is_stored_once(tmp_path: Path) -> None:
    base = torch.randn(256, 256)
    path = _save({"a": base, "b": base.t(), "c": base[:10]}, tmp_path / "m.pt", True, 2)
    with zipfile.ZipFile(path) as z:
        assert sum(1 for n in z.namelist() if "/data/" in n) == 1
    f = read_pytorch(path)
    assert_same(f.tensors["a"], base)
    assert_same(f.tensors["b"], base.t())
    assert_same(f.tensors["c"], base[:10])


@pytest.mark.parametrize(("zipped", "proto"), FORMATS)
def test_parameters_and_module_state_dict(tmp_path: Path, zipped: bool, proto: int) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
    model(torch.randn(5, 4))  # running stats move
    sd = model.state_dict(keep_vars=True)  # Parameters, not plain tensors
    assert isinstance(sd["0.weight"], torch.nn.Parameter)
    f = read_pytorch(_save(sd, tmp_path / "m.pt", zipped, proto))
    assert list(f.tensors) == list(sd)
    for k, t in sd.items():
        assert_same(f.tensors[k], t)
    assert f.tensors["2.num_batches_tracked"].dtype is DType.INT64


def test_parameter_alone_and_requires_grad_false(tmp_path: Path) -> None:
    p = torch.nn.Parameter(torch.randn(3, 2), requires_grad=False)
    f = read_pytorch(_save({"p": p, "lst": [p, torch.ones(2)]}, tmp_path / "m.pt", True, 4))
    assert_same(f.tensors["p"], p)
    assert_same(f.tensors["lst.0"], p)
    assert_same(f.tensors["lst.1"], torch.ones(2))


@pytest.mark.parametrize(("zipped", "proto"), FORMATS)
def test_nested_checkpoint_with_top_level_key(tmp_path: Path, zipped: bool, proto: int) -> None:
    torch.manual_seed(1)
    net = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.ReLU(), torch.nn.Conv2d(2, 3, 3))
    ckpt = {
        "epoch": 12,
        "model_state_dict": net.state_dict(),  # an OrderedDict
        "optimizer": {"param_groups": [{"lr": 0.01, "betas": (0.9, 0.999), "params": [0, 1, 2, 3]}]},
        "config": OrderedDict(d_model=64, name="tiny", dropout=0.1, flags={"amp": False}),
        "note": None,
    }
    path = _save(ckpt, tmp_path / "ckpt.pt", zipped, proto)
    f = read_pytorch(path)
    assert f.values["epoch"] == 12
    assert f.values["config.name"] == "tiny"
    assert f.values["config.flags.amp"] is False
    assert f.values["optimizer.param_groups.0.betas"] == (0.9, 0.999)
    assert f.values["note"] is None
    for k, t in net.state_dict().items():
        assert_same(f.tensors[f"model_state_dict.{k}"], t)
    result = load_tensors(LoadArgs(path).with_top_level_key("model_state_dict").with_map_indices_contiguous(False))
    assert list(result.tensors) == list(net.state_dict())
    for k, t in net.state_dict().items():
        assert_same(result.tensors[k], t)
    assert type(f.root["model_state_dict"]) is dict  # OrderedDict became a plain dict, order kept


def test_any_archive_prefix(tmp_path: Path) -> None:
    """torch names the archive directory after the file in some versions; any single name works."""
    t = torch.randn(7, 3)
    src = _save({"w": t}, tmp_path / "m.pt", True, 2)
    dst = tmp_path / "renamed.pt"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr("my_model_v2/" + info.filename.split("/", 1)[1], zin.read(info))
    for mmap in (False, True):
        assert_same(read_pytorch(dst, mmap=mmap).tensors["w"], t)


def test_big_endian_archive(tmp_path: Path) -> None:
    """A file saved on a big-endian machine (byteorder record 'big') is byte-swapped on load."""
    t = torch.randn(4, 5, dtype=torch.float64)
    i = torch.arange(-6, 6, dtype=torch.int32)
    src = _save({"t": t, "i": i}, tmp_path / "m.pt", True, 2)
    dst = tmp_path / "big.pt"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith("/byteorder"):
                data = b"big"
            elif info.filename.endswith("/data/0"):
                data = np.frombuffer(data, "<f8").astype(">f8").tobytes()
            elif info.filename.endswith("/data/1"):
                data = np.frombuffer(data, "<i4").astype(">i4").tobytes()
            zout.writestr(info.filename, data)
    f = read_pytorch(dst)
    assert f.metadata["byteorder"] == "big"
    assert_same(f.tensors["t"], t)
    assert_same(f.tensors["i"], i)


def test_mmap_tensors_are_private_copies_on_write(tmp_path: Path) -> None:
    t = torch.arange(1000, dtype=torch.float32)
    path = _save({"t": t}, tmp_path / "m.pt", True, 2)
    before = path.read_bytes()
    arr = read_pytorch(path, mmap=True).tensors["t"].as_bits()
    assert arr.flags.writeable
    arr[:] = -1  # writes stay in this process's pages
    assert path.read_bytes() == before
    assert_same(read_pytorch(path, mmap=True).tensors["t"], t)


def test_small_slice_does_not_pin_large_storage(tmp_path: Path) -> None:
    big = torch.randn(1000, 100)
    f = read_pytorch(_save({"head": big[:2]}, tmp_path / "m.pt", True, 2))  # saves the whole storage
    arr = f.tensors["head"].as_bits()
    assert arr.base is None or arr.base.nbytes < big.numel() * 4
    assert_same(f.tensors["head"], big[:2])


def test_unsupported_dtype_named(tmp_path: Path) -> None:
    path = _save({"c": torch.zeros(3, dtype=torch.complex64)}, tmp_path / "c.pt", True, 2)
    with pytest.raises(ModelImportError, match="complex64"):
        read_pytorch(path)
    path = _save({"u": torch.zeros(3, dtype=torch.uint16)}, tmp_path / "u.pt", True, 2)
    with pytest.raises(ModelImportError, match="uint16"):
        read_pytorch(path)


def test_whole_module_pickle_refused(tmp_path: Path) -> None:
    path = _save(torch.nn.Linear(2, 2), tmp_path / "m.pt", True, 2)
    with pytest.raises(ModelImportError, match="torch.nn.modules.linear.Linear"):
        read_pytorch(path)


def test_torch_is_never_imported(tmp_path: Path) -> None:
    path = _save({"w": torch.randn(3, 3), "b": torch.ones(2).to(torch.bfloat16)}, tmp_path / "m.pt", True, 2)
    code = (
        "import sys, ember_import\n"
        f"f = ember_import.read_pytorch({str(path)!r}); ember_import.read_pytorch({str(path)!r}, mmap=True)\n"
        "assert f.tensors['w'].shape == (3, 3)\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tensor_with_python_attributes(tmp_path: Path) -> None:
    """A tensor carrying Python attributes pickles through ``_rebuild_from_type_v2``; the data is kept."""
    t = torch.arange(6.0).reshape(2, 3)
    t.note = "calibrated"  # type: ignore[attr-defined]
    path = _save({"t": t}, tmp_path / "m.pt", True, 2)
    with zipfile.ZipFile(path) as z:
        pkl = next(n for n in z.namelist() if n.endswith("/data.pkl"))
        assert b"_rebuild_from_type_v2" in z.read(pkl)
    assert_same(read_pytorch(path).tensors["t"], t)


def test_expanded_tensor_limit(tmp_path: Path) -> None:
    """An expanded view can exceed its storage; max_tensor_bytes bounds what it may materialize."""
    e = torch.arange(3.0).unsqueeze(1).expand(3, 1000)  # 12 bytes stored, 12 kB materialized
    path = _save({"e": e}, tmp_path / "m.pt", True, 2)
    assert_same(read_pytorch(path).tensors["e"], e)
    with pytest.raises(ModelImportError, match="above the limit of 1000 bytes"):
        read_pytorch(path, max_tensor_bytes=1000)
    with pytest.raises(ModelImportError, match="above the limit"):
        load_tensors(LoadArgs(path).with_max_tensor_bytes(1000))


def test_bare_storage_becomes_1d_tensor(tmp_path: Path) -> None:
    t = torch.arange(5, dtype=torch.int32)
    path = _save({"s": t.untyped_storage()}, tmp_path / "m.pt", True, 2)
    data = read_pytorch(path).tensors["s"]
    assert data.dtype is DType.UINT8
    np.testing.assert_array_equal(data.as_bits(), t.numpy().view(np.uint8))


@pytest.mark.parametrize("zipped", [True, False], ids=["zip", "legacy"])
@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
def test_buffers_freed_without_the_cyclic_gc(tmp_path: Path, zipped: bool, mmap: bool) -> None:
    """Dropping the result frees the storage buffers at once (no reference cycle keeps 100s of MB alive)."""
    import gc
    import weakref

    path = _save({"w": torch.randn(64, 64), "b": torch.randn(64)}, tmp_path / "m.pt", zipped, 2)
    gc.collect()
    gc.disable()
    try:
        f = read_pytorch(path, mmap=mmap)
        arr = f.tensors["w"].as_bits()
        while isinstance(arr.base, np.ndarray):
            arr = arr.base
        ref = weakref.ref(arr)
        del arr, f
        assert ref() is None
        result = load_tensors(LoadArgs(path).with_mmap(mmap))
        arr = result.tensors["w"].as_bits()
        while isinstance(arr.base, np.ndarray):
            arr = arr.base
        ref = weakref.ref(arr)
        del arr, result
        assert ref() is None
    finally:
        gc.enable()
