"""Recorders: round trips for every recorder x precision x installed backend, cross-backend loads, arbitrary
records, the documented on-disk layout, atomic writes and extensions."""

from __future__ import annotations

import json
import os
import stat

import msgpack
import numpy as np
import pytest
import xxhash

import ember
from ember import RecordError, Tensor, TensorData
from ember.module import Module, Param, ParamId, RunningState
from ember.record import (
    BinBytesRecorder,
    BinFileRecorder,
    BinGzFileRecorder,
    CompactRecorder,
    DefaultFileRecorder,
    DoublePrecisionSettings,
    FullPrecisionSettings,
    HalfPrecisionSettings,
    JsonGzFileRecorder,
    NamedMpkBytesRecorder,
    NamedMpkFileRecorder,
    NamedMpkGzFileRecorder,
    PrettyJsonFileRecorder,
    SafetensorsFileRecorder,
    SensitiveCompactRecorder,
)

FILE_RECORDERS = [
    NamedMpkFileRecorder, NamedMpkGzFileRecorder, BinFileRecorder, BinGzFileRecorder,
    PrettyJsonFileRecorder, JsonGzFileRecorder, SafetensorsFileRecorder,
]
BYTES_RECORDERS = [NamedMpkBytesRecorder, BinBytesRecorder]
SETTINGS = [FullPrecisionSettings, HalfPrecisionSettings, DoublePrecisionSettings]
BACKENDS = [b.name for b in ember.backends() if b.status == "ok"]
# numpy dtype the stored floats/ints are rounded to, per settings (independent expectation)
STORED = {FullPrecisionSettings: (np.float32, np.int32), HalfPrecisionSettings: (np.float16, np.int16),
          DoublePrecisionSettings: (np.float64, np.int64)}


class Linear(Module):
    weight: Param
    bias: Param | None = None


class Model(Module):
    layers: list[Linear]
    embed: Param
    mask: Param
    stats: RunningState
    extra: Linear | None = None
    name: str = "model"


def _w(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32)


def make_model(device, seed: int = 0) -> Model:
    rng = np.random.default_rng(seed)
    return Model(
        layers=[Linear(weight=Param(Tensor.from_data(_w(rng, 3, 4), device)),
                       bias=Param(Tensor.from_data(_w(rng, 4), device))),
                Linear(weight=Param(Tensor.from_data(_w(rng, 4, 2), device)))],
        embed=Param(Tensor.from_data(rng.integers(-300, 300, (5,)), device), require_grad=False),
        mask=Param(Tensor.from_data(rng.random((2, 3)) > 0.5, device), require_grad=False),
        stats=RunningState(Tensor.from_data(_w(rng, 4), device)),
    )


def expected(model: Model, settings) -> dict[str, np.ndarray]:
    f, i = STORED[settings]
    out = {}
    for path, p in model.named_params() + model.running_states():
        v = p.val().to_numpy()
        out[path] = v.astype(f).astype(v.dtype) if v.dtype.kind == "f" else v.astype(i).astype(v.dtype) \
            if v.dtype.kind == "i" else v
    return out


def assert_loaded(loaded: Model, original: Model, settings) -> None:
    exp = expected(original, settings)
    got = loaded.named_params() + loaded.running_states()
    assert [p for p, _ in got] == list(exp)
    for (path, p), (_, q) in zip(got, original.named_params() + original.running_states()):
        np.testing.assert_array_equal(p.val().to_numpy(), exp[path], err_msg=path)
        assert p.id == q.id and p.kind is q.kind, path


def device_of(name: str):
    return ember.backend(name).device()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("recorder", FILE_RECORDERS, ids=lambda r: r.__name__)
def test_file_round_trip(tmp_path, recorder, settings, backend):
    dev = device_of(backend)
    model = make_model(dev)
    path = model.save_file(tmp_path / "model", recorder(settings()))
    assert path.name == "model." + recorder.extension
    target = make_model(dev, seed=1)
    loaded = target.load_file(path, recorder(), dev)
    assert_loaded(loaded, model, settings)
    assert loaded.devices() == [dev]


