"""How record files are read: the streaming msgpack reader against ``msgpack.unpackb``, tensors read into their
own read-only arrays (no mapping, no file handle kept, memory holding the data once), checksum priority."""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
from pathlib import Path
from unittest import mock

import msgpack
import numpy as np
import pytest

import ember
from ember import RecordError, Tensor, TensorData
from ember.module import Module, Param
from ember.record import BinFileRecorder, NamedMpkFileRecorder, SafetensorsFileRecorder, _mpk_stream
from ember.record._checksum import sum64
from ember.record._mpk_stream import Malformed, StreamReader

DEV = ember.backend("numpy").device()
LIMITS = {"max_container": 1 << 24, "max_str": 1 << 28}
# (window, piece, direct): tiny sizes make every token and bin straddle window and piece boundaries
SIZES = [(7, 5, 3), (61, 24, 8), (4099, 1024, 64), (_mpk_stream._WINDOW, _mpk_stream._PIECE, _mpk_stream._DIRECT)]


def _stream_decode(data: bytes, tmp: Path, stop: int | None = None):
    path = tmp / "s.bin"
    path.write_bytes(data)
    with open(path, "rb", buffering=0) as f:
        reader = StreamReader(f, len(data), stop, **LIMITS)
        out = reader.read_object()
        if reader.position != len(data):
            raise Malformed("extra data")
        return out, reader


def _plain(node):
    """Memoryviews (large bins) as bytes, for comparing with msgpack's output."""
    if isinstance(node, memoryview):
        return node.tobytes()
    if isinstance(node, list):
        return [_plain(v) for v in node]
    if isinstance(node, dict):
        return {k: _plain(v) for k, v in node.items()}
    return node


def _unpackb(data: bytes):
    n = max(len(data), 1)
    return msgpack.unpackb(data, raw=False, strict_map_key=True, use_list=True, max_bin_len=n,
                           max_str_len=min(n, 1 << 28), max_array_len=min(n, 1 << 24),
                           max_map_len=min(n, 1 << 24), max_ext_len=0)


_INT_EDGES = [0, 1, 127, 128, -1, -32, -33, 255, 256, 65535, 65536, -129, -32769, 2**31, -(2**31) - 1, 2**32,
              2**63 - 1, -(2**63), 2**64 - 1]


def _random_leaf(rng: random.Random):
    kind = rng.randrange(8)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.choice(_INT_EDGES) + rng.choice([0, 0, -1, 1]) if rng.random() < 0.5 else rng.randrange(-500, 500)
    if kind == 2:
        return rng.choice([0.0, -0.0, 1.5, float("inf"), -float("inf"), 1e300, rng.uniform(-1e6, 1e6)])
    if kind == 3:
        return "".join(rng.choice("ab€\u00e9\U0001f600 ") for _ in range(rng.choice([0, 1, 5, 31, 32, 300])))
    # bins of every length class: fix (small), around the direct-read threshold, bin16, bin32
    n = rng.choice([0, 1, 2, 3, 7, 8, 9, 100, 255, 256, 4095, 4096, 4097, 9000])
    return rng.randbytes(n)


def _random_tree(rng: random.Random, depth: int = 0):
    r = rng.random()
    if depth >= 3 or r < 0.4:
        return _random_leaf(rng)
    n = rng.choice([0, 1, 2, 5, 16, 17] if depth == 0 else [0, 1, 2, 5])
    if r < 0.7:
        return [_random_tree(rng, depth + 1) for _ in range(n)]
    return {"".join(rng.choice("kxy") for _ in range(rng.randrange(4))): _random_tree(rng, depth + 1) for _ in range(n)}


def _clean(node):
    """Values not representable in msgpack ints dropped (the leaf edges +-1 can leave the 64-bit range)."""
    if isinstance(node, int) and not isinstance(node, bool) and not -(1 << 63) <= node < 1 << 64:
        return 0
    if isinstance(node, list):
        return [_clean(v) for v in node]
    if isinstance(node, dict):
        return {k: _clean(v) for k, v in node.items()}
    return node


