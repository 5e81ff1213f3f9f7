"""The fault corpus of ``.pt`` files (and the safetensors siblings found with them), issue 28.

Hostile files come from ``packages/import/tests/_import_hostile.py`` (shared with ``test_import_hostile_pt.py``;
no torch needed). Benign files must load exactly: one written by hand (always) and, when torch is importable
in the parent, real ``torch.save`` files (zip and legacy) of a small model and of a checkpoint with views, tied
weights, an expanded buffer, float16, bfloat16 and bool. Their tensors are built *from* the numpy arrays of
:func:`expected`, so the child checks them against numpy alone (it never imports torch).
"""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ._case import Case

_TESTS = Path(__file__).resolve().parents[2] / "packages" / "import" / "tests"
if str(_TESTS) not in sys.path:
    sys.path.insert(0, str(_TESTS))

import _import_craft as craft  # noqa: E402
import _import_hostile as hostile  # noqa: E402

READ = "ember_import:read_pytorch"
CHECKS = "tests.fault.corpus_pt"


def expected() -> dict[str, np.ndarray]:
    """The benign checkpoint's tensors (deterministic; ``bf`` holds bfloat16 bit patterns)."""
    base = (np.arange(24, dtype=np.float32).reshape(4, 6) / np.float32(7)).astype(np.float32)
    return {
        "proj.weight": base,
        "proj.weight_t": base.T.copy(),
        "q": base[:, :2].copy(), "k": base[:, 2:4].copy(), "v": base[:, 4:].copy(),
        "position_ids": np.arange(512, dtype=np.int64)[None, :],
        "half": (base / np.float32(3)).astype(np.float16),
        "bf": (np.arange(24, dtype=np.uint16) * np.uint16(97) + np.uint16(16000)).reshape(4, 6),
        "mask": base > 1,
        "emb.weight": base * np.float32(2), "head.weight": base * np.float32(2),
    }


def model_expected() -> dict[str, np.ndarray]:
    """``Sequential(Linear(4, 3), BatchNorm1d(3))``'s state_dict, deterministic."""
    return {
        "0.weight": (np.arange(12, dtype=np.float32).reshape(3, 4) - 6) / np.float32(10),
        "0.bias": np.array([0.5, -0.25, 0.125], dtype=np.float32),
        "1.weight": np.array([1.0, 2.0, 3.0], dtype=np.float32),
        "1.bias": np.array([-1.0, 0.0, 1.0], dtype=np.float32),
        "1.running_mean": np.array([0.1, 0.2, 0.3], dtype=np.float32),
        "1.running_var": np.array([1.5, 2.5, 3.5], dtype=np.float32),
        "1.num_batches_tracked": np.array(7, dtype=np.int64),
    }


def _assert_tensors(loaded: Any, want: dict[str, np.ndarray], prefix: str = "") -> None:
    tensors = loaded.tensors
    for key, arr in want.items():
        got = tensors.get(prefix + key)
        assert got is not None, f"{prefix + key} missing (have {sorted(tensors)[:10]})"
        assert tuple(got.shape) == arr.shape, f"{key}: shape {got.shape} != {arr.shape}"
        bits = got.as_bits() if key == "bf" else got.to_numpy()
        assert bits.dtype == arr.dtype and np.array_equal(bits, arr), f"{key}: values differ"


def check_model(loaded: Any) -> None:
    _assert_tensors(loaded, model_expected())
    assert len(loaded.tensors) == len(model_expected())


def check_checkpoint(loaded: Any) -> None:
    for top in ("model", "ema"):
        _assert_tensors(loaded, expected(), f"{top}.")
    assert loaded.values["epoch"] == 3
    assert loaded.tensors["model.emb.weight"] is loaded.tensors["model.head.weight"], "tied weights stay one tensor"


def check_hand_written(loaded: Any) -> None:
    _assert_tensors(loaded, {"w": np.arange(6, dtype=np.float32).reshape(2, 3).T.copy()})


def load_record(path: str) -> Any:
    from ember_import import PyTorchFileRecorder

    return PyTorchFileRecorder().load(path)


def check_f16_shared(record: Any) -> None:
    first = record.tensors["k0"]
    assert len(record.tensors) == 400 and all(t is first for t in record.tensors.values()), "converted once"
    want = (np.arange(1 << 20) % 2048).astype(np.float32)
    assert np.array_equal(first.to_numpy(), want), "values differ"


def _hand_written() -> bytes:
    """A transposed 2x3 float32 view written byte by byte (no torch)."""
    pkl = craft.state_dict({"w": craft.tensor("0", 6, 0, (3, 2), (1, 3))})
    buf = io.BytesIO()
    craft.write_zip(buf, pkl, {"0": np.arange(6, dtype="<f4").tobytes()})  # type: ignore[arg-type]
    return buf.getvalue()