@pytest.mark.parametrize("settings", SETTINGS, ids=lambda s: s.__name__)
@pytest.mark.parametrize("recorder", BYTES_RECORDERS, ids=lambda r: r.__name__)
def test_bytes_round_trip(recorder, settings):
    dev = device_of("numpy")
    model = make_model(dev)
    rec = recorder(settings())
    data = rec.record(model.into_record())
    assert isinstance(data, bytes)
    template = model.record_template() if rec.positional else None
    loaded = make_model(dev, 1).load_record(rec.load(data, template=template))
    assert_loaded(loaded, model, settings)


@pytest.mark.parametrize("src", BACKENDS)
@pytest.mark.parametrize("dst", BACKENDS)
def test_saved_on_one_backend_loads_on_another(tmp_path, src, dst):
    model = make_model(device_of(src))
    path = model.save_file(tmp_path / "m")
    dev = device_of(dst)
    loaded = make_model(dev, 3).load_file(path, device=dev)
    assert loaded.devices() == [dev]
    assert_loaded(loaded, model, FullPrecisionSettings)


def test_any_precision_loads_into_a_float64_backend(tmp_path):
    model = make_model(device_of("numpy"))
    path = model.save_file(tmp_path / "m", NamedMpkFileRecorder(HalfPrecisionSettings()))
    dev64 = ember.backend("numpy", float_dtype="float64", int_dtype="int32").device()
    loaded = make_model(dev64).load_file(path)
    w = loaded.layers[0].weight.val()
    assert w.dtype.value == "float64" and loaded.embed.val().dtype.value == "int32"
    np.testing.assert_array_equal(w.to_numpy(), model.layers[0].weight.val().to_numpy().astype(np.float16))


def optimizer_like_record():
    pid = ParamId()
    return {
        "step": 12, "lr": 1e-3, "name": "adam", "none": None, "flags": [True, False], "big": 2**63 - 1,
        "param_id": pid,
        "state": {
            str(pid): {"moment1": TensorData(np.arange(6, dtype=np.float32).reshape(2, 3)),
                       "moment2": TensorData(np.full((2, 3), 0.25, np.float32))},
        },
        "counts": TensorData(np.array([1, 2, 3], np.int64)),
        "empty": TensorData(np.zeros((0, 3), np.float32)),
        "scalar": TensorData(np.array(1.5, np.float32)),
        "nested": [[1, 2], {"x": "y"}],
    }


