"""Damaged record files: truncation, flipped bytes, wrong recorder, bad versions, hostile lengths.

Every case must raise ember.RecordError naming the file; never a raw msgpack/zlib/json exception, never a hang.
"""

from __future__ import annotations

import gzip
import json
import random

import msgpack
import numpy as np
import pytest

import ember
from ember import RecordError, Tensor, TensorData
from ember.module import Module, Param, ParamId
from ember.record import (
    BinBytesRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    DoublePrecisionSettings,
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


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS, ids=lambda r: r.__name__)
def test_damaged_digest_key_names_raise_record_error(tmp_path, recorder_cls):
    """Every one-bit flip in the letters of every ``digest`` key name. A flip there (CI found 'figest' in a
    safetensors header) must not turn the check off: the record then loaded unverified."""
    rec = _record()
    r = recorder_cls()
    raw = r.record(rec, tmp_path / "good").read_bytes()
    gz = r.extension.endswith("gz")
    body = gzip.decompress(raw) if gz else raw
    starts = [i for i in range(len(body)) if body.startswith(b"digest", i)]
    assert starts, "the file names no digest"
    bad = tmp_path / f"bad.{r.extension}"
    for start in starts:
        for i in range(start, start + len(b"digest")):
            for bit in range(8):
                b = bytearray(body)
                b[i] ^= 1 << bit
                bad.write_bytes(gzip.compress(bytes(b)) if gz else bytes(b))
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


# ------------------------------------------------------------------------------------------ reorderings
# sum64 (the checksum before digests) is a sum of 8-byte words: any move of 8-byte-aligned blocks kept it. Each
# reordering below keeps every byte of the file and only changes where the bytes are.
def _float64_record():
    rng = np.random.default_rng(5)
    return {
        "a": TensorData(rng.standard_normal((8, 8))),  # 512 bytes each, float64: a block of 8 bytes is a weight
        "b": TensorData(rng.standard_normal((8, 8))),
        "step": 4,
    }


def _swap_blocks(p: bytes) -> bytes:
    b = bytearray(p)
    b[0:8], b[64:72] = p[64:72], p[0:8]  # two weights trade places
    return bytes(b)


def _move_block(by: int):
    def move(p: bytes) -> bytes:  # the first 8-byte block moves `by` bytes later; the blocks in between shift
        return p[8:8 + by] + p[0:8] + p[8 + by:]

    return move


REORDERINGS = {"swap-8-byte-blocks": _swap_blocks, "move-by-8": _move_block(8), "move-by-16": _move_block(16),
               "move-by-64": _move_block(64)}


def _content(recorder, raw: bytes) -> bytes:
    return gzip.decompress(raw) if recorder.extension.endswith("gz") else raw


def _store(recorder, content: bytes) -> bytes:
    return gzip.compress(content, mtime=0) if recorder.extension.endswith("gz") else content


def _rewrite_payloads(recorder, raw: bytes, change: dict[bytes, bytes], moved: bool = True) -> bytes:
    """The file ``raw`` with each tensor payload (raw bytes, key of ``change``) replaced by its value, found where
    the format stores it: raw bytes, or base64 text in JSON (same length, so every offset stays)."""
    import base64

    content = _content(recorder, raw)
    json_like = recorder.extension.startswith("json")
    enc = (lambda b: base64.b64encode(b)) if json_like else (lambda b: b)
    spans = []
    for old, new in change.items():
        at = content.index(enc(old))
        assert content.count(enc(old)) == 1 and len(enc(new)) == len(enc(old))
        spans.append((at, enc(new)))
    out = bytearray(content)
    for at, new in spans:
        out[at:at + len(new)] = new
    assert bytes(out) != content
    if moved and not json_like:
        assert sorted(out) == sorted(content)  # the same bytes, elsewhere
    return _store(recorder, bytes(out))


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS, ids=lambda r: r.__name__)
@pytest.mark.parametrize("how", sorted(REORDERINGS))
def test_reordered_blocks_in_a_tensor_raise_a_digest_mismatch(tmp_path, recorder_cls, how):
    rec = _float64_record()
    r = recorder_cls(settings=DoublePrecisionSettings())
    raw = r.record(rec, tmp_path / "good").read_bytes()
    payload = rec["a"].to_numpy().astype("<f8").tobytes()
    bad = tmp_path / f"bad.{r.extension}"
    bad.write_bytes(_rewrite_payloads(r, raw, {payload: REORDERINGS[how](payload)}))
    with pytest.raises(RecordError, match=r"bad\..*digest mismatch.*xxh3-64:[0-9a-f]{16}.*xxh3-64:[0-9a-f]{16}.*"
                                          "corrupted or was changed"):
        _load(r, bad, rec)
    assert _load(recorder_cls(verify=False), bad, rec)["step"] == 4  # the structure is intact: only the digest


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS, ids=lambda r: r.__name__)
def test_swapped_tensors_of_equal_size_raise_a_digest_mismatch(tmp_path, recorder_cls):
    rec = _float64_record()
    r = recorder_cls(settings=DoublePrecisionSettings())
    raw = r.record(rec, tmp_path / "good").read_bytes()
    a, b = (rec[k].to_numpy().astype("<f8").tobytes() for k in ("a", "b"))
    bad = tmp_path / f"bad.{r.extension}"
    bad.write_bytes(_rewrite_payloads(r, raw, {a: b, b: a}))
    with pytest.raises(RecordError, match=r"bad\..*digest mismatch"):
        _load(r, bad, rec)
    swapped = _load(recorder_cls(verify=False), bad, rec)  # without the digest, wrong weights load silently
    np.testing.assert_array_equal(swapped["a"].to_numpy(), rec["b"].to_numpy())


