"""Damaged record files: truncation, flipped bytes, wrong recorder, bad versions, hostile lengths.

Every case must raise ember.RecordError naming the file; never a raw msgpack/zlib/json exception, never a hang.
"""

from __future__ import annotations

import gzip
import random

import msgpack
import numpy as np
import pytest

import ember
from ember import RecordError, Tensor
from ember.module import Module, Param, ParamId
from ember.record import (
    BinBytesRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    JsonGzFileRecorder,
    NamedMpkBytesRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    SafetensorsFileRecorder,
)

FILE_RECORDERS = [
    NamedMpkFileRecorder, NamedMpkGzFileRecorder, BinFileRecorder, BinGzFileRecorder,
    PrettyJsonFileRecorder, JsonGzFileRecorder, SafetensorsFileRecorder,
]
DEV = ember.backend("numpy").device()
TRIALS = 40


class Net(Module):
    layers: list[Param]
    bias: Param
    steps: Param


def make_net() -> Net:
    rng = np.random.default_rng(0)
    return Net(
        layers=[Param(Tensor.from_data(rng.standard_normal((6, 5)).astype(np.float32), DEV)) for _ in range(2)],
        bias=Param(Tensor.from_data(rng.standard_normal(5).astype(np.float32), DEV)),
        steps=Param(Tensor.from_data(np.array([1, 2, 3]), DEV), require_grad=False),
    )


def _record():
    return {"model": make_net().into_record(), "step": 3, "name": "run", "id": ParamId(5)}


def _gz_free_offsets(recorder, n: int) -> list[int]:
    # gzip header bytes 3..9 (FLG's FTEXT bit, MTIME, XFL, OS) describe the file but carry no data;
    # gzip itself ignores them, so flips there are not corruption.
    skip = set(range(3, 10)) if recorder.extension.endswith("gz") else set()
    return [i for i in range(n) if i not in skip]


def _load(recorder, path, template):
    return recorder.load(path, template=template if recorder.positional else None)


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS, ids=lambda r: r.__name__)
def test_truncated_files_raise_record_error(tmp_path, recorder_cls):
    rec = _record()
    r = recorder_cls()
    raw = r.record(rec, tmp_path / "good").read_bytes()
    rng = random.Random(1234)
    bad = tmp_path / f"bad.{r.extension}"
    offsets = sorted({0, 1, 7, 8, len(raw) - 1, *(rng.randrange(len(raw)) for _ in range(TRIALS))})
    for cut in offsets:
        bad.write_bytes(raw[:cut])
        with pytest.raises(RecordError, match="bad"):
            _load(r, bad, rec)


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS, ids=lambda r: r.__name__)
def test_flipped_bytes_raise_record_error(tmp_path, recorder_cls):
    rec = _record()
    r = recorder_cls()
    raw = r.record(rec, tmp_path / "good").read_bytes()
    rng = random.Random(99)
    bad = tmp_path / f"bad.{r.extension}"
    candidates = _gz_free_offsets(r, len(raw))
    gz = r.extension.endswith("gz")
    for _ in range(TRIALS):
        i = rng.choice(candidates)
        b = bytearray(raw)
        b[i] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(b))
        if gz and gzip.decompress(raw) == _gunzip_or_none(bytes(b)):
            continue  # a flip in the deflate stream's padding bits: the content is unchanged, not corruption
        with pytest.raises(RecordError, match="bad"):
            _load(r, bad, rec)


def _gunzip_or_none(data: bytes) -> bytes | None:
    try:
        return gzip.decompress(data)
    except Exception:
        return None


@pytest.mark.parametrize("recorder_cls", [NamedMpkBytesRecorder, BinBytesRecorder], ids=lambda r: r.__name__)
def test_damaged_bytes_raise_record_error(recorder_cls):
    rec = _record()
    r = recorder_cls()
    raw = r.record(rec)
    rng = random.Random(7)
    for _ in range(TRIALS):
        b = bytearray(raw)
        if rng.random() < 0.5:
            b = b[: rng.randrange(len(b))]
        else:
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        with pytest.raises(RecordError):
            r.load(bytes(b), template=rec if r.positional else None)


@pytest.mark.parametrize(
    ("writer", "reader"),
    [(w, r) for w in FILE_RECORDERS for r in FILE_RECORDERS if w is not r],
    ids=lambda r: r.__name__,
)
def test_wrong_recorder_raises_record_error(tmp_path, writer, reader):
    rec = _record()
    path = writer().record(rec, tmp_path / "model")
    with pytest.raises(RecordError, match="model"):
        _load(reader(), path, rec)