def assert_same_record(a, b):
    assert type(a) is type(b) or (isinstance(a, tuple) and isinstance(b, list))
    if isinstance(a, dict):
        assert list(a) == list(b) or sorted(a) == sorted(b)
        for k in a:
            assert_same_record(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same_record(x, y)
    elif isinstance(a, TensorData):
        # written with DoublePrecisionSettings: floats come back as float64, ints as int64
        want = {"f": "float64", "i": "int64", "b": "bool"}[a.to_numpy().dtype.kind]
        assert a.shape == b.shape and b.dtype.value == want
        np.testing.assert_array_equal(a.to_numpy(), b.to_numpy())
    else:
        assert a == b


@pytest.mark.parametrize("recorder", FILE_RECORDERS + BYTES_RECORDERS, ids=lambda r: r.__name__)
def test_arbitrary_records_round_trip(tmp_path, recorder):
    rec = optimizer_like_record()
    r = recorder(DoublePrecisionSettings())
    template = rec if r.positional else None
    if recorder in BYTES_RECORDERS:
        out = r.load(r.record(rec), template=template)
    else:
        out = r.load(r.record(rec, tmp_path / "opt"), template=template)
    assert_same_record(rec, out)


def test_unsupported_values_are_refused(tmp_path):
    r = NamedMpkFileRecorder()
    with pytest.raises(RecordError, match="unsupported value of type object at 'a.b'"):
        r.record({"a": {"b": object()}}, tmp_path / "x")
    with pytest.raises(RecordError, match="keys must be str"):
        r.record({1: 2}, tmp_path / "x")
    with pytest.raises(RecordError, match="reserved"):
        r.record({"$type": 1}, tmp_path / "x")
    assert list(tmp_path.iterdir()) == []


def test_half_precision_refuses_int_overflow():
    with pytest.raises(RecordError, match=r"ids.*\[0, 40000\].*int16"):
        NamedMpkBytesRecorder(HalfPrecisionSettings()).record({"ids": TensorData(np.array([0, 40000]))})


def test_aliases_and_default_settings():
    assert isinstance(DefaultFileRecorder(), NamedMpkFileRecorder)
    assert DefaultFileRecorder().settings == FullPrecisionSettings()
    assert CompactRecorder().extension == "mpk.gz" and CompactRecorder().settings == HalfPrecisionSettings()
    assert SensitiveCompactRecorder().extension == "bin.gz"
    assert SensitiveCompactRecorder().settings == HalfPrecisionSettings()


def test_extension_added_once(tmp_path):
    r = NamedMpkGzFileRecorder()
    assert r.file_path(tmp_path / "m") == tmp_path / "m.mpk.gz"
    assert r.file_path(tmp_path / "m.mpk.gz") == tmp_path / "m.mpk.gz"
    assert NamedMpkFileRecorder().file_path("a/b.v1") .name == "b.v1.mpk"
    p = r.record({"x": 1}, tmp_path / "m")
    assert r.load(tmp_path / "m") == {"x": 1} and r.load(p) == {"x": 1}


def test_atomic_write_keeps_previous_file_on_failure(tmp_path, monkeypatch):
    r = NamedMpkFileRecorder()
    path = r.record({"v": 1}, tmp_path / "m")
    before = path.read_bytes()

    def broken(self, f, item):
        f.write(b"\x83partial")
        raise OSError("disk full")

    monkeypatch.setattr(NamedMpkFileRecorder, "_write", broken)
    with pytest.raises(OSError, match="disk full"):
        r.record({"v": 2}, tmp_path / "m")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.mpk"]  # no temporary file left


_KILLED_WRITER = """
import os, sys
from ember.record import NamedMpkFileRecorder
os.fsync = lambda fd: os._exit(3)   # killed after the temporary file is written, before the rename
NamedMpkFileRecorder().record({"v": 2}, sys.argv[1])
"""


@pytest.mark.skipif(os.name != "posix", reason="flock")
@pytest.mark.parametrize("recorder", [NamedMpkFileRecorder, SafetensorsFileRecorder], ids=lambda r: r.__name__)
def test_a_later_save_removes_the_temporary_files_of_killed_writers(tmp_path, recorder):
    """A writer killed mid-write (os._exit: no cleanup runs) leaves its temporary file; the next save of the same
    target removes it, and leaves alone a temporary file whose writer is alive (its lock held) and those of other
    targets."""
    import fcntl
    import subprocess
    import sys

    r = recorder()
    path = r.record({"v": TensorData([1.0])}, tmp_path / "m")
    before = path.read_bytes()
    code = _KILLED_WRITER.replace("NamedMpkFileRecorder", recorder.__name__).replace('{"v": 2}', '{"v": [2.0]}')
    seen = []
    for _ in range(2):   # the second killed writer removed the first one's file, and left its own
        proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
        assert proc.returncode == 3, proc.stderr
        stale = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        assert len(stale) == 1 and stale[0].startswith(f".{path.name}.") and stale[0] not in seen
        seen += stale
    assert path.read_bytes() == before                    # the killed writes never reached the final name
    live = tmp_path / f".{path.name}.0123456789ab.tmp"     # a writer of the same file that is still running
    other = tmp_path / ".other.mpk.0123456789ab.tmp"       # a killed writer of another file
    other.write_bytes(b"x")
    fd = os.open(live, os.O_CREAT | os.O_WRONLY, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        r.record({"v": TensorData([3.0])}, path)
        names = sorted(p.name for p in tmp_path.iterdir())
        assert names == sorted([path.name, live.name, other.name])
    finally:
        os.close(fd)
    r.record({"v": TensorData([4.0])}, path)               # its writer gone: removed too
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, other.name])
    assert r.load(path)["v"].to_list() == [4.0]


@pytest.mark.parametrize("recorder", [CompactRecorder, SensitiveCompactRecorder, SafetensorsFileRecorder,
                                      PrettyJsonFileRecorder], ids=lambda r: r.__name__)
