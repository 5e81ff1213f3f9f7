"""Fault corpus: hostile and malformed Ember record files (.mpk, .mpk.gz, .bin, .json, .json.gz, .safetensors).

Every hostile case must end in a clean :class:`ember.RecordError` naming the file, within the case's memory and
time limits; the good files of each format must load exactly (``expect="exact"``, checked by :func:`check_good`).
The files are built here, in memory, from Ember's own writers (then damaged) or byte by byte from the layout in
``docs/record-format.md`` (digests computed with ``xxhash`` directly, so a hostile structure is not stopped early
by a digest mismatch). The loader is :func:`load` (``tests.fault.corpus_record:load``): the recorder by suffix.
"""

from __future__ import annotations

import base64
import gzip
import json
import struct
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import xxhash

from tests.fault._case import Case

__all__ = ["cases", "check_good", "load"]

_MOD = "tests.fault.corpus_record"


# ---------------------------------------------------------------------------------------------- loaders
def _recorders() -> dict[str, Any]:
    from ember import record as r

    return {"mpk": r.NamedMpkFileRecorder, "mpk.gz": r.NamedMpkGzFileRecorder, "bin": r.BinFileRecorder,
            "bin.gz": r.BinGzFileRecorder, "json": r.PrettyJsonFileRecorder, "json.gz": r.JsonGzFileRecorder,
            "safetensors": r.SafetensorsFileRecorder}


def _template() -> dict[str, Any]:
    from ember.record import TENSOR

    return {"a": TENSOR, "b": TENSOR, "step": 0, "name": ""}


def _load(ext: str, path: str) -> Any:
    rec = _recorders()[ext]()
    return rec.load(path, template=_template() if rec.positional else None)


def load(path: str) -> Any:
    """The record at ``path`` loaded with the Ember recorder its suffix names (``.mpk`` -> ``NamedMpkFileRecorder``,
    ``.mpk.gz``, ``.bin`` and ``.bin.gz`` with the template of :func:`_good_record`, ``.json``, ``.json.gz``,
    ``.safetensors``)."""
    name = Path(path).name
    ext = next(e for e in sorted(_recorders(), key=len, reverse=True) if name.endswith("." + e))
    return _load(ext, path)


# ---------------------------------------------------------------------------------------------- good files
def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(28)
    return {"a": rng.standard_normal((16, 8)), "b": rng.standard_normal((16, 8))}  # float64, 1 KiB each


def _good_record() -> dict[str, Any]:
    from ember import TensorData

    return {**{k: TensorData(v) for k, v in _arrays().items()}, "step": 7, "name": "run"}


def check_good(loaded: Any) -> None:
    """Raises AssertionError unless ``loaded`` is exactly :func:`_good_record`."""
    want = _arrays()
    assert sorted(loaded) == ["a", "b", "name", "step"], sorted(loaded)
    assert loaded["step"] == 7 and loaded["name"] == "run"
    for k, v in want.items():
        got = loaded[k].to_numpy()
        assert got.dtype == np.float64 and got.shape == v.shape, (got.dtype, got.shape)
        assert np.array_equal(got, v), k


def _good_file(ext: str) -> bytes:
    from ember.record import DoublePrecisionSettings

    with tempfile.TemporaryDirectory() as tmp:
        path = _recorders()[ext](settings=DoublePrecisionSettings()).record(_good_record(), Path(tmp) / "good")
        return path.read_bytes()


# ---------------------------------------------------------------------------------------------- builders
_META = {"format": "named-mpk", "version": 1, "float": "f64", "int": "i64", "settings": "DoublePrecisionSettings",
         "ember_version": "0.1.0"}


def _digest(body: bytes) -> bytes:
    """``body`` (a 3-entry envelope without its digest) with the documented XXH3-64 digest trailer."""
    return body + msgpack.packb("digest") + msgpack.packb("xxh3-64:" + xxhash.xxh3_64(body).hexdigest())


def _envelope_raw(item_raw: bytes, fmt: str = "named-mpk", digest: bool = True) -> bytes:
    """An envelope whose item is the raw msgpack ``item_raw`` (so it may be anything, valid or not)."""
    head = b"\x83" if digest else b"\x82"
    body = head + msgpack.packb("metadata") + msgpack.packb({**_META, "format": fmt}) + msgpack.packb("item") + item_raw
    return _digest(body) if digest else body