def test_wrong_recorder_message_names_the_right_one(tmp_path):
    path = BinFileRecorder().record({"a": 1}, tmp_path / "m.mpk")
    with pytest.raises(RecordError, match="format 'bin'.*BinFileRecorder"):
        NamedMpkFileRecorder().load(path)
    gz = NamedMpkGzFileRecorder().record({"a": 1}, tmp_path / "m")
    with pytest.raises(RecordError, match="gzip-compressed.*NamedMpkGzFileRecorder"):
        NamedMpkFileRecorder().load(gz)


def _envelope(meta_changes=None, drop=()):
    meta = {"format": "named-mpk", "version": 1, "float": "f32", "int": "i32",
            "settings": "FullPrecisionSettings", "ember_version": "0.1.0"}
    meta.update(meta_changes or {})
    for k in drop:
        del meta[k]
    return msgpack.packb({"metadata": meta, "item": {"x": 1}})  # 2-entry envelope: no checksum


def test_handwritten_envelope_without_checksum_loads(tmp_path):
    p = tmp_path / "m.mpk"
    p.write_bytes(_envelope())
    assert NamedMpkFileRecorder().load(p) == {"x": 1}


@pytest.mark.parametrize(
    ("changes", "drop", "message"),
    [
        ({"version": 99}, (), "version 99 is not supported"),
        ({"version": "x"}, (), "no integer 'version'"),
        ({"format": "bin"}, (), "format 'bin'"),
        ({"settings": "QuarterPrecision"}, (), "unknown precision settings"),
        ({}, ("format",), "format None"),
    ],
)
def test_bad_metadata(tmp_path, changes, drop, message):
    p = tmp_path / "m.mpk"
    p.write_bytes(_envelope(changes, drop))
    with pytest.raises(RecordError, match=message):
        NamedMpkFileRecorder().load(p)


def test_not_an_envelope_and_empty_and_foreign_files(tmp_path):
    p = tmp_path / "m.mpk"
    p.write_bytes(msgpack.packb([1, 2, 3]))
    with pytest.raises(RecordError, match="not an Ember record"):
        NamedMpkFileRecorder().load(p)
    p.write_bytes(b"")
    with pytest.raises(RecordError, match="empty"):
        NamedMpkFileRecorder().load(p)
    p.write_bytes(b"PK\x03\x04" + b"\0" * 40)
    with pytest.raises(RecordError, match="zip archive"):
        NamedMpkFileRecorder().load(p)
    g = tmp_path / "m.mpk.gz"
    g.write_bytes(gzip.compress(b"\xc1\xc1\xc1"))
    with pytest.raises(RecordError, match="m.mpk.gz"):
        NamedMpkGzFileRecorder().load(g)


def test_hostile_lengths_raise_quickly(tmp_path):
    """A corrupted container header announcing 2**32 entries must not allocate or wait for data."""
    p = tmp_path / "m.mpk"
    head = msgpack.packb("metadata")
    for hostile in (b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xff", b"\xdb\xff\xff\xff\xff"):
        p.write_bytes(b"\x82" + head + hostile + b"\x00" * 16)
        with pytest.raises(RecordError):
            NamedMpkFileRecorder(verify=False).load(p)
    g = tmp_path / "m.mpk.gz"
    g.write_bytes(gzip.compress(b"\x82" + head + b"\xdd\xff\xff\xff\xff"))
    with pytest.raises(RecordError):
        NamedMpkGzFileRecorder(verify=False).load(g)


def test_tensor_node_lies_about_its_size(tmp_path):
    item = {"w": {"$type": "tensor", "dtype": "float32", "shape": [1000, 1000], "bytes": b"\0" * 8}}
    p = tmp_path / "m.mpk"
    p.write_bytes(msgpack.packb({"metadata": msgpack.unpackb(_envelope())["metadata"], "item": item}))
    with pytest.raises(RecordError, match="8 bytes for a float32 tensor of shape \\[1000, 1000\\]"):
        NamedMpkFileRecorder().load(p)


def test_gzip_crc_failure(tmp_path):
    r = NamedMpkGzFileRecorder()
    path = r.record(_record(), tmp_path / "m")
    raw = bytearray(path.read_bytes())
    raw[-8] ^= 0xFF  # the gzip trailer's CRC-32
    path.write_bytes(bytes(raw))
    with pytest.raises(RecordError, match="gzip"):
        r.load(path)


def test_module_load_file_of_damaged_file_names_the_file(tmp_path):
    net = make_net()
    path = net.save_file(tmp_path / "net")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(RecordError, match="net.mpk"):
        net.load_file(path)