@pytest.mark.parametrize("seed", range(12))
def test_stream_reader_decodes_like_msgpack(tmp_path, seed):
    rng = random.Random(seed)
    tree = _clean(_random_tree(rng))
    for single in (False, True):
        try:
            packed = msgpack.packb(tree, use_bin_type=True, use_single_float=single)
        except OverflowError:  # 1e300 does not fit a float32
            continue
        expected = _unpackb(packed)
        for window, piece, direct in SIZES:
            stop = rng.randrange(len(packed) + 4)
            with mock.patch.multiple(_mpk_stream, _WINDOW=window, _PIECE=piece, _DIRECT=direct):
                out, reader = _stream_decode(packed, tmp_path, stop)
            assert _plain(out) == expected
            assert reader.checksum == sum64(packed[:stop])  # every byte below stop summed once, in order


@pytest.mark.parametrize("seed", range(8))
def test_stream_reader_rejects_exactly_what_msgpack_rejects(tmp_path, seed):
    rng = random.Random(100 + seed)
    packed = msgpack.packb(_clean(_random_tree(rng)), use_bin_type=True)
    for trial in range(60):
        raw = bytearray(packed)
        if trial % 3 == 0:
            del raw[rng.randrange(len(raw)):]
        else:
            raw[rng.randrange(len(raw))] = rng.randrange(256)
        try:
            expected = _unpackb(bytes(raw))
        except Exception:
            expected = Malformed
        with mock.patch.multiple(_mpk_stream, _WINDOW=7, _PIECE=5, _DIRECT=3):
            if expected is Malformed:
                with pytest.raises(Malformed):
                    _stream_decode(bytes(raw), tmp_path)
            else:
                assert _plain(_stream_decode(bytes(raw), tmp_path)[0]) == expected


def test_hostile_nesting_and_extra_data_raise_record_error(tmp_path):
    p = tmp_path / "deep.mpk"
    p.write_bytes(b"\x91" * 100_000 + b"\x00")
    for verify in (True, False):
        with pytest.raises(RecordError, match="deep.mpk.*nested deeper than msgpack's limit"):
            NamedMpkFileRecorder(verify=verify).load(p)  # decoded in the window by msgpack's C unpacker
        with mock.patch.object(_mpk_stream, "_WINDOW", 8), pytest.raises(RecordError, match="deeper than 512"):
            NamedMpkFileRecorder(verify=verify).load(p)  # walked in Python (one byte per level: never complete)
    good = NamedMpkFileRecorder().record({"a": 1}, tmp_path / "m")
    p.write_bytes(good.read_bytes() + b"\x00")
    with pytest.raises(RecordError, match="deep.mpk.*digest trailer is missing"):  # the extra byte moved it
        NamedMpkFileRecorder().load(p)
    with pytest.raises(RecordError, match="1 bytes of extra data"):
        NamedMpkFileRecorder(verify=False).load(p)