@pytest.mark.parametrize("algorithm", ["xxh3-64", "blake2b-256", "sha256"])
def test_every_algorithm_round_trips_and_detects_a_swap(tmp_path, algorithm):
    rec = _float64_record()
    r = NamedMpkFileRecorder(settings=DoublePrecisionSettings(), digest=algorithm)
    path = r.record(rec, tmp_path / "m")
    assert msgpack.unpackb(path.read_bytes())["digest"].startswith(algorithm + ":")
    np.testing.assert_array_equal(NamedMpkFileRecorder().load(path)["a"].to_numpy(), rec["a"].to_numpy())
    payload = rec["a"].to_numpy().astype("<f8").tobytes()
    path.write_bytes(_rewrite_payloads(r, path.read_bytes(), {payload: _swap_blocks(payload)}))
    with pytest.raises(RecordError, match=f"digest mismatch: the file stores {algorithm}:"):
        NamedMpkFileRecorder().load(path)


def test_unknown_digest_algorithm(tmp_path):
    with pytest.raises(RecordError, match="unknown algorithm 'md5'"):
        NamedMpkFileRecorder(digest="md5")
    with pytest.raises(RecordError, match="sum64 is read in old files but no longer written"):
        NamedMpkFileRecorder(digest="sum64")
    path = NamedMpkFileRecorder().record({"x": 1}, tmp_path / "m")
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"xxh3-64:", b"xxh9-64:"))
    with pytest.raises(RecordError, match="m.mpk.*algorithm 'xxh9-64', which this Ember does not know"):
        NamedMpkFileRecorder().load(path)
    assert NamedMpkFileRecorder(verify=False).load(path) == {"x": 1}


def test_digest_none_writes_no_digest(tmp_path):
    path = NamedMpkFileRecorder(digest=None).record({"x": 1}, tmp_path / "m")
    assert list(msgpack.unpackb(path.read_bytes())) == ["metadata", "item"]
    assert NamedMpkFileRecorder().load(path) == {"x": 1}


# ------------------------------------------------------------------------------ files written before digests
def _sum64(data: bytes) -> int:
    """sum64 as docs/record-format.md defined it: little-endian u64 words (zero padded), summed modulo 2**64."""
    padded = data + b"\0" * (-len(data) % 8)
    return int(np.frombuffer(padded, "<u8").sum(dtype=np.uint64))


_OLD_META = {"format": "named-mpk", "version": 1, "float": "f64", "int": "i64",
             "settings": "DoublePrecisionSettings", "ember_version": "0.1.0"}


def _old_msgpack(fmt: str, item) -> bytes:
    body = (b"\x83" + msgpack.packb("metadata") + msgpack.packb({**_OLD_META, "format": fmt})
            + msgpack.packb("item") + msgpack.packb(item, use_bin_type=True))
    return body + msgpack.packb("checksum") + msgpack.packb(_sum64(body).to_bytes(8, "little"), use_bin_type=True)


def _old_json(item, indent) -> bytes:
    text = json.dumps({"metadata": {**_OLD_META, "format": "json"}, "item": item}, indent=indent).encode()
    head = text[: text.rindex(b"}")].rstrip() + (b",\n  " if indent else b",")
    return head + b'"checksum": ' + str(_sum64(head)).encode() + (b"\n}" if indent else b"}")


def _old_safetensors(path, rec) -> None:
    from safetensors.numpy import save_file

    arrays = {k: rec[k].to_numpy() for k in ("a", "b")}
    item = {k: {"$type": "tensor", "dtype": "float64", "shape": [8, 8], "key": k,
                "checksum": _sum64(arrays[k].astype("<f8").tobytes())} for k in arrays}
    item["step"] = 4
    meta = {k: str(v) for k, v in {**_OLD_META, "format": "safetensors"}.items()}
    meta["item"] = json.dumps(item)
    meta["checksum"] = str(_sum64(json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()))
    save_file(arrays, str(path), metadata=meta)