def _tensor_raw(dtype: Any, shape: Any, data: bytes) -> bytes:
    return msgpack.packb({"$type": "tensor", "dtype": dtype, "shape": shape, "bytes": data}, use_bin_type=True)


def _item_raw(**entries: bytes) -> bytes:
    """A msgpack map of raw msgpack values."""
    out = bytes([0x80 | len(entries)]) if len(entries) < 16 else b"\xde" + struct.pack(">H", len(entries))
    for k, v in entries.items():
        out += msgpack.packb(k) + v
    return out


def _content_of(ext: str, raw: bytes) -> bytes:
    return gzip.decompress(raw) if ext.endswith(".gz") else raw


def _stored(ext: str, content: bytes) -> bytes:
    return gzip.compress(content, mtime=0) if ext.endswith(".gz") else content


def _payload(key: str) -> bytes:
    return _arrays()[key].astype("<f8").tobytes()


def _rewrite(ext: str, raw: bytes, change: Callable[[bytes], bytes], key: str = "a") -> bytes:
    """The file with tensor ``key``'s payload replaced by ``change(payload)`` where the format stores it."""
    content = _content_of(ext, raw)
    old = _payload(key)
    new = change(old)
    if ext.startswith("json"):
        old, new = base64.b64encode(old), base64.b64encode(new)
    at = content.index(old)
    return _stored(ext, content[:at] + new + content[at + len(old):])


def _swap_blocks(p: bytes) -> bytes:
    return p[64:72] + p[8:64] + p[0:8] + p[72:]


def _move(by: int) -> Callable[[bytes], bytes]:
    return lambda p: p[8:8 + by] + p[0:8] + p[8 + by:]


def _swap_tensors(ext: str, raw: bytes) -> bytes:
    content = _content_of(ext, raw)
    a, b = _payload("a"), _payload("b")
    if ext.startswith("json"):
        a, b = base64.b64encode(a), base64.b64encode(b)
    i, j = sorted((content.index(a), content.index(b)))
    first, second = content[i:i + len(a)], content[j:j + len(a)]
    out = content[:i] + second + content[i + len(a):j] + first + content[j + len(a):]
    return _stored(ext, out)


def _case(name: str, ext: str, data: bytes, note: str, **kw: Any) -> Case:
    return Case(name=f"record/{name}", filename=f"{name.replace('/', '-')}.{ext}", data=data,
                loader=f"{_MOD}:load", note=note, tags=("record", ext), **kw)


