"""Hostile files in bounded time and memory (issue 28, ARCHITECTURE.md, "Trust").

Each file of ``_import_hostile.HOSTILE`` is about a kilobyte and once hung Ember or made it allocate gigabytes.
Each is loaded in a child process under a 1.5 GiB address-space limit (``RLIMIT_AS``) and a time limit; the
child must end in a ``ModelImportError`` (an ``ember.EmberError``) whose message names the file. The benign
cases compare against ``torch.load``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _import_craft import state_dict, write_zip
from _import_craft import tensor as tensor_ops
from _import_hostile import HOSTILE, Hostile, dag, f16_shared
from ember_import import LoadArgs, ModelImportError, load_tensors, read_pytorch
from ember_import._imported import flatten
from ember_import._limits import ENV_MAX_BYTES, Budget, default_max_bytes, summary
from ember_import._unpickler import scan_pickle

LIMIT_BYTES = 3 << 29  # 1.5 GiB of address space for the child
SECONDS = 60

_CHILD = textwrap.dedent(
    """
    import importlib, json, resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({limit}, {limit}))
    path, loader, check = sys.argv[1], sys.argv[2], sys.argv[3]
    module, name = loader.split(":")
    import ember
    try:
        out = getattr(importlib.import_module(module), name)(path)
    except BaseException as exc:
        print(json.dumps({{"outcome": "raised", "type": type(exc).__name__, "ember": isinstance(exc, ember.EmberError),
                          "message": str(exc)[:4000]}}))
    else:
        if check:
            cm, cn = check.split(":")
            getattr(importlib.import_module(cm), cn)(out)
        print(json.dumps({{"outcome": "loaded"}}))
    """
)


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    tests = str(Path(__file__).parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (tests, env.get("PYTHONPATH", "")) if p)
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"  # each BLAS thread reserves address space
    env["MALLOC_ARENA_MAX"] = "2"
    return env


def run_limited(path: Path, loader: str, check: str = "") -> dict[str, Any]:
    """Load ``path`` with ``loader`` in a child under :data:`LIMIT_BYTES` and :data:`SECONDS`; the child's
    verdict (``outcome``, exception ``type``, ``ember``, ``message``) plus ``seconds``."""
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", _CHILD.format(limit=LIMIT_BYTES), str(path), loader, check],
                              capture_output=True, text=True, timeout=SECONDS, env=_child_env())
    except subprocess.TimeoutExpired:
        pytest.fail(f"{path.name}: still loading after {SECONDS} s (a hang)")
    lines = proc.stdout.strip().splitlines()
    assert proc.returncode == 0 and lines, f"{path.name}: the child died ({proc.returncode}): {proc.stderr[-2000:]}"
    verdict: dict[str, Any] = json.loads(lines[-1])
    verdict["seconds"] = time.monotonic() - start
    return verdict


@pytest.mark.parametrize("case", HOSTILE, ids=[h.name for h in HOSTILE])
def test_hostile_file_ends_in_a_clean_error_naming_it(tmp_path: Path, case: Hostile) -> None:
    path = tmp_path / case.filename
    path.write_bytes(case.build())
    verdict = run_limited(path, case.loader)
    assert verdict["outcome"] == "raised", f"{case.name}: loaded, expected a refusal"
    assert verdict["type"] == "ModelImportError" and verdict["ember"], verdict
    assert str(path) in verdict["message"], verdict["message"]
    assert case.match in verdict["message"], verdict["message"]
    assert len(verdict["message"]) < 1500, "messages are bounded summaries"
    assert verdict["seconds"] < 30


def check_f16_shared(record: Any) -> None:
    """(in the child) 400 keys, one float32 conversion shared by all, values ``arange % 2048``."""
    tensors = record.tensors
    assert len(tensors) == 400
    first = tensors["k0"]
    assert all(t is first for t in tensors.values()), "the shared view must be converted once"
    want = (np.arange(1 << 20) % 2048).astype(np.float32)
    np.testing.assert_array_equal(first.to_numpy(), want)


def load_record(path: str) -> Any:
    from ember_import import PyTorchFileRecorder

    return PyTorchFileRecorder().load(path)


def test_f16_storage_shared_by_400_keys_is_converted_once(tmp_path: Path) -> None:
    """Converted once per key this was 1.6 GB from a 2 MB file; now it loads under the 1.5 GiB limit."""
    path = tmp_path / "f16-shared.pt"
    path.write_bytes(f16_shared())
    verdict = run_limited(path, "test_import_hostile_pt:load_record", "test_import_hostile_pt:check_f16_shared")
    assert verdict["outcome"] == "loaded", verdict


# --- in-process checks of the pieces --------------------------------------------------------------------------

def test_summary_of_a_dag_is_bounded_and_fast() -> None:
    t: Any = (1,)
    for _ in range(60):
        t = (t, t)
    start = time.monotonic()
    text = summary(t, 80)
    assert len(text) <= 80 and text.startswith("((")
    assert summary("x" * 10**7, 50).endswith("...") and len(summary("x" * 10**7, 50)) <= 50
    assert summary(10**5000).startswith("<int of")
    assert summary({"a": [1, 2]}) == "{'a': [1, 2]}"
    assert time.monotonic() - start < 1


@pytest.mark.parametrize(("raw", "want"), [("", max(4 * 1000, 256 << 20)), ("12345", 12345), ("8G", 8 << 30),
                                          ("512MiB", 512 << 20), ("3k", 3072)])
def test_default_budget_and_environment_variable(monkeypatch: pytest.MonkeyPatch, raw: str, want: int) -> None:
    monkeypatch.setenv(ENV_MAX_BYTES, raw)
    assert default_max_bytes(1000) == want


def test_bad_environment_variable_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(ENV_MAX_BYTES, "lots")
    path = write_zip(tmp_path / "m.pt", state_dict({}), {})
    with pytest.raises(ModelImportError, match=ENV_MAX_BYTES) as info:
        read_pytorch(path)
    assert str(path) in str(info.value)


def test_budget_counts_and_refuses() -> None:
    b = Budget(100, "'f.pt'")
    b.take(60, "a")
    with pytest.raises(ModelImportError, match=r"'f.pt'.*160 bytes.*budget of 100"):
        b.take(100, "a tensor")


def _views(tmp_path: Path, n: int, elements: int) -> Path:
    """``n`` distinct stride-0 views of one float32 element."""
    entries = {f"v{i}": tensor_ops("0", 1, 0, (elements - i,), (0,)) for i in range(n)}
    return write_zip(tmp_path / "views.pt", state_dict(entries), {"0": np.float32(2.5).tobytes()})


def test_max_bytes_bounds_the_whole_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _views(tmp_path, 3, 1000)  # about 12 KB in all
    assert len(read_pytorch(path).tensors) == 3
    with pytest.raises(ModelImportError, match="budget of 8000 bytes") as info:
        read_pytorch(path, max_bytes=8000)
    assert str(path) in str(info.value)
    with pytest.raises(ModelImportError, match="budget of 8000 bytes"):
        load_tensors(LoadArgs(path).with_max_bytes(8000))
    monkeypatch.setenv(ENV_MAX_BYTES, "8000")
    with pytest.raises(ModelImportError, match="budget of 8000 bytes"):
        read_pytorch(path)
    with pytest.raises(ModelImportError, match="with_max_bytes"):
        LoadArgs(path).with_max_bytes(-1)


def test_same_view_declared_twice_is_one_tensor(tmp_path: Path) -> None:
    entries = {f"k{i}": tensor_ops("0", 4, 0, (2, 2), (1, 2)) for i in range(3)}  # a transposed view, 3 times
    path = write_zip(tmp_path / "m.pt", state_dict(entries), {"0": np.arange(4, dtype="<f4").tobytes()})
    f = read_pytorch(path, max_bytes=16)  # one 16-byte tensor, not three
    assert f.tensors["k0"] is f.tensors["k1"] is f.tensors["k2"]
    np.testing.assert_array_equal(f.tensors["k0"].to_numpy(), np.arange(4, dtype=np.float32).reshape(2, 2).T)


def test_flatten_counts_shared_containers_before_yielding() -> None:
    d: Any = {"w": 1}
    for _ in range(50):
        d = {"a": d, "b": d}
    start = time.monotonic()
    with pytest.raises(ModelImportError, match="'x.pt'.*leaves"):
        next(flatten(d, origin="'x.pt'"))
    assert time.monotonic() - start < 1
    shared = {"w": 1, "b": 2}
    assert list(flatten({"model": shared, "ema": shared})) == [("model.w", 1), ("model.b", 2), ("ema.w", 1),
                                                               ("ema.b", 2)]


@pytest.mark.parametrize("protocol", range(6))
def test_scan_accepts_what_pickle_writes(protocol: int) -> None:
    import pickle
    from collections import OrderedDict

    shared = (1, 2.5, "x")
    obj = {"a": [shared, shared, {"k": (shared, b"bytes")}], "b": OrderedDict(z=frozenset({3, 4})), "c": set()}
    data = pickle.dumps(obj, protocol=protocol)
    scan_pickle(io.BytesIO(data), "'p'")  # no error


def test_scan_refuses_a_dag_key_before_hashing_it() -> None:
    from _import_craft import EMPTY_DICT, PROTO2, SETITEM, STOP

    data = PROTO2 + EMPTY_DICT + dag(60) + b"K\x01" + SETITEM + STOP
    start = time.monotonic()
    with pytest.raises(ModelImportError, match="'p'.*shared references"):
        scan_pickle(io.BytesIO(data), "'p'")
    assert time.monotonic() - start < 1


# --- benign files: what torch.save writes still loads exactly -----------------------------------------------

def test_real_checkpoint_with_views_ties_and_expanded_buffers(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) / 7
    tied = torch.nn.Parameter(base.clone())
    sd = {
        "emb.weight": tied, "head.weight": tied,                           # tied weights
        "proj.weight": base, "proj.weight_t": base.t(),                    # a view and its transpose
        "q": base[:, :2], "k": base[:, 2:4], "v": base[:, 4:],             # qkv chunks of one storage
        "position_ids": torch.arange(512).expand((1, -1)),                 # an expanded buffer (Hugging Face)
        "half": (base / 3).half(), "bf": base.bfloat16(), "mask": base > 1,
    }
    for legacy in (False, True):
        path = tmp_path / f"ckpt{legacy}.pt"
        torch.save({"model": sd, "ema": sd, "epoch": 3}, path, _use_new_zipfile_serialization=not legacy)
        want = torch.load(path, weights_only=True)
        got = read_pytorch(path)
        for top in ("model", "ema"):
            for key, t in want[top].items():
                mine = got.tensors[f"{top}.{key}"]
                assert mine.shape == tuple(t.shape), key
                if t.dtype == torch.bfloat16:
                    np.testing.assert_array_equal(mine.as_bits(), t.view(torch.int16).numpy().view(np.uint16))
                else:
                    np.testing.assert_array_equal(mine.to_numpy(), t.detach().numpy(), err_msg=key)
        assert got.values["epoch"] == 3


def test_huge_values_and_digit_keys_are_shown_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A 5000-digit int value made ``ember-import inspect`` raise ValueError; a 5000-digit key part made the
    contiguous-index renumbering raise it."""
    import pickle

    from ember_import._cli import main

    path = write_zip(tmp_path / "m.pt", pickle.dumps({"a": 10**5000, "1" * 5000: {"b": 2}}, protocol=2), {})
    for as_json in ([], ["--json"]):
        assert main(["inspect", str(path), *as_json]) == 0
        out = capsys.readouterr().out
        assert "<int of 16610 bits>" in out and len(out) < 20_000
    result = load_tensors(LoadArgs(path))
    assert result.values["1" * 5000 + ".b"] == 2


def test_memory_error_is_reported_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever runs out of memory while reading or converting, the caller gets a ModelImportError naming the file."""
    import ember_import._pt as pt
    from ember.record import FullPrecisionSettings
    from ember_import import PyTorchFileRecorder

    path = _views(tmp_path, 1, 4)

    def no_memory(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError

    with monkeypatch.context() as m:
        m.setattr(pt, "materialize", no_memory)
        with pytest.raises(ModelImportError, match="ran out of memory") as info:
            read_pytorch(path)
        assert str(path) in str(info.value)
    monkeypatch.setattr(FullPrecisionSettings, "convert", no_memory)
    with pytest.raises(ModelImportError, match="ran out of memory") as info:
        PyTorchFileRecorder().load(path)
    assert str(path) in str(info.value)
