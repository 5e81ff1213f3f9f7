"""Hostile files: every one must raise ModelImportError, and its payload must never run.

Each payload would create a marker file if any code from the file ran; the tests assert the marker is absent.
The files are written by hand (pickle opcodes, zipfile); torch is not needed.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest

import ember
from _import_craft import (
    EMPTY_DICT,
    MARK,
    PROTO2,
    REDUCE,
    SETITEM,
    STOP,
    TUPLE,
    glob,
    num,
    st,
    stack_glob,
    state_dict,
    storage_ref,
    tensor,
    write_legacy,
    write_zip,
)
from ember_import import LoadArgs, ModelImportError, config_from_file, load_tensors, read_pytorch
from ember_import._cli import main as cli_main


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "PWNED"


def _call(module: str, name: str, *args: str, stack: bool = False) -> bytes:
    """Pickle ops for ``module.name(*args)``."""
    g = stack_glob(module, name) if stack else glob(module, name)
    return g + MARK + b"".join(st(a) for a in args) + TUPLE + REDUCE


def _payloads(marker: Path) -> dict[str, tuple[bytes, str]]:
    touch = f"touch {marker}"
    py = f"open({str(marker)!r}, 'w').write('x')"
    getattr_chain = (  # getattr(__import__('os'), 'system')('touch ...')
        glob("builtins", "getattr") + MARK + _call("builtins", "__import__", "os") + st("system") + TUPLE + REDUCE
        + MARK + st(touch) + TUPLE + REDUCE
    )
    return {
        "os.system": (_call("os", "system", touch), "os.system"),
        "posix.system": (_call("posix", "system", touch), "posix.system"),
        "builtins.eval": (_call("builtins", "eval", py), "builtins.eval"),
        "builtins.exec": (_call("builtins", "exec", py), "builtins.exec"),
        "py2 __builtin__.eval": (_call("__builtin__", "eval", py), "__builtin__.eval"),
        "stack_global eval": (_call("builtins", "eval", py, stack=True), "builtins.eval"),
        "getattr chain": (getattr_chain, "builtins.getattr"),
        "subprocess.Popen": (_call("subprocess", "Popen", "touch", str(marker)), "subprocess.Popen"),
        "INST opcode": (MARK + st(touch) + b"ios\nsystem\n", "os.system"),
        "copyreg reconstructor": (_call("copyreg", "_reconstructor", "x"), "copyreg._reconstructor"),
        "torch.load itself": (_call("torch", "load", str(marker)), "torch.load"),
        "numpy loader": (_call("numpy", "load", str(marker)), "numpy.load"),
    }


PAYLOAD_NAMES = list(_payloads(Path("x")))


def _check_refused(path: Path, marker: Path, name: str) -> None:
    with pytest.raises(ModelImportError) as info:
        read_pytorch(path)
    assert name in str(info.value)
    assert not marker.exists()
    with pytest.raises(ModelImportError):
        load_tensors(LoadArgs(path))
    assert not marker.exists()


@pytest.mark.parametrize("case", PAYLOAD_NAMES)
def test_zip_pickle_globals_refused(tmp_path: Path, marker: Path, case: str) -> None:
    payload, name = _payloads(marker)[case]
    pkl = state_dict({"w": tensor("0", 2, 0, (2,), (1,)), "evil": payload})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": struct.pack("<2f", 1, 2)})
    _check_refused(path, marker, name)


@pytest.mark.parametrize("case", PAYLOAD_NAMES)
def test_legacy_pickle_globals_refused(tmp_path: Path, marker: Path, case: str) -> None:
    payload, name = _payloads(marker)[case]
    pkl = state_dict({"evil": payload})
    path = write_legacy(tmp_path / "m.pt", pkl, {})
    _check_refused(path, marker, name)


def test_legacy_header_pickle_refused(tmp_path: Path, marker: Path) -> None:
    """The very first pickle (the magic number) is already unpickled safely."""
    payload, name = _payloads(marker)["os.system"]
    path = tmp_path / "m.pt"
    path.write_bytes(PROTO2 + payload + STOP)
    _check_refused(path, marker, name)


def test_global_in_storage_position_refused(tmp_path: Path, marker: Path) -> None:
    pkl = state_dict({"w": tensor("0", 2, 0, (2,), (1,), storage=("os", "system"))})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": bytes(8)})
    _check_refused(path, marker, "os.system")


def test_rebuild_from_type_needs_a_rebuild_function(tmp_path: Path, marker: Path) -> None:
    """_rebuild_from_type_v2 is allowed, but only to call the tensor rebuilders (not e.g. OrderedDict)."""
    body = (glob("torch._tensor", "_rebuild_from_type_v2") + MARK + glob("collections", "OrderedDict")
            + glob("torch", "Tensor") + MARK + TUPLE + EMPTY_DICT + TUPLE + REDUCE)
    path = write_zip(tmp_path / "m.pt", state_dict({"x": body}), {})
    with pytest.raises(ModelImportError, match="not a plain tensor"):
        read_pytorch(path)


def test_marker_class_cannot_be_called(tmp_path: Path) -> None:
    """Storage classes are inert markers: REDUCE on them fails cleanly."""
    body = glob("torch", "FloatStorage") + MARK + num(10**12) + TUPLE + REDUCE
    path = write_zip(tmp_path / "m.pt", state_dict({"x": body}), {})
    with pytest.raises(ModelImportError, match="malformed"):
        read_pytorch(path)


def test_bytearray_cannot_allocate(tmp_path: Path) -> None:
    body = glob("builtins", "bytearray") + MARK + num(2**40) + TUPLE + REDUCE
    path = write_zip(tmp_path / "m.pt", state_dict({"x": body}), {})
    with pytest.raises(ModelImportError, match="bytearray"):
        read_pytorch(path)


# --- views and sizes ----------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("offset", "size", "stride"),
    [
        (0, (5,), (1,)),          # one element past a 4-element storage
        (3, (2,), (1,)),          # offset pushes the end out
        (5, (0,), (1,)),          # an empty view starting past the end
        (0, (2, 2), (3, 1)),      # a stride reaches element 4
        (0, (2, 2), (1, 10**15)),  # a huge stride
    ],
)
def test_view_past_its_storage(tmp_path: Path, offset: int, size: tuple[int, ...], stride: tuple[int, ...]) -> None:
    pkl = state_dict({"w": tensor("0", 4, offset, size, stride)})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": struct.pack("<4f", 1, 2, 3, 4)})
    with pytest.raises(ModelImportError, match="storage"):
        read_pytorch(path)
    with pytest.raises(ModelImportError):
        read_pytorch(path, mmap=True)


def test_view_past_its_storage_legacy(tmp_path: Path) -> None:
    pkl = state_dict({"w": tensor("0", 4, 2, (3,), (1,), legacy=True)})
    path = write_legacy(tmp_path / "m.pt", pkl, {"0": (4, struct.pack("<4f", 1, 2, 3, 4))})
    with pytest.raises(ModelImportError, match="holds only 4"):
        read_pytorch(path)


@pytest.mark.parametrize(
    ("size", "stride", "match"),
    [((-1,), (1,), "negative"), ((2, 2), (1,), "different ranks"), ((2.0,), (1,), "non-negative ints")],
)
def test_malformed_view(tmp_path: Path, size: tuple, stride: tuple, match: str) -> None:
    items = [storage_ref("0", 4), num(0), MARK + b"".join(b"G" + struct.pack(">d", x) if isinstance(x, float)
                                                          else num(x) for x in size) + TUPLE,
             MARK + b"".join(num(x) for x in stride) + TUPLE, b"\x89",
             glob("collections", "OrderedDict") + b")" + REDUCE]
    body = glob("torch._utils", "_rebuild_tensor_v2") + MARK + b"".join(items) + TUPLE + REDUCE
    path = write_zip(tmp_path / "m.pt", state_dict({"w": body}), {"0": bytes(16)})
    with pytest.raises(ModelImportError, match=match):
        read_pytorch(path)


def test_terabyte_storage_declaration(tmp_path: Path) -> None:
    """A storage declaring 10**12 float32 elements (4 TB) is refused by comparing with its zip entry."""
    pkl = state_dict({"w": tensor("0", 10**12, 0, (10**12,), (1,))})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": bytes(16)})
    with pytest.raises(ModelImportError, match="declares 1000000000000 elements"):
        read_pytorch(path)


def test_terabyte_expanded_view(tmp_path: Path) -> None:
    """A zero-stride view of one element with a terabyte-sized shape would allocate on copy: refused."""
    pkl = state_dict({"w": tensor("0", 1, 0, (10**6, 10**6), (0, 0))})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": bytes(4)})
    with pytest.raises(ModelImportError, match="would need 4000000000000 bytes"):
        read_pytorch(path)


def test_numel_overflow_shape(tmp_path: Path) -> None:
    """A shape whose element count overflows int64 is handled in Python ints and refused."""
    pkl = state_dict({"w": tensor("0", 1, 0, (2**40, 2**40, 2**40), (0, 0, 0))})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": bytes(4)})
    with pytest.raises(ModelImportError, match="would need"):
        read_pytorch(path)


def test_legacy_terabyte_storage(tmp_path: Path) -> None:
    """Legacy format: the record claims 10**12 elements but the file is tiny; nothing is allocated."""
    pkl = state_dict({"w": tensor("0", 10**12, 0, (4,), (1,), legacy=True)})
    path = write_legacy(tmp_path / "m.pt", pkl, {"0": (10**12, bytes(16))})
    with pytest.raises(ModelImportError, match="runs past the end of the file"):
        read_pytorch(path)


def test_legacy_count_mismatch(tmp_path: Path) -> None:
    pkl = state_dict({"w": tensor("0", 4, 0, (4,), (1,), legacy=True)})
    path = write_legacy(tmp_path / "m.pt", pkl, {"0": (5, bytes(20))})
    with pytest.raises(ModelImportError, match="5 elements in the file"):
        read_pytorch(path)


def test_truncated_zip_storage(tmp_path: Path) -> None:
    pkl = state_dict({"w": tensor("0", 4, 0, (4,), (1,))})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": bytes(16)})
    data = path.read_bytes()
    (tmp_path / "t.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelImportError):
        read_pytorch(tmp_path / "t.pt")


# --- zip entries --------------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["archive/../../evil.sh", "archive/data/../../../x", "/etc/cron.d/evil",
                                 "archive\\..\\evil", "C:/evil"])
def test_zip_entry_escaping_refused(tmp_path: Path, bad: str) -> None:
    pkl = state_dict({"w": tensor("0", 2, 0, (2,), (1,))})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": bytes(8)}, extra={bad: b"#!/bin/sh\ntouch PWNED\n"})
    with pytest.raises(ModelImportError, match="entry named"):
        read_pytorch(path)
    assert not (tmp_path / "evil.sh").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]


def test_storage_key_with_dots_refused(tmp_path: Path) -> None:
    pkl = state_dict({"w": tensor("../0", 2, 0, (2,), (1,))})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": bytes(8)})
    with pytest.raises(ModelImportError, match="storage key"):
        read_pytorch(path)


def test_compressed_pickle_bomb_refused(tmp_path: Path) -> None:
    """A deflated data.pkl declaring far more bytes than the file could hold is not expanded."""
    path = tmp_path / "m.pt"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("archive/data.pkl", PROTO2 + b"N" * (200 * 1024 * 1024) + STOP)
    assert path.stat().st_size < 1024 * 1024
    with pytest.raises(ModelImportError, match="refusing to expand"):
        read_pytorch(path)


def test_torchscript_archive_refused(tmp_path: Path) -> None:
    path = write_zip(tmp_path / "m.pt", state_dict({}), {}, extra={"archive/code/__torch__/m.py": b"x"})
    with pytest.raises(ModelImportError, match="TorchScript"):
        read_pytorch(path)


def test_not_a_pytorch_file(tmp_path: Path) -> None:
    path = tmp_path / "m.pt"
    path.write_bytes(b"hello world, not a model")
    with pytest.raises(ModelImportError, match="not a PyTorch file"):
        read_pytorch(path)


def test_unsupported_storage_type(tmp_path: Path) -> None:
    pkl = state_dict({"w": tensor("0", 2, 0, (2,), (1,), storage=("torch", "ComplexFloatStorage"))})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": bytes(16)})
    with pytest.raises(ModelImportError, match="complex64"):
        read_pytorch(path)


def test_refusals_elsewhere(tmp_path: Path, marker: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """config_from_file and the CLI refuse the same files the same way."""
    payload, _ = _payloads(marker)["os.system"]
    path = write_zip(tmp_path / "m.pt", state_dict({"config": payload}), {})
    with pytest.raises(ModelImportError, match="os.system"):
        config_from_file(path, "config")
    assert cli_main(["inspect", str(path)]) == 1
    assert "os.system" in capsys.readouterr().err
    assert not marker.exists()


def test_error_is_a_record_error() -> None:
    assert issubclass(ModelImportError, ember.RecordError)
    assert issubclass(ModelImportError, ember.EmberError)


def test_hand_written_file_reads(tmp_path: Path) -> None:
    """Control for the cases above: the same hand-written layout, well-formed, reads correctly."""
    pkl = state_dict({"w": tensor("0", 6, 1, (2, 2), (1, 2)), "n": num(7)})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": struct.pack("<6f", 0, 1, 2, 3, 4, 5)}, prefix="weird name-1")
    f = read_pytorch(path)
    assert f.tensors["w"].to_list() == [[1.0, 3.0], [2.0, 4.0]]
    assert f.values == {"n": 7}
    pkl = state_dict({"w": tensor("0", 6, 1, (2, 2), (1, 2), legacy=True)})
    path = write_legacy(tmp_path / "l.pt", pkl, {"0": (6, struct.pack("<6f", 0, 1, 2, 3, 4, 5))})
    assert read_pytorch(path).tensors["w"].to_list() == [[1.0, 3.0], [2.0, 4.0]]



# --- BUILD: the pickle opcode that sets attributes on the object below it ------------------------------

def _build_slots(obj: bytes, attrs: dict[str, bytes]) -> bytes:
    """``obj`` then BUILD with slot state ``(None, {attr: value})`` (pickle calls setattr for each)."""
    state = b"N" + EMPTY_DICT + b"".join(st(k) + v + SETITEM for k, v in attrs.items()) + b"\x86"
    return obj + state + b"b"


@pytest.mark.parametrize(
    ("target", "attrs"),
    [
        pytest.param(tensor("0", 4, 0, (4,), (1,)), {"shape": MARK + num(10**6) + TUPLE}, id="view-shape"),
        pytest.param(storage_ref("0", 4), {"nbytes": num(10**9)}, id="storage-size"),
        pytest.param(glob("torch", "FloatStorage"), {"dtype": b"N"}, id="shared-storage-marker"),
        pytest.param(glob("torch", "float32"), {"dtype": b"N"}, id="shared-dtype-marker"),
        pytest.param(glob("_codecs", "encode"), {"_fn": glob("torch", "Size")}, id="allowed-callable"),
        pytest.param(glob("collections", "OrderedDict"), {"fromkeys": glob("torch", "Size")}, id="allowed-class"),
    ],
)
def test_build_cannot_modify_checked_or_shared_objects(tmp_path: Path, target: bytes, attrs: dict[str, bytes]) -> None:
    """After a view is checked, BUILD must not change it; shared markers must not be poisoned for later loads."""
    pkl = state_dict({"x": _build_slots(target, attrs)})
    path = write_zip(tmp_path / "m.pt", pkl, {"0": struct.pack("<4f", 1, 2, 3, 4)})
    with pytest.raises(ModelImportError):
        read_pytorch(path)
    good = write_zip(tmp_path / "g.pt", state_dict({"w": tensor("0", 4, 0, (4,), (1,))}),
                     {"0": struct.pack("<4f", 1, 2, 3, 4)})
    data = read_pytorch(good).tensors["w"]
    assert data.dtype is ember.DType.FLOAT32 and data.to_list() == [1.0, 2.0, 3.0, 4.0]


def test_legacy_storage_views(tmp_path: Path) -> None:
    """Old files carry storage views (view_key, offset, size); they read correctly and are bounds-checked."""
    def view_ref(offset: int, size: int) -> bytes:
        return (MARK + st("storage") + glob("torch", "FloatStorage") + st("0") + st("cpu") + num(6)
                + MARK + st("v") + num(offset) + num(size) + TUPLE + TUPLE + b"Q")

    def view_tensor(offset: int, size: int) -> bytes:
        args = [view_ref(offset, size), num(0), MARK + num(2) + TUPLE, MARK + num(1) + TUPLE, b"\x89",
                glob("collections", "OrderedDict") + b")" + REDUCE]
        return glob("torch._utils", "_rebuild_tensor_v2") + MARK + b"".join(args) + TUPLE + REDUCE

    raw = (6, struct.pack("<6f", 0, 1, 2, 3, 4, 5))
    path = write_legacy(tmp_path / "ok.pt", state_dict({"w": view_tensor(3, 2)}), {"0": raw})
    assert read_pytorch(path).tensors["w"].to_list() == [3.0, 4.0]
    path = write_legacy(tmp_path / "bad.pt", state_dict({"w": view_tensor(5, 4)}), {"0": raw})
    with pytest.raises(ModelImportError, match="lies outside its storage"):
        read_pytorch(path)


def test_rebuild_tensor_v3_untyped_storage(tmp_path: Path) -> None:
    """``_rebuild_tensor_v3(UntypedStorage, offset, size, stride, ..., dtype)``: offsets in elements of dtype."""
    def v3(dtype: str, offset: int, size: tuple[int, ...], stride: tuple[int, ...]) -> bytes:
        args = [storage_ref("0", 24, ("torch.storage", "UntypedStorage")), num(offset),
                MARK + b"".join(num(x) for x in size) + TUPLE, MARK + b"".join(num(x) for x in stride) + TUPLE,
                b"\x89", glob("collections", "OrderedDict") + b")" + REDUCE, glob("torch", dtype)]
        return glob("torch._utils", "_rebuild_tensor_v3") + MARK + b"".join(args) + TUPLE + REDUCE

    raw = {"0": struct.pack("<6f", 0, 1, 2, 3, 4, 5)}
    path = write_zip(tmp_path / "m.pt", state_dict({"w": v3("float32", 2, (2, 2), (1, 2))}), raw)
    data = read_pytorch(path).tensors["w"]
    assert data.dtype is ember.DType.FLOAT32 and data.to_list() == [[2.0, 4.0], [3.0, 5.0]]
    path = write_zip(tmp_path / "o.pt", state_dict({"w": v3("float64", 1, (3,), (1,))}), raw)
    with pytest.raises(ModelImportError, match="holds only 3 float64"):
        read_pytorch(path)
    path = write_zip(tmp_path / "u.pt", state_dict({"w": v3("uint16", 0, (2,), (1,))}), raw)
    with pytest.raises(ModelImportError, match="uint16"):
        read_pytorch(path)


# --- object-graph bombs: cycles, depth, shared references --------------------------------------------

def test_cyclic_object_refused(tmp_path: Path) -> None:
    cyclic = b"]q\x00h\x00a"  # EMPTY_LIST, BINPUT 0, BINGET 0, APPEND: a list containing itself
    path = write_zip(tmp_path / "m.pt", state_dict({"x": cyclic}), {})
    with pytest.raises(ModelImportError, match="contains itself"):
        read_pytorch(path)


def test_deep_nesting_refused(tmp_path: Path) -> None:
    n = 100_000
    deep = b"]" * n + b"a" * (n - 1)  # 100,000 nested lists
    path = write_zip(tmp_path / "m.pt", state_dict({"x": deep}), {})
    with pytest.raises(ModelImportError, match="deeper than"):
        read_pytorch(path)


def test_shared_reference_bomb_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """40 levels of "a list holding the previous list twice" is 2**40 leaves from a few hundred bytes."""
    import ember_import._imported as imported

    monkeypatch.setattr(imported, "MAX_LEAVES", 10_000)  # the real limit (10M) takes seconds to reach
    body = b"K\x01"  # the leaf: int 1
    for _ in range(40):
        body = b"](" + body + b"q\x00h\x00e"  # EMPTY_LIST MARK <x> BINPUT 0 BINGET 0 APPENDS: [x, x]
    path = write_zip(tmp_path / "m.pt", state_dict({"x": body}), {})
    assert path.stat().st_size < 4096
    with pytest.raises(ModelImportError, match="more than 10000 leaves"):
        read_pytorch(path)