# ---------------------------------------------------------------------------------------------- damage common to all
def _damaged(ext: str, full: bool) -> list[Case]:
    """Truncations, reorderings, wrong digests and a good file, for one format."""
    good = _good_file(ext)
    out = [_case(f"{ext}/good", ext, good, "an intact file: must load exactly", expect="exact",
                 check=f"{_MOD}:check_good")]
    cuts = [1, 8, len(good) // 2, len(good) - 1]
    if full:
        cuts += sorted({2, 16, 40, 100, len(good) // 3, len(good) - 8, len(good) - 20, len(good) - 30})
    for cut in cuts:
        out.append(_case(f"{ext}/truncated-{cut}", ext, good[:cut], f"the first {cut} of {len(good)} bytes"))
    out.append(_case(f"{ext}/swap-8-byte-blocks", ext, _rewrite(ext, good, _swap_blocks),
                     "two float64 weights trade places: sum64 (before digests) missed it"))
    for by in (8, 16, 64) if full else (16,):
        out.append(_case(f"{ext}/move-block-by-{by}", ext, _rewrite(ext, good, _move(by)),
                         f"an 8-byte block moved {by} bytes later: sum64 missed it"))
    out.append(_case(f"{ext}/swap-tensors", ext, _swap_tensors(ext, good),
                     "two tensors of equal size swapped: sum64 missed it"))
    content = _content_of(ext, good)
    marker = b"xxh3-64:"
    at = content.rindex(marker) + len(marker)
    wrong = content[:at] + (b"0" if content[at:at + 1] != b"0" else b"1") + content[at + 1:]
    out.append(_case(f"{ext}/wrong-digest", ext, _stored(ext, wrong), "the last stored digest changed by one digit"))
    unknown = content[: at - len(marker)] + b"xxh9-64:" + content[at:]
    out.append(_case(f"{ext}/unknown-digest-algorithm", ext, _stored(ext, unknown),
                     "a digest of an algorithm Ember does not know"))
    return out


# ---------------------------------------------------------------------------------------------- msgpack
def _msgpack_cases(full: bool) -> list[Case]:
    out: list[Case] = []
    eight = b"\0" * 8
    hostile_items = {
        "huge-declared-shape": (_item_raw(a=_tensor_raw("float32", [2**40], eight)), "a [2**40] float32 tensor "
                                "with 8 bytes of data"),
        "huge-shape-product": (_item_raw(a=_tensor_raw("float32", [2**31] * 8, eight)), "a shape whose product "
                               "is 2**248"),
        "negative-shape": (_item_raw(a=_tensor_raw("float32", [-2, -4], eight)), "negative dims whose product is 8"),
        "bad-dtype": (_item_raw(a=_tensor_raw("float128", [2], b"\0" * 32)), "a dtype Ember does not have"),
        "long-dtype": (_item_raw(a=_tensor_raw("f" * 1_000_000, [2], eight)), "a 1 MB dtype name: the message must "
                       "stay short"),
        "dtype-not-a-string": (_item_raw(a=_tensor_raw([1] * 1000, [2], eight)), "a list as dtype"),
        "bytes-as-str": (_item_raw(a=_tensor_raw("float32", [2], "abcdefgh")), "tensor bytes as a string"),
        "unknown-node-type": (_item_raw(a=msgpack.packb({"$type": "x" * 100_000})), "an unknown $type"),
        "deep-nesting-1000": (b"\x91" * 1000 + b"\x00", "1000 nested lists: within msgpack's limit, beyond the "
                              "record decoder's"),
        "deep-nesting-100000": (b"\x91" * 100_000 + b"\x00", "100000 nested lists (recursion)"),
        "deep-maps-100000": (b"\x81\xa1k" * 100_000 + b"\x00", "100000 nested maps (recursion)"),
        "giant-array-count": (b"\xdd\xff\xff\xff\xff" + b"\x00" * 64, "an array32 announcing 2**32-1 items"),
        "giant-map-count": (b"\xdf\xff\xff\xff\xff" + b"\x00" * 64, "a map32 announcing 2**32-1 entries"),
        "giant-bin-length": (b"\xc6\xff\xff\xff\xff" + b"\x00" * 64, "a bin32 announcing 4 GiB"),
        "giant-str-length": (b"\xdb\xff\xff\xff\xff" + b"\x00" * 64, "a str32 announcing 4 GiB"),
        "array-count-2-24": (b"\xdd\x01\x00\x00\x00" + b"\xc0" * (1 << 16), "an array of 2**24 items, 65536 present"),
        "ext-type": (b"\xd4\x01\x00", "a msgpack ext object"),
        "reserved-byte": (b"\xc1", "the reserved type byte 0xc1"),
        "int-map-key": (b"\x81\x01\x00", "a map with an int key"),
        "bad-utf8-key": (b"\x81\xa2\xff\xfe\x00", "a map key that is not UTF-8"),
        "many-tensors-lying": (b"\xde\xff\xff" + b"".join(msgpack.packb(f"t{i}") + _tensor_raw(
            "float64", [2**30], eight) for i in range(0xFFFF)), "65535 tensors each claiming 8 GiB"),
    }
    names = sorted(hostile_items) if full else ["huge-declared-shape", "bad-dtype", "deep-nesting-100000",
                                                "giant-array-count", "giant-bin-length", "many-tensors-lying"]
    for name in names:
        item, note = hostile_items[name]
        out.append(_case(f"mpk/{name}", "mpk", _envelope_raw(item), note + " (valid digest)"))
        if full:
            out.append(_case(f"mpk/{name}-no-digest", "mpk", _envelope_raw(item, digest=False),
                             note + " (2-entry envelope: no digest to stop it)"))
            out.append(_case(f"mpk.gz/{name}", "mpk.gz", gzip.compress(_envelope_raw(item), mtime=0),
                             note + " (gzip)"))
    if full:
        out.append(_case("bin/tensor-with-bad-digest", "bin", _envelope_raw(msgpack.packb(
            [["float64", [16, 8], _payload("a"), "xxh3-64:" + "0" * 16], ["float64", [16, 8], _payload("b")], 7,
             "run"], use_bin_type=True), fmt="bin"), "a positional tensor with a 4th element: a wrong digest"))
        out.append(_case("bin/wrong-structure", "bin", _envelope_raw(msgpack.packb([1, 2]), fmt="bin"),
                         "2 values where the template has 4"))
    bare = b"\x83" + msgpack.packb("metadata") + msgpack.packb(_META) + msgpack.packb("item") + msgpack.packb({})
    out += [
        _case("mpk/not-an-envelope", "mpk", msgpack.packb([1, 2, 3]), "a list, not the envelope map"),
        _case("mpk/empty", "mpk", b"", "an empty file"),
        _case("mpk/zip", "mpk", b"PK\x03\x04" + b"\0" * 60, "a zip archive (a torch.save file)"),
        _case("mpk/3-entry-without-trailer", "mpk", bare, "a 3-entry envelope with no digest"),
        _case("mpk/digest-not-hex", "mpk", bare + msgpack.packb("digest") + msgpack.packb("xxh3-64:" + "\u00e9" * 8),
              "a digest with non-hex text"),
        _case("mpk/extra-data", "mpk", _envelope_raw(msgpack.packb({}), digest=False) + b"\0" * 1000,
              "bytes after the envelope"),
    ]
    return out


# ---------------------------------------------------------------------------------------------- gzip
def _gzip_with_isize(content: bytes, isize: int) -> bytes:
    raw = gzip.compress(content, compresslevel=9, mtime=0)
    return raw[:-4] + struct.pack("<I", isize & 0xFFFFFFFF)


def _gzip_zeros(n: int) -> bytes:
    """A gzip member of ``n`` zero bytes (built in 1 MiB pieces: the builder never holds ``n`` bytes)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    parts = [z.compress(chunk) for _ in range(n >> 20)]
    return b"".join(parts) + z.compress(b"\0" * (n & ((1 << 20) - 1))) + z.flush()


def _gzip_cases(full: bool) -> list[Case]:
    zeros = (1 << 30) if full else (200 << 20)
    bomb = _gzip_zeros(zeros)
    envelope = _envelope_raw(msgpack.packb({}))
    out = [
        _case("mpk.gz/bomb-declared-small", "mpk.gz", bomb[:-4] + struct.pack("<I", 100),
              f"{len(bomb)} bytes inflating to {zeros >> 20} MiB of zeros, the trailer declaring 100 bytes",
              memory_mib=1536),
        _case("mpk.gz/bomb", "mpk.gz", bomb, f"{len(bomb)} bytes inflating to {zeros >> 20} MiB (honest trailer)",
              memory_mib=1536),
        _case("json.gz/bomb-declared-small", "json.gz", bomb[:-4] + struct.pack("<I", 100),
              "a gzip bomb as .json.gz", memory_mib=1536),
        _case("mpk.gz/not-gzip", "mpk.gz", envelope, "plain msgpack under a .gz name"),
        _case("mpk.gz/garbage-inside", "mpk.gz", gzip.compress(b"\xc1\xc1\xc1", mtime=0), "gzip of garbage"),
        _case("mpk.gz/trailing-data", "mpk.gz", gzip.compress(envelope, mtime=0) + b"\0" * 100,
              "bytes after the gzip member"),
        _case("mpk.gz/two-members", "mpk.gz", gzip.compress(envelope, mtime=0) * 2, "two gzip members"),
        _case("mpk.gz/bad-crc", "mpk.gz", (lambda g: g[:-8] + bytes([g[-8] ^ 0xFF]) + g[-7:])(
            gzip.compress(envelope, mtime=0)), "the gzip CRC-32 changed"),
        _case("mpk.gz/isize-lies-large", "mpk.gz", _gzip_with_isize(envelope, 1 << 31),
              "the trailer declares 2 GiB for a small content"),
    ]
    if full:
        out.append(_case("bin.gz/bomb-declared-small", "bin.gz", bomb[:-4] + struct.pack("<I", 100),
                         "a gzip bomb as .bin.gz", memory_mib=1536))
    return out


# ---------------------------------------------------------------------------------------------- json
def _json_doc(item_text: str, digest: bool = True) -> bytes:
    head = ('{"metadata": ' + json.dumps({**_META, "format": "json"}) + ', "item": ' + item_text + ",").encode()
    if not digest:
        return head[:-1] + b"}"
    return head + b'"digest": "xxh3-64:' + xxhash.xxh3_64(head).hexdigest().encode() + b'"}'


def _json_cases(full: bool) -> list[Case]:
    t = '{"$type": "tensor", "dtype": %s, "shape": %s, "bytes": %s}'
    eight = json.dumps(base64.b64encode(b"\0" * 8).decode())
    items = {
        "deep-nesting-1000000": ("[" * 1_000_000 + "]" * 1_000_000, "10**6 nested lists (recursion)"),
        "deep-objects-1000000": ('{"a":' * 1_000_000 + "1" + "}" * 1_000_000, "10**6 nested objects"),
        "deep-nesting-300": ("[" * 300 + "]" * 300, "300 nested lists: within json's limit, beyond the decoder's"),
        "huge-declared-shape": ('{"a": ' + t % ('"float32"', "[1099511627776]", eight) + "}", "a [2**40] tensor"),
        "bad-dtype": ('{"a": ' + t % ('"complex256"', "[1]", eight) + "}", "an unknown dtype"),
        "bad-base64": ('{"a": ' + t % ('"float64"', "[1]", '"!!!!!!!!!!!!"') + "}", "invalid base64"),
        "million-digit-int": ('{"step": ' + "9" * 1_000_000 + "}", "an int of 10**6 digits"),
        "float-shape": ('{"a": ' + t % ('"float64"', "[1.5]", eight) + "}", "a float dim"),
        "tensor-digest-wrong-type": ('{"a": {"$type": "tensor", "dtype": "float64", "shape": [1], "bytes": ' + eight
                                     + ', "digest": [1, 2]}}', "a digest that is a list"),
    }
    names = sorted(items) if full else ["deep-nesting-1000000", "huge-declared-shape", "million-digit-int"]
    out = []
    for name in names:
        text, note = items[name]
        out.append(_case(f"json/{name}", "json", _json_doc(text), note + " (valid digest)"))
        if full:
            out.append(_case(f"json/{name}-no-digest", "json", _json_doc(text, digest=False), note + " (no digest)"))
    out += [
        _case("json/not-json", "json", b"\x00\x01not json", "binary garbage"),
        _case("json/not-utf8", "json", b'{"metadata": "\xff\xfe"}', "invalid UTF-8"),
        _case("json/checksum-not-int", "json", _json_doc("{}", digest=False)[:-1] + b', "checksum": "x"}',
              "an old-style checksum that is a string"),
    ]
    return out


# ---------------------------------------------------------------------------------------------- safetensors
def _st(header: dict[str, Any], data: bytes = b"", n: int | None = None) -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text) if n is None else n) + text + data


def _st_raw_header(text: bytes, data: bytes = b"") -> bytes:
    return struct.pack("<Q", len(text)) + text + data


def _ember_meta(item: Any) -> dict[str, str]:
    meta = {k: str(v) for k, v in {**_META, "format": "safetensors"}.items()}
    meta["item"] = item if isinstance(item, str) else json.dumps(item)
    body = json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()
    meta["digest"] = "xxh3-64:" + xxhash.xxh3_64(body).hexdigest()
    return meta


def _safetensors_cases(full: bool) -> list[Case]:
    e = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    d8 = b"\0" * 8
    many_overlapping = {f"t{i}": {"dtype": "U8", "shape": [1 << 20], "data_offsets": [0, 1 << 20]}
                        for i in range(2000)}
    hostile = {
        "huge-declared-shape": (_st({"a": {"dtype": "F32", "shape": [2**40], "data_offsets": [0, 2**42]}}, d8),
                                "a [2**40] tensor in a tiny file"),
        "shape-product-matches-overflow": (_st({"a": {"dtype": "F32", "shape": [2**62, 4], "data_offsets": [0, 0]}},
                                           d8), "a shape whose byte size is 2**66"),
        "negative-offsets": (_st({"a": {**e, "data_offsets": [-8, 0]}}, d8), "a negative begin offset"),
        "offsets-reversed": (_st({"a": {**e, "data_offsets": [8, 0]}}, d8), "end before begin"),
        "offsets-overflow-u64": (_st({"a": {**e, "data_offsets": [2**64 - 8, 2**64]}}, d8),
                                 "offsets beyond 64 bits"),
        "offsets-huge-int": (_st({"a": {**e, "data_offsets": [10**4000, 10**4000 + 8]}}, d8),
                             "a 4000-digit offset"),
        "offsets-past-end": (_st({"a": {**e, "data_offsets": [1 << 30, (1 << 30) + 8]}}, d8), "data past the end"),
        "overlapping-amplification": (_st(many_overlapping, b"\0" * (1 << 20)),
                                      "2000 entries sharing one 1 MiB region: 2 GiB if each were read"),
        "header-length-huge": (_st({"a": e}, d8, n=2**63), "a header length of 2**63"),
        "header-length-zero": (_st({"a": e}, d8, n=0), "a header length of 0"),
        "header-not-json": (_st_raw_header(b"{not json" + b" " * 8, d8), "invalid JSON"),
        "header-deep-nesting": (_st_raw_header(b"[" * 100_000 + b"]" * 100_000), "100000 nested lists"),
        "header-a-list": (_st_raw_header(b"[1, 2, 3]"), "a JSON list as header"),
        "bad-dtype": (_st({"a": {**e, "dtype": "F128"}}, d8), "an unknown dtype"),
        "bf16": (_st({"a": {**e, "dtype": "BF16", "shape": [4]}}, d8), "bfloat16, which numpy lacks"),
        "dtype-list": (_st({"a": {**e, "dtype": ["F32"]}}, d8), "a dtype that is a list"),
        "shape-bools": (_st({"a": {**e, "shape": [True, True]}}, d8), "bools as dims"),
        "long-key": (_st({"k" * 1_000_000: {**e, "dtype": "nope"}}, d8), "a 1 MB tensor name in an error"),
        "metadata-not-strings": (_st({"__metadata__": {"format": 1}, "a": e}, d8), "metadata values not strings"),
        "ember-item-deep": (_st({"__metadata__": _ember_meta("[" * 1_000_000 + "]" * 1_000_000)}),
                            "an Ember item of 10**6 nested lists (valid digest)"),
        "ember-item-depth-300": (_st({"__metadata__": _ember_meta("[" * 300 + "]" * 300)}),
                                 "an Ember item of 300 nested lists"),
        "ember-item-missing-key": (_st({"__metadata__": _ember_meta({"a": {"$type": "tensor", "dtype": "float32",
                                                                          "shape": [2], "key": "nope"}}), "a": e}, d8),
                                   "the item names a tensor the file lacks"),
        "ember-metadata-digest-wrong": (_st({"__metadata__": {**_ember_meta({}), "digest": "xxh3-64:" + "0" * 16}}),
                                        "a wrong metadata digest"),
        "ember-bad-version": (_st({"__metadata__": _ember_meta({}) | {"version": "9" * 5000}}),
                              "a 5000-digit version (and a digest that no longer matches)"),
        "foreign-nesting-clash": (_st({"a": e, "a.b": {**e, "data_offsets": [8, 16]}}, d8 * 2),
                                  "a tensor and a tensor nested under it (another tool's file)"),
        "foreign-nesting-clash-reverse": (_st({"a.b": e, "a": {**e, "data_offsets": [8, 16]}}, d8 * 2),
                                          "the same, keys the other way round: one tensor would be dropped"),
    }
    names = sorted(hostile) if full else ["huge-declared-shape", "negative-offsets", "offsets-overflow-u64",
                                          "overlapping-amplification", "header-deep-nesting", "ember-item-deep"]
    return [_case(f"safetensors/{n}", "safetensors", hostile[n][0], hostile[n][1]) for n in names]


# ---------------------------------------------------------------------------------------------- entry point
def cases(full: bool) -> list[Case]:
    """The record corpus: ``full=False`` a fast subset (every format's good file, a few of each kind of damage),
    ``full=True`` everything."""
    out: list[Case] = []
    for ext in ("mpk", "mpk.gz", "bin", "bin.gz", "json", "json.gz", "safetensors"):
        if full or ext in ("mpk", "json", "safetensors", "mpk.gz"):
            out += _damaged(ext, full)
    out += _msgpack_cases(full) + _gzip_cases(full) + _json_cases(full) + _safetensors_cases(full)
    names = [c.name for c in out]
    assert len(names) == len(set(names)), "duplicate case names"
    return out
