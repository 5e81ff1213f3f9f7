"""``import ember`` stays light: it never imports torch or jax (ARCHITECTURE.md, "The backend contract").

Each check runs in a fresh interpreter, because this test process may already hold torch or jax
(other tests compare against them). In nox's ``tests`` session every backend package of the
repository is installed, so these also catch a plugin module that imports its array library at
discovery time instead of in ``BackendSpec.load``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("torch", "jax", "jaxlib", "tensorflow")

_PROBE = """
import json, sys
{code}
heavy = {heavy!r}
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy)))
"""


def _heavy_modules_after(code: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "EMBER_BACKEND"}
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE.format(code=code, heavy=HEAVY)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_probe_detects_a_heavy_import() -> None:
    """The probe itself works: importing torch is seen (skipped when torch is not installed)."""
    pytest.importorskip("torch")
    assert "torch" in _heavy_modules_after("import torch")


def test_import_ember_imports_neither_torch_nor_jax() -> None:
    assert _heavy_modules_after("import ember") == []


def test_import_ember_does_not_import_rich() -> None:
    """rich is only for ``ember backends`` on a terminal."""
    code = "import ember, ember.backend, ember.tensor\nassert 'rich' not in sys.modules, 'rich imported'"
    assert _heavy_modules_after(code) == []


def test_numpy_backend_and_tensor_ops_import_neither_torch_nor_jax() -> None:
    pytest.importorskip("ember_numpy")
    code = (
        "import ember\n"
        "from ember import Tensor\n"
        "d = ember.backend('numpy').device()\n"
        "t = Tensor.from_data([[1.0, 2.0], [3.0, 4.0]], d)\n"
        "assert (t + t).to_data().to_numpy().tolist() == [[2.0, 4.0], [6.0, 8.0]]\n"
    )
    assert _heavy_modules_after(code) == []


def test_command_line_help_imports_neither_torch_nor_jax() -> None:
    code = "from ember.__main__ import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass"
    assert _heavy_modules_after(code) == []


def test_distributed_imports_neither_torch_nor_jax_until_a_group_is_made() -> None:
    """``ember.distributed`` and the numpy backend's ``supports_collectives`` flag do not load the engine."""
    pytest.importorskip("ember_numpy")
    code = (
        "import ember, ember.distributed as dist\n"
        "b = ember.backend('numpy')\n"
        "assert isinstance(b.supports_collectives, bool) and not dist.is_initialized()\n"
    )
    assert _heavy_modules_after(code) == []