def test_half_precision_overflow_is_an_error_naming_the_key(tmp_path, recorder):
    """float16 cannot hold |x| > 65504 (65519.99 still rounds to it): a RecordError names the key, the largest
    value and a full-precision recorder; nothing is written."""
    r = recorder(HalfPrecisionSettings())
    good = np.array([65519.0, -65504.0, 1.0, np.inf, np.nan])
    out = r.load(r.record({"a": TensorData(good)}, tmp_path / "ok"), template={"a": TensorData(good)})["a"].to_numpy()
    np.testing.assert_array_equal(out, np.array([65504.0, -65504.0, 1.0, np.inf, np.nan], np.float16))
    rec = {"layer": {"weight": TensorData(np.array([[1.0, 1e5], [-2.5e5, 3.0]], np.float32))}}
    with pytest.raises(RecordError, match=r"'layer\.weight'.*largest magnitude 250000.*FullPrecisionSettings"):
        r.record(rec, tmp_path / "bad")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("bad", ".bad"))]


def test_half_precision_underflow_is_ieee_rounding_as_torch_half(tmp_path):
    """Tiny magnitudes round to float16 subnormals or to signed zero (documented, as IEEE 754 / torch.half())."""
    x = np.array([1e-8, -1e-8, 3e-8, 6e-8, 1e-5, 0.0])
    r = CompactRecorder()
    out = r.load(r.record({"a": TensorData(x)}, tmp_path / "m"))["a"].to_numpy()
    np.testing.assert_array_equal(out, x.astype(np.float16))
    assert out[0] == 0 and np.signbit(out[1]) and out[2] == np.float16(2 ** -24) and out[4] != 0
    assert np.abs(out.astype(np.float64) - x).max() <= 2.0 ** -25


@pytest.mark.skipif(os.name != "posix", reason="POSIX permissions")
@pytest.mark.parametrize("recorder", [NamedMpkFileRecorder, SafetensorsFileRecorder], ids=lambda r: r.__name__)
def test_atomic_write_gives_ordinary_permissions(tmp_path, recorder):
    """A new file gets 0o666 minus the umask (like open(), not mkstemp's 0o600); a replaced file keeps its mode."""
    old = os.umask(0o027)
    try:
        path = recorder().record({"v": TensorData([1.0])}, tmp_path / "m")
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
        path.chmod(0o604)
        recorder().record({"v": TensorData([2.0])}, path)
        assert stat.S_IMODE(path.stat().st_mode) == 0o604
    finally:
        os.umask(old)


def test_named_mpk_layout_matches_the_documentation(tmp_path):
    """Decode a .mpk with plain msgpack + numpy, following docs/record-format.md only."""
    model = make_model(device_of("numpy"))
    path = model.save_file(tmp_path / "m")
    raw = path.read_bytes()
    env = msgpack.unpackb(raw, raw=False)
    assert list(env) == ["metadata", "item", "digest"]
    assert env["metadata"] == {"format": "named-mpk", "version": 1, "float": "f32", "int": "i32",
                               "settings": "FullPrecisionSettings", "ember_version": ember.__version__}
    # digest: "xxh3-64:<hex>" of every byte before the "digest" key (fixstr a6 "digest", then a fixstr of 24)
    trailer = msgpack.packb("digest") + msgpack.packb(env["digest"])
    assert raw.endswith(trailer) and len(trailer) == 7 + 25
    assert env["digest"] == "xxh3-64:" + xxhash.xxh3_64(raw[: len(raw) - len(trailer)]).hexdigest()
    w = env["item"]["layers"][0]["weight"]
    assert w["id"] == {"$type": "param_id", "id": str(model.layers[0].weight.id.value)}
    t = w["param"]
    assert (t["$type"], t["dtype"], t["shape"]) == ("tensor", "float32", [3, 4])
    np.testing.assert_array_equal(np.frombuffer(t["bytes"], "<f4").reshape(3, 4),
                                  model.layers[0].weight.val().to_numpy())
    assert env["item"]["layers"][1]["bias"] is None
    assert env["item"]["embed"]["param"]["dtype"] == "int32"


def test_pretty_json_is_readable(tmp_path):
    import base64

    path = PrettyJsonFileRecorder().record({"w": TensorData(np.array([1.0, -2.0], np.float32))}, tmp_path / "r")
    doc = json.loads(path.read_text())
    assert doc["metadata"]["format"] == "json"
    w = doc["item"]["w"]
    assert np.frombuffer(base64.b64decode(w["bytes"]), "<f4").tolist() == [1.0, -2.0]


