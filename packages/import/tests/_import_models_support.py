"""Helpers of the model-import tests: backends to run on, PyTorch files, Ember/PyTorch output comparison.

torch is a test-only dependency: it writes the files and computes the reference outputs; Ember reads the
files without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Int, Tensor
from ember.record import FullPrecisionSettings
from ember_import import LoadArgs, PyTorchFileRecorder, SafetensorsFileRecorder

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

TOL = 1e-5


def _available() -> list[str]:
    names = []
    for n in ("numpy", "torch", "jax"):
        try:
            ember.backend(n).device()
        except Exception:  # noqa: BLE001 - a backend that does not load is skipped
            continue
        names.append(n)
    return names


BACKENDS = _available()


def device(name: str) -> Any:
    return ember.backend(name).device()


def tensor(x: np.ndarray, dev: Any) -> Tensor:
    kind = Int if np.issubdtype(x.dtype, np.integer) else None
    return Tensor.from_data(x, dev, kind) if kind is not None else Tensor.from_data(x.astype(np.float32), dev)


def to_np(t: Tensor) -> np.ndarray:
    return np.asarray(t.to_data().to_numpy(), dtype=np.float64)


def torch_out(module: Any, *inputs: np.ndarray) -> np.ndarray:
    module.eval()
    with torch.no_grad():
        args = [torch.from_numpy(x) if np.issubdtype(x.dtype, np.integer) else torch.from_numpy(x.astype(np.float32))
                for x in inputs]
        out = module(*args)
    if isinstance(out, tuple):
        out = out[0]
    return out.double().numpy()  # type: ignore[no-any-return]


def save(module_or_state: Any, path: Path, fmt: str = "pt") -> Path:
    state = module_or_state.state_dict() if hasattr(module_or_state, "state_dict") else module_or_state
    if fmt == "pt":
        torch.save(state, path)
    else:
        safetensors_torch.save_file({k: v.contiguous() for k, v in state.items()}, str(path))
    return path


def load(path: Path, args: LoadArgs | None = None, dev: Any = None) -> Any:
    args = args if args is not None else LoadArgs(path)
    rec = SafetensorsFileRecorder if str(path).endswith(".safetensors") else PyTorchFileRecorder
    return rec(FullPrecisionSettings()).load(args, dev)


def assert_close(got: Tensor | np.ndarray, want: np.ndarray, tol: float = TOL) -> None:
    g = to_np(got) if isinstance(got, Tensor) else np.asarray(got, dtype=np.float64)
    assert g.shape == want.shape, (g.shape, want.shape)
    err = float(np.max(np.abs(g - want))) if g.size else 0.0
    assert err <= tol, f"max abs error {err} above {tol}"
