"""ModelGen on real exports that the per-op generator could not write (issue 30): a bidirectional 2-layer GRU, a
BERT-style encoder with an attention mask (``GatherElements``-free but with ``Range``, ``ConstantOfShape`` and the
mask arithmetic), and a detector head with ``TopK``, ``GatherND``-style indexing and ``NonZero``.

The generated module runs at sizes other than the ones the trace used for the named dims (batch 2 and seq 3):
its outputs are compared with onnxruntime's at batch 3 and seq 9, so a size folded into a constant where it must
stay code fails here (a few seconds each: small models, numpy only).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from _onnx_real_models import export_real  # noqa: E402
from ember_import.onnx import ModelGen  # noqa: E402

#: inputs at sizes the trace did not use (the trace gives ``batch`` 2 and ``seq`` 3)
FEEDS = {
    "bert": lambda rng: [rng.integers(0, 40, (3, 9)).astype(np.int64),
                         (rng.random((3, 9)) > 0.3).astype(np.int64)],
    "bigru": lambda rng: [rng.integers(0, 30, (3, 6)).astype(np.int64)],
    "detector": lambda rng: [rng.standard_normal((1, 3, 16, 16)).astype(np.float32)],
}
CASES = ["bert", "bigru", "detector"]


def _load(py: Path, name: str, dev: Any) -> Any:
    spec = importlib.util.spec_from_file_location(f"_generated_real_{name}", py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod.Model.from_record(str(py.parent / "model.mpk"), dev)


@pytest.mark.parametrize("name", CASES)
def test_generated_module_equals_onnxruntime_at_other_sizes(name: str, tmp_path: Path) -> None:
    path, _, _ = export_real(name, tmp_path / f"{name}.onnx")
    py = ModelGen().input(path).out_dir(tmp_path / name).run()
    dev = ember.backend("numpy").device()
    net = _load(py, name, dev)
    xs = FEEDS[name](np.random.default_rng(1))
    sess = ort.InferenceSession(str(path))
    want = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), xs)})
    got = net(*[Tensor.from_data(x, dev, dtype="int64" if x.dtype == np.int64 else "float32") for x in xs])
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert list(g.shape) == list(w.shape)
        np.testing.assert_allclose(np.asarray(g.to_numpy(), dtype=np.float64), w, rtol=1e-4, atol=1e-5)


def test_bert_source_keeps_dynamic_sizes_as_code(tmp_path: Path) -> None:
    path, _, _ = export_real("bert", tmp_path / "bert.onnx")
    text = ModelGen().input(path).out_dir(tmp_path / "bert").run().read_text()
    assert "batch = ids.shape[0]" in text and "seq = ids.shape[1]" in text
    assert "Tensor.arange(0, seq, device)" in text  # Range over a dynamic length stays code
    assert ".reshape([batch, " in text  # the head split keeps the batch symbolic
    assert "reshape([2, " not in text and "reshape([3, " not in text  # no trace size folded into a shape