def _tar_model() -> bytes:
    """``model_expected()`` in the tar layout of PyTorch < 0.4 (test_import_pt_tar checks it against torch)."""
    buf = io.BytesIO()
    craft.write_tar(buf, craft.tar_checkpoint(model_expected()))  # type: ignore[arg-type]
    return buf.getvalue()


def _burn_tar() -> bytes:
    """Burn's ``tar_weight_bias`` fixture, rebuilt in its layout (no ``tensors`` member; torch cannot read it)."""
    buf = io.BytesIO()
    craft.write_tar(buf, craft.burn_tar(_BURN_WEIGHT_BIAS))  # type: ignore[arg-type]
    return buf.getvalue()


_BURN_WEIGHT_BIAS = {"weight": np.array([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], np.float32),
                     "bias": np.array([0.01, 0.02], np.float32)}


def check_burn_tar(loaded: Any) -> None:
    _assert_tensors(loaded, _BURN_WEIGHT_BIAS)
    assert len(loaded.tensors) == 2


def _torch_files() -> list[Case]:
    """Real torch.save files; none when torch is not installed in the parent."""
    try:
        import torch
    except ImportError:
        return []
    out = []
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3))
    model.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in model_expected().items()})
    e = {k: torch.from_numpy(v.copy()) for k, v in expected().items()}
    base = e["proj.weight"]
    tied = torch.nn.Parameter(e["emb.weight"])
    sd = {"proj.weight": base, "proj.weight_t": base.t(), "q": base[:, :2], "k": base[:, 2:4], "v": base[:, 4:],
          "position_ids": torch.arange(512).expand((1, -1)), "half": e["half"],
          "bf": e["bf"].view(torch.int16).view(torch.bfloat16), "mask": e["mask"], "emb.weight": tied,
          "head.weight": tied}
    for legacy in (False, True):
        fmt = "legacy" if legacy else "zip"
        buf = io.BytesIO()
        torch.save(model.state_dict(), buf, _use_new_zipfile_serialization=not legacy)
        out.append(Case(f"pt/torch-save-model-{fmt}", f"model-{fmt}.pt", buf.getvalue(), READ, "exact",
                        f"{CHECKS}:check_model", note="a real torch.save of Sequential(Linear, BatchNorm1d)"))
        buf = io.BytesIO()
        torch.save({"model": sd, "ema": sd, "epoch": 3}, buf, _use_new_zipfile_serialization=not legacy)
        out.append(Case(f"pt/torch-save-checkpoint-{fmt}", f"checkpoint-{fmt}.pt", buf.getvalue(), READ, "exact",
                        f"{CHECKS}:check_checkpoint",
                        note="views, transposes, tied weights, an expanded buffer, f16, bf16, bool; the dict twice"))
    return out


def cases(full: bool) -> list[Case]:
    """The fast subset (``full=False``): every hostile file of ``_import_hostile`` marked fast plus the benign
    files; ``full=True`` adds the slow builders and larger variants."""
    out = [
        Case(f"pt/{h.name}", h.filename, h.build(), h.loader, note=f"error must mention {h.match!r}",
             tags=("hostile",))
        for h in hostile.HOSTILE if full or h.fast
    ]
    out.append(Case("pt/hand-written", "hand-written.pt", _hand_written(), READ, "exact",
                    f"{CHECKS}:check_hand_written", note="a transposed view, no torch needed"))
    out.append(Case("pt/f16-shared", "f16-shared.pt", hostile.f16_shared(), f"{CHECKS}:load_record", "exact",
                    f"{CHECKS}:check_f16_shared", note="one f16 storage under 400 keys: converted once (was 1.6 GB)"))
    out.append(Case("pt/tar-model", "tar-model.pt", _tar_model(), READ, "exact", f"{CHECKS}:check_model",
                    note="a PyTorch < 0.4 tar checkpoint built member by member (no torch)"))
    out.append(Case("pt/tar-burn-layout", "tar-burn.tar", _burn_tar(), READ, "exact", f"{CHECKS}:check_burn_tar",
                    note="the layout of Burn's tar fixtures"))
    out.extend(_torch_files())
    if full:
        out += [
            Case("pt/stride0-views-430mb", "stride0-big.pt", hostile.stride0_views(12, 107_000_000), READ,
                 note="the issue's file: 12 stride-0 views of 430 MB each (5 GB) from a 4-byte storage"),
            Case("pt/memo-index-2^31", "memo-big.pt", hostile.memo_index(2**31), READ),
            Case("pt/shared-dicts-60", "shared-dicts-60.pt", hostile.shared_dicts(60), READ),
            Case("pt/size-dag-200", "size-dag-200.pt", hostile.size_dag(200), READ),
            Case("pt/persistent-id-dag-18-legacy", "pid-dag-18-legacy.pt", hostile.persistent_id_dag(18, True), READ),
        ]
    return out