def _old_file(recorder, path, rec) -> None:
    """``path`` as the Ember before digests wrote it (sum64 checksums), built from the documented layout."""
    import base64

    tensors = {k: rec[k].to_numpy().astype("<f8").tobytes() for k in ("a", "b")}
    if isinstance(recorder, SafetensorsFileRecorder):
        _old_safetensors(path, rec)
        return
    if recorder.extension.startswith("json"):
        item = {k: {"$type": "tensor", "dtype": "float64", "shape": [8, 8], "bytes": base64.b64encode(v).decode(),
                    "checksum": _sum64(v)} for k, v in tensors.items()}
        item["step"] = 4
        content = _old_json(item, 2 if recorder.extension == "json" else None)
    elif recorder.positional:  # sorted keys: a, b, step
        content = _old_msgpack("bin", [["float64", [8, 8], tensors["a"]], ["float64", [8, 8], tensors["b"]], 4])
    else:
        item = {k: {"$type": "tensor", "dtype": "float64", "shape": [8, 8], "bytes": v} for k, v in tensors.items()}
        item["step"] = 4
        content = _old_msgpack("named-mpk", item)
    path.write_bytes(_store(recorder, content))


@pytest.mark.parametrize("recorder_cls", FILE_RECORDERS, ids=lambda r: r.__name__)
def test_files_written_before_digests_load_and_are_verified(tmp_path, recorder_cls):
    rec = _float64_record()
    r = recorder_cls()
    path = tmp_path / f"old.{r.extension}"
    _old_file(r, path, rec)
    out = _load(r, path, rec)
    assert out["step"] == 4
    for k in ("a", "b"):
        assert out[k].dtype == ember.DType.FLOAT64
        np.testing.assert_array_equal(out[k].to_numpy(), rec[k].to_numpy())
    # the old checksum is still checked: a changed byte in a weight is reported with the sum64 values
    payload = rec["a"].to_numpy().astype("<f8").tobytes()
    changed = bytearray(payload)
    changed[3] ^= 0x10
    path.write_bytes(_rewrite_payloads(r, path.read_bytes(), {payload: bytes(changed)}, moved=False))
    with pytest.raises(RecordError, match=r"old\..*digest mismatch: the file stores sum64:[0-9a-f]{16} but .* "
                                          r"sum64:[0-9a-f]{16}"):
        _load(r, path, rec)


# ------------------------------------------------------------------------------------------ hostile files
# (the fault suite's corpus, tests/fault/corpus_record.py, holds many more, run in children under memory limits)
def test_gzip_bomb_declared_small_is_refused_before_inflating(tmp_path):
    import struct
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = b"".join(z.compress(b"\0" * (1 << 20)) for _ in range(64)) + z.flush()  # 64 MiB of zeros
    bomb = bomb[:-4] + struct.pack("<I", 100)  # the trailer declares 100 bytes
    for recorder_cls in (NamedMpkGzFileRecorder, JsonGzFileRecorder):
        path = tmp_path / f"bomb.{recorder_cls.extension}"
        path.write_bytes(bomb)
        with pytest.raises(RecordError, match=r"bomb\..*inflates beyond the 100 bytes its trailer allows"):
            recorder_cls().load(path)


def test_gzip_trailing_data_is_refused(tmp_path):
    r = NamedMpkGzFileRecorder()
    path = r.record({"x": 1}, tmp_path / "m")
    path.write_bytes(path.read_bytes() * 2)
    with pytest.raises(RecordError, match="m.mpk.gz.*data follows the gzip stream"):
        r.load(path)


def test_overlapping_safetensors_entries_are_refused(tmp_path):
    entries = {f"t{i}": {"dtype": "U8", "shape": [64], "data_offsets": [0, 64]} for i in range(3)}
    text = json.dumps(entries).encode()
    path = tmp_path / "m.safetensors"
    path.write_bytes(len(text).to_bytes(8, "little") + text + b"\0" * 64)
    with pytest.raises(RecordError, match="m.safetensors.*the data of tensors 't0' and 't1' overlap"):
        SafetensorsFileRecorder().load(path)


def test_nesting_beyond_256_levels_is_refused(tmp_path):
    p = tmp_path / "deep.mpk"
    p.write_bytes(msgpack.packb({"metadata": msgpack.unpackb(_envelope())["metadata"], "item": [[[]]]})
                  .replace(b"\x91\x91\x90", b"\x91" * 300 + b"\x90"))
    with pytest.raises(RecordError, match="deep.mpk.*nested deeper than 256 levels"):
        NamedMpkFileRecorder().load(p)


def test_messages_quote_hostile_values_shortened(tmp_path):
    item = {"w": {"$type": "tensor", "dtype": "f" * 1_000_000, "shape": [2], "bytes": b"\0" * 8}}
    p = tmp_path / "m.mpk"
    p.write_bytes(msgpack.packb({"metadata": msgpack.unpackb(_envelope())["metadata"], "item": item}))
    with pytest.raises(RecordError, match="m.mpk.*unknown tensor dtype 'fff") as info:
        NamedMpkFileRecorder().load(p)
    assert len(str(info.value)) < 500
