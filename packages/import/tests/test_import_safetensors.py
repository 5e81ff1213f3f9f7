"""Reading .safetensors files: every dtype (bfloat16 as bits), mmap, LoadArgs, malformed headers."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from ember import DType
from ember_import import LoadArgs, ModelImportError, load_tensors, read_safetensors
from ember_import.safetensors import read_header

torch = pytest.importorskip("torch")
st_torch = pytest.importorskip("safetensors.torch")

DTYPES = {
    torch.float16: DType.FLOAT16, torch.bfloat16: DType.BFLOAT16, torch.float32: DType.FLOAT32,
    torch.float64: DType.FLOAT64, torch.int8: DType.INT8, torch.int16: DType.INT16, torch.int32: DType.INT32,
    torch.int64: DType.INT64, torch.uint8: DType.UINT8, torch.bool: DType.BOOL,
}


def _tensors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    out = {}
    for i, td in enumerate(DTYPES):
        if td == torch.bool:
            t = torch.rand(4, 3, generator=g) > 0.5
        elif td.is_floating_point:
            t = (torch.randn(4, 3, generator=g) * 50).to(td)
        else:
            t = torch.randint(-100 if td != torch.uint8 else 0, 100, (4, 3), generator=g).to(td)
        out[f"layer{i}.{str(td).split('.')[1]}"] = t
    out["scalar"] = torch.tensor(1.5)
    out["empty"] = torch.zeros(0, 2)
    return out


@pytest.mark.parametrize("mmap", [False, True], ids=["read", "mmap"])
def test_every_dtype(tmp_path: Path, mmap: bool) -> None:
    ts = _tensors()
    path = tmp_path / "m.safetensors"
    st_torch.save_file(ts, str(path), metadata={"framework": "pt"})
    f = read_safetensors(path, mmap=mmap)
    assert f.format == "safetensors" and f.metadata["metadata"] == {"framework": "pt"}
    assert set(f.tensors) == set(ts)
    for k, t in ts.items():
        d = f.tensors[k]
        assert d.shape == tuple(t.shape) and d.dtype is DTYPES[t.dtype]
        if t.dtype == torch.bfloat16:
            np.testing.assert_array_equal(d.as_bits(), t.view(torch.int16).numpy().view(np.uint16))
        else:
            np.testing.assert_array_equal(d.as_bits(), t.numpy())


def test_load_args_on_safetensors(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    st_torch.save_file({"model.seq.0.weight": torch.ones(2), "model.seq.2.weight": torch.zeros(2),
                        "other.x": torch.ones(1)}, str(path))
    result = load_tensors(LoadArgs(path).with_top_level_key("model").with_key_remap(r"^seq", "layers"))
    assert sorted(result.tensors) == ["layers.0.weight", "layers.2.weight"]  # contiguous off by default (Burn)
    result = load_tensors(LoadArgs(path).with_top_level_key("model").with_map_indices_contiguous())
    assert sorted(result.tensors) == ["seq.0.weight", "seq.1.weight"]
    assert result.tensors["seq.1.weight"].to_list() == [0.0, 0.0]


def _raw(header: dict, data: bytes) -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


@pytest.mark.parametrize(
    ("header", "data", "match"),
    [
        ({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8, "run past the end"),
        ({"w": {"dtype": "F32", "shape": [10**12], "data_offsets": [0, 16]}}, b"\0" * 16, "do not match"),
        ({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4, "malformed"),
        ({"w": {"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4, "'F8_E4M3'"),
        ({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}}, b"\0" * 8, "do not match"),
    ],
)
def test_malformed_headers(tmp_path: Path, header: dict, data: bytes, match: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(_raw(header, data))
    with pytest.raises(ModelImportError, match=match):
        read_safetensors(path)


def test_header_length_beyond_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", 2**40) + b"{}")
    with pytest.raises(ModelImportError, match="claims"):
        read_header(path)