@pytest.mark.parametrize("recorder_cls", [NamedMpkFileRecorder, BinFileRecorder], ids=lambda r: r.__name__)
def test_every_altered_byte_is_reported_as_a_digest_failure(tmp_path, recorder_cls):
    """Decoding is streamed, so a damaged structure fails before the digest is known: the reader then reads
    on to the end, and reports the digest (the real cause), not the decoding error it ran into."""
    rec = {"w": TensorData(np.arange(1500, dtype=np.float32).reshape(30, 50)), "b": TensorData([1.0, 2.0]),
           "step": 3, "name": "run"}
    r = recorder_cls()
    raw = r.record(rec, tmp_path / "good").read_bytes()
    bad = tmp_path / f"bad.{r.extension}"
    rng = random.Random(3)
    offsets = [i for i in range(1, len(raw)) if i < 400 or i > len(raw) - 100] + rng.sample(range(len(raw)), 100)
    for i in offsets:  # offset 0 is the envelope's header (0x83 announces the digest)
        b = bytearray(raw)
        b[i] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(b))
        with pytest.raises(RecordError, match="bad.*digest"):
            r.load(bad, template=rec)
    for cut in (1, 19, 100, len(raw) // 2, len(raw) - 19, len(raw) - 1):
        bad.write_bytes(raw[:cut])
        with pytest.raises(RecordError, match="bad.*digest"):
            r.load(bad, template=rec)


# ------------------------------------------------------------------------------ where the bytes end up
SIZES_BYTES = [0, 4, _mpk_stream._DIRECT - 4, _mpk_stream._DIRECT, _mpk_stream._WINDOW + 12, 3 * _mpk_stream._PIECE]


def _tensors() -> dict[str, TensorData]:
    rng = np.random.default_rng(0)
    out = {f"t{n}": TensorData(rng.standard_normal(n // 4).astype(np.float32)) for n in SIZES_BYTES}
    out["i"] = TensorData(np.arange(7, dtype=np.int32).reshape(7, 1))
    out["m"] = TensorData(np.array([[True, False]]))
    return out


def _storage(arr: np.ndarray):
    """The object owning ``arr``'s memory (following ``.base`` through arrays and memoryviews)."""
    obj: object = arr
    while True:
        if isinstance(obj, np.ndarray):
            if obj.base is None:
                return obj
            obj = obj.base
        elif isinstance(obj, memoryview):
            obj = obj.obj
        else:
            return obj


@pytest.mark.parametrize("recorder_cls", [NamedMpkFileRecorder, SafetensorsFileRecorder], ids=lambda r: r.__name__)
def test_each_tensor_is_read_into_its_own_read_only_array(tmp_path, recorder_cls):
    rec = _tensors()
    r = recorder_cls()
    out = r.load(r.record(rec, tmp_path / "m"))
    for key, data in rec.items():
        got = out[key].as_bits()
        np.testing.assert_array_equal(got, data.as_bits())
        assert got.dtype == data.as_bits().dtype and got.shape == data.as_bits().shape
        assert not got.flags.writeable, key  # records are immutable: a write raises instead of changing them
        with pytest.raises(ValueError):
            got[...] = 0
        with pytest.raises(ValueError):  # nor can the flag be turned back on (the buffer below is read-only too)
            got.flags.writeable = True
        owner = _storage(got)
        assert isinstance(owner, (np.ndarray, bytes)), (key, type(owner))  # e.g. not a mapping of the file
        # the storage is exactly this tensor's bytes: freeing the tensor frees its memory
        assert (owner.nbytes if isinstance(owner, np.ndarray) else len(owner)) == got.nbytes, key
    arrays = [out[k].as_bits() for k in rec]
    assert not any(np.shares_memory(a, b) for i, a in enumerate(arrays) for b in arrays[i + 1:] if a.size and b.size)


@pytest.mark.parametrize("recorder_cls", [NamedMpkFileRecorder, SafetensorsFileRecorder], ids=lambda r: r.__name__)
def test_numpy_backend_adopts_loaded_tensors_and_other_backends_copy(tmp_path, recorder_cls):
    r = recorder_cls()
    data = r.load(r.record(_tensors(), tmp_path / "m"))["t" + str(3 * _mpk_stream._PIECE)]
    t = Tensor.from_data(data, DEV)
    assert np.shares_memory(t.to_numpy(), data.as_bits())  # zero-copy: read-only arrays cannot change
    torch = pytest.importorskip("torch")
    tt = Tensor.from_data(data, ember.backend("torch").device())
    tt.primitive.add_(1.0)  # a torch tensor owns a copy: writing it leaves the record intact
    np.testing.assert_array_equal(data.as_bits(), _tensors()["t" + str(3 * _mpk_stream._PIECE)].as_bits())
    assert not np.shares_memory(tt.to_numpy(), data.as_bits()) and torch.is_tensor(tt.primitive)


class Lin(Module):
    weight: Param
    bias: Param


def _lin(seed: int) -> Lin:
    rng = np.random.default_rng(seed)
    return Lin(weight=Param(Tensor.from_data(rng.standard_normal((300, 200)).astype(np.float32), DEV)),
               bias=Param(Tensor.from_data(rng.standard_normal(200).astype(np.float32), DEV)))


def _open_handles(path: Path) -> list[str]:
    """Descriptors and memory mappings of this process that refer to ``path``."""
    target = os.path.realpath(path)
    fds = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.path.realpath(f"/proc/self/fd/{fd}") == target:
                fds.append(f"fd {fd}")
        except OSError:
            pass
    with open("/proc/self/maps") as f:
        maps = [line.strip() for line in f if line.rstrip().endswith(target)]
    return fds + maps


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
@pytest.mark.parametrize("recorder_cls", [NamedMpkFileRecorder, BinFileRecorder, SafetensorsFileRecorder],
                         ids=lambda r: r.__name__)
def test_a_loaded_module_keeps_no_hold_on_its_file(tmp_path, recorder_cls):
    r = recorder_cls()
    first, second = _lin(1), _lin(2)
    path = first.save_file(tmp_path / "m", r)
    loaded = _lin(9).load_file(path, r)
    assert _open_handles(path) == []  # neither a descriptor nor a mapping of the file stays open
    # saving over the file (atomic replace) while the loaded module is alive, then loading it again
    assert second.save_file(path, r) == path
    again = _lin(9).load_file(path, r)
    np.testing.assert_array_equal(again.weight.val().to_numpy(), second.weight.val().to_numpy())
    # even a non-atomic overwrite (truncate and write) cannot change or break the loaded values
    path.write_bytes(b"\0" * 10)
    np.testing.assert_array_equal(loaded.weight.val().to_numpy(), first.weight.val().to_numpy())
    np.testing.assert_array_equal(loaded.bias.val().to_numpy(), first.bias.val().to_numpy())


def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon"):
                out[key] = int(value.split()[0]) * 1024
    return out


def _can_reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM (the peak resident memory) to the current resident memory
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _can_reset_peak(), reason="needs Linux /proc/self/clear_refs")
@pytest.mark.parametrize("recorder_cls", [NamedMpkFileRecorder, SafetensorsFileRecorder], ids=lambda r: r.__name__)
def test_loading_holds_the_data_once(tmp_path, recorder_cls):
    """Peak resident memory (file pages included) during a load is the loaded tensors plus a small margin;
    mapping the file (as before) or buffering it whole would peak near 2x."""
    size = 48 << 20
    rng = np.random.default_rng(0)
    rec = {f"w{i}": TensorData(rng.standard_normal(size // 4 // 8, dtype=np.float32)) for i in range(8)}
    r = recorder_cls()
    path = r.record(rec, tmp_path / "big")
    del rec
    chunk = bytearray(1 << 20)
    with open(path, "rb", buffering=0) as f:  # the file's pages are in the page cache (not counted: not mapped)
        while f.readinto(chunk):
            pass
    with contextlib.suppress(OSError, AttributeError):  # glibc: hand freed heap memory back, for a fair baseline
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    _can_reset_peak()
    before = _status()
    out = r.load(path)
    after = _status()
    assert sum(out[k].as_bits().nbytes for k in out) == size
    peak = (after["VmHWM"] - before["VmRSS"]) / size
    assert peak < 1.25, f"peak resident memory during load {peak:.2f}x the data"


def test_safetensors_header_is_checked_on_the_handle_that_reads_the_data(tmp_path):
    # the header is parsed and checked by Ember (shared with ember_import), from the same open file as the data
    import json
    import struct

    from ember import RecordError

    def raw(header, data):
        h = json.dumps(header).encode()
        return struct.pack("<Q", len(h)) + h + data

    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(raw({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 8))
    with pytest.raises(RecordError, match="run past the end of the file"):
        SafetensorsFileRecorder().load(bad)
    for dtype in ("BF16", "F8_E5M2"):  # no numpy bfloat16 (ember_import reads it); no Ember float8
        bad.write_bytes(raw({"w": {"dtype": dtype, "shape": [2], "data_offsets": [0, 2]}}, b"\0" * 2))
        with pytest.raises(RecordError, match=f"'{dtype}'.*supported: F64"):
            SafetensorsFileRecorder().load(bad)
    good = tmp_path / "good.safetensors"
    good.write_bytes(raw({"w": {"dtype": "I16", "shape": [2], "data_offsets": [0, 4]}}, b"\x01\0\x02\0"))
    assert SafetensorsFileRecorder().load(good)["w"].to_list() == [1, 2]  # another tool's file: its tensors