def test_safetensors_interop(tmp_path):
    from safetensors.numpy import load_file, save_file

    model = make_model(device_of("numpy"))
    path = model.save_file(tmp_path / "m", SafetensorsFileRecorder())
    plain = load_file(str(path))
    assert set(plain) == {"layers.0.weight", "layers.0.bias", "layers.1.weight", "embed", "mask", "stats"}
    np.testing.assert_array_equal(plain["layers.1.weight"], model.layers[1].weight.val().to_numpy())
    # a safetensors file from another tool (no ember metadata) loads into the module
    foreign = {k: v * 2 if v.dtype.kind == "f" else v for k, v in plain.items()}
    save_file(foreign, str(tmp_path / "foreign.safetensors"))
    loaded = model.load_file(tmp_path / "foreign.safetensors", SafetensorsFileRecorder())
    np.testing.assert_array_equal(loaded.layers[0].weight.val().to_numpy(), foreign["layers.0.weight"])
    assert loaded.layers[0].weight.id == model.layers[0].weight.id


def test_load_file_reports_every_mismatch(tmp_path):
    model = make_model(device_of("numpy"))
    path = model.save_file(tmp_path / "m")

    class Other(Module):
        layers: list[Linear]
        head: Param

    other = Other(layers=[Linear(weight=Param(Tensor.zeros([3, 5], device_of("numpy"))))],
                  head=Param(Tensor.zeros([1], device_of("numpy"))))
    with pytest.raises(RecordError) as err:
        other.load_file(path)
    msg = str(err.value)
    for needle in ("m.mpk", "head", "layers.0.bias", "layers.1.weight", "embed", "layers.0.weight", "[3, 5]"):
        assert needle in msg
    loaded, report = other.load_file(path, strict=False)
    assert report.missing == ["head"] and "embed" in report.unused


def test_bin_without_template_explains(tmp_path):
    p = BinFileRecorder().record({"a": 1}, tmp_path / "b")
    with pytest.raises(RecordError, match="template"):
        BinFileRecorder().load(p)
    with pytest.raises(RecordError, match="does not match the template"):
        BinFileRecorder().load(p, template={"a": 1, "b": 2})


def _xxh3(data: bytes) -> str:
    return "xxh3-64:" + xxhash.xxh3_64(data).hexdigest()


def test_json_digests_match_the_documentation(tmp_path):
    import base64

    path = PrettyJsonFileRecorder().record({"w": TensorData(np.array([1.0, -2.0, 3.5], np.float32))}, tmp_path / "r")
    raw = path.read_bytes()
    doc = json.loads(raw)
    assert list(doc) == ["metadata", "item", "digest"]
    assert doc["digest"] == _xxh3(raw[: raw.rfind(b'"digest"')])
    w = doc["item"]["w"]
    assert w["digest"] == _xxh3(base64.b64decode(w["bytes"]))


def test_safetensors_header_matches_the_documentation(tmp_path):
    from safetensors import safe_open

    model = make_model(device_of("numpy"))
    path = model.save_file(tmp_path / "m", SafetensorsFileRecorder())
    with safe_open(str(path), framework="numpy") as f:
        meta = f.metadata()
        weight = f.get_tensor("layers.0.weight")
    body = {k: v for k, v in meta.items() if k != "digest"}
    assert meta["digest"] == _xxh3(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    assert (meta["format"], meta["version"], meta["float"]) == ("safetensors", "1", "f32")
    node = json.loads(meta["item"])["layers"][0]["weight"]
    assert node["id"] == {"$type": "param_id", "id": str(model.layers[0].weight.id)}
    assert node["param"]["key"] == "layers.0.weight" and node["param"]["shape"] == [3, 4]
    assert node["param"]["digest"] == _xxh3(weight.astype("<f4").tobytes())


def test_verify_false_skips_digests_but_not_structure(tmp_path):
    r = NamedMpkFileRecorder()
    path = r.record({"w": TensorData(np.arange(64, dtype=np.float32))}, tmp_path / "m")
    raw = bytearray(path.read_bytes())
    i = raw.index(np.float32(63).tobytes())
    raw[i] ^= 0x01  # alter one tensor byte
    path.write_bytes(bytes(raw))
    with pytest.raises(RecordError, match="digest mismatch"):
        r.load(path)
    out = NamedMpkFileRecorder(verify=False).load(path)
    assert out["w"].to_numpy()[63] != 63.0
