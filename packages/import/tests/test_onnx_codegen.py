"""ONNX to Ember source (``ember_import.onnx.ModelGen``) on the real models of ``_onnx_models.py``, each exported
with PyTorch's optimizations and without (names kept):

- the generated module's outputs equal the runtime ``OnnxModule``'s and onnxruntime's within 1e-4 on every
  installed backend, its input gradients under ``Autodiff`` equal PyTorch's, and it compiles with
  ``ember_jax.jit``;
- its layers are the source model's (ResNet-18: 20 ``Conv2d`` and 1 ``Linear``, plus 20 ``BatchNorm`` when they
  are not folded), the file passes ruff and mypy, and it is shorter than twice a hand-written port;
- golden files keep the generated source stable (``EMBER_UPDATE_GOLDEN=1`` rewrites them after a reviewed change);
- the record exports back to a PyTorch ``state_dict`` that loads with ``strict=True`` when names were kept.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor
from ember.autodiff import Autodiff

torch = pytest.importorskip("torch")
ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

from _onnx_backends import BACKENDS  # noqa: E402
from _onnx_models import MODELS, build, export  # noqa: E402
from ember_import import save_pytorch  # noqa: E402
from ember_import.onnx import ModelGen, ModelGenError, OnnxImportError, load_model, source_key_remap  # noqa: E402

TOL = 1e-4
ROOT = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).parent / "golden" / "onnx2ember"
CASES = [(n, o) for n in MODELS for o in (True, False)]
IDS = [f"{n}-{'opt' if o else 'raw'}" for n, o in CASES]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: Any) -> dict[tuple[str, bool], tuple[Path, Path, Any, Any, np.ndarray]]:
    """(name, optimize) -> (onnx path, model.py path, generated module, torch model, example input)."""
    root = tmp_path_factory.mktemp("onnx2ember")
    out = {}
    for name, case in MODELS.items():
        x = case.inputs(np.random.default_rng(0))
        tmodel = build(name)
        for optimize in (True, False):
            tag = f"{name}_{'opt' if optimize else 'raw'}"
            path = export(tmodel, x, root / f"{tag}.onnx", optimize=optimize)
            py = ModelGen().input(path).out_dir(root / tag).development(True).run()
            spec = importlib.util.spec_from_file_location(f"_generated_{tag}", py)
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            out[name, optimize] = (path, py, mod, tmodel, x)
    return out


def _input(x: np.ndarray, dev: Any) -> Tensor:
    return Tensor.from_data(x, dev, dtype="int64" if x.dtype == np.int64 else "float32")


def _np(t: Tensor) -> np.ndarray:
    return np.asarray(t.to_data().to_numpy(), dtype=np.float64)


def _close(got: np.ndarray, want: np.ndarray, tol: float = TOL) -> None:
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


def _load(mod: Any, py: Path, dev: Any) -> Any:
    return mod.Model.from_record(str(py.parent / "model.mpk"), dev)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("name", "optimize"), CASES, ids=IDS)
def test_outputs_equal_the_runtime_module_and_onnxruntime(generated: Any, name: str, optimize: bool,
                                                          backend: str) -> None:
    path, py, mod, _, x = generated[name, optimize]
    dev = ember.backend(backend).device()
    got = _np(_load(mod, py, dev)(_input(x, dev)))
    _close(got, _np(load_model(path, dev)(_input(x, dev))))
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    _close(got, np.asarray(sess.run(None, {sess.get_inputs()[0].name: x})[0], dtype=np.float64))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("name", "optimize"), CASES, ids=IDS)
def test_input_gradients_under_autodiff_equal_torch(generated: Any, name: str, optimize: bool, backend: str) -> None:
    """BatchNorm layers (kept by the raw export) use batch statistics on an autodiff device, as PyTorch's do in
    training mode, so the raw ResNet and U-Net are compared with a copy of the torch model in ``train()``, on an
    input large enough that no BatchNorm sees fewer than 16 values per channel (with 2 the normalized values are
    +-1 and the input gradient through them is rounding noise)."""
    path, py, mod, tmodel, x = generated[name, optimize]
    if x.dtype == np.int64:
        pytest.skip("integer token input: no input gradient")
    has_bn = any(isinstance(m, torch.nn.BatchNorm2d) for m in tmodel.modules()) and not optimize
    if has_bn:
        tmodel = copy.deepcopy(tmodel).train()
        if name == "resnet18":
            x = np.random.default_rng(2).standard_normal((4, 3, 64, 64)).astype(np.float32)
    dev = Autodiff(ember.backend(backend)).device()
    net = _load(mod, py, dev)
    xin = _input(x, dev).require_grad()
    out = net(xin)
    weights = np.random.default_rng(1).standard_normal(tuple(out.shape))
    grads = (out * Tensor.from_data(weights.astype(np.float32), dev)).sum().backward()
    xt = torch.from_numpy(x).requires_grad_(True)
    (tmodel(xt).double() * torch.from_numpy(weights)).sum().backward()
    _close(_np(xin.grad(grads)), xt.grad.double().numpy(), 1e-3)


@pytest.mark.skipif("jax" not in BACKENDS, reason="ember-backend-jax is not installed")
@pytest.mark.parametrize("name", list(MODELS))
def test_compiles_with_ember_jax_jit(generated: Any, name: str) -> None:
    import ember_jax

    path, py, mod, _, x = generated[name, True]
    dev = ember.backend("jax").device()
    net = _load(mod, py, dev)
    step = ember_jax.jit(lambda m, inp: m(inp))
    _close(_np(step(net, _input(x, dev))), _np(load_model(path, dev)(_input(x, dev))))
    step(net, _input(x, dev))
    assert step.trace_count == 1


def _layers(net: Any) -> Counter[str]:
    return Counter(type(getattr(net, f)).__name__ for f in type(net).__annotations__)


@pytest.mark.parametrize(("optimize", "want"), [
    (True, {"Conv2d": 20, "Linear": 1, "MaxPool2d": 1, "AdaptiveAvgPool2d": 1}),
    (False, {"Conv2d": 20, "BatchNorm": 20, "Linear": 1, "MaxPool2d": 1, "AdaptiveAvgPool2d": 1}),
], ids=["opt", "raw"])
def test_resnet18_has_the_source_models_layers(generated: Any, optimize: bool, want: dict[str, int]) -> None:
    _, py, mod, _, _ = generated["resnet18", optimize]
    got = _layers(_load(mod, py, ember.backend("numpy").device()))
    assert {k: got[k] for k in want} == want
    assert set(got) - set(want) == {"Relu"}


@pytest.mark.parametrize(("name", "want"), [
    ("guide_cnn", {"Conv2d": 2, "Linear": 2, "AvgPool2d": 1, "Relu": 1}),
    ("gelu_mlp", {"Linear": 3, "LayerNorm": 2, "Gelu": 1}),
    ("lstm_lm", {"Embedding": 1, "Lstm": 2, "Linear": 1}),
    ("transformer", {"Linear": 9, "LayerNorm": 4, "Gelu": 1}),
    ("unet", {"Conv2d": 6, "ConvTranspose2d": 1, "MaxPool2d": 2, "BatchNorm": 5, "Relu": 1}),
])
def test_layers_are_recognised(generated: Any, name: str, want: dict[str, int]) -> None:
    """Transformer: 2 x (packed q/k/v projection, output projection, 2 feed-forward) + head = 9 ``Linear``; the
    attention itself stays tensor code (the exporter writes it as reshapes and matmuls)."""
    _, py, mod, _, _ = generated[name, False]
    assert dict(_layers(_load(mod, py, ember.backend("numpy").device()))) == want


@pytest.mark.parametrize(("name", "port"), [("guide_cnn", "examples/guide/model.py"),
                                            ("resnet18", "bench/_resnet_ember.py")])
@pytest.mark.parametrize("optimize", [True, False], ids=["opt", "raw"])
def test_shorter_than_twice_a_hand_written_port(generated: Any, name: str, port: str, optimize: bool) -> None:
    _, py, _, _, _ = generated[name, optimize]
    assert len(py.read_text().splitlines()) < 2 * len((ROOT / port).read_text().splitlines())


@pytest.mark.parametrize(("name", "optimize"), CASES, ids=IDS)
def test_source_matches_its_golden_file(generated: Any, name: str, optimize: bool) -> None:
    _, py, _, _, _ = generated[name, optimize]
    golden = GOLDEN / f"{name}_{'opt' if optimize else 'raw'}.py.txt"
    text = py.read_text().replace(py.parent.parent.name, "<tmp>")
    if os.environ.get("EMBER_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert golden.is_file(), f"no golden file {golden}; run with EMBER_UPDATE_GOLDEN=1 and review it"
    assert text == golden.read_text(), f"generated source changed; review and run with EMBER_UPDATE_GOLDEN=1 ({py})"


@pytest.mark.skipif(shutil.which("ruff") is None and importlib.util.find_spec("ruff") is None,
                    reason="ruff is not installed")
def test_generated_code_passes_ruff(generated: Any) -> None:
    files = [str(v[1]) for v in generated.values()]
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
                           str(ROOT / "pyproject.toml"), *files], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
@pytest.mark.parametrize("name", ["resnet18", "lstm_lm", "transformer", "unet"])
def test_generated_code_passes_mypy(generated: Any, name: str) -> None:
    _, py, _, _, _ = generated[name, False]
    done = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), str(py)],
                          capture_output=True, text=True, cwd=py.parent)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("name", ["resnet18", "guide_cnn", "gelu_mlp", "unet"])
def test_record_exports_to_a_state_dict_the_source_model_loads_strictly(generated: Any, name: str,
                                                                        tmp_path: Path) -> None:
    _, py, mod, tmodel, x = generated[name, False]
    net = _load(mod, py, ember.backend("numpy").device())
    save_pytorch(net, tmp_path / "back.pt", key_remap=source_key_remap(net))
    fresh = build(name, seed=7)
    fresh.load_state_dict(torch.load(tmp_path / "back.pt", weights_only=True), strict=True)
    with torch.no_grad():
        np.testing.assert_allclose(fresh(torch.from_numpy(x)).numpy(), tmodel(torch.from_numpy(x)).numpy(),
                                   rtol=1e-5, atol=1e-5)


def test_fresh_init_builds_the_same_architecture(generated: Any) -> None:
    _, py, mod, _, x = generated["resnet18", False]
    dev = ember.backend("numpy").device()
    fresh, trained = mod.ModelConfig().init(dev), _load(mod, py, dev)
    assert [type(getattr(fresh, f)) for f in type(fresh).__annotations__] == \
        [type(getattr(trained, f)) for f in type(trained).__annotations__]
    assert fresh(_input(x, dev)).shape == trained(_input(x, dev)).shape


def test_options_development_ir_half_precision_and_record_type(generated: Any, tmp_path: Path) -> None:
    path, _, _, _, x = generated["gelu_mlp", True]
    py = (ModelGen().input(path).out_dir(tmp_path).class_name("Mlp").record_type("safetensors")
          .half_precision(True).development(True).run())
    assert (tmp_path / "model.safetensors").is_file()
    assert "LayerNormalization" in (tmp_path / "model.ir.txt").read_text()
    spec = importlib.util.spec_from_file_location("_generated_half", py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    dev = ember.backend("numpy").device()
    net = mod.Mlp.from_record(str(tmp_path / "model.safetensors"), dev)
    _close(_np(net(_input(x, dev))), _np(load_model(path, dev)(_input(x, dev))), 5e-3)  # float16 weights


def test_cli_writes_the_module(generated: Any, tmp_path: Path) -> None:
    path = generated["guide_cnn", True][0]
    done = subprocess.run([sys.executable, "-m", "ember_import", "onnx2ember", str(path), "--out", str(tmp_path),
                           "--name", "Guide"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "class Guide(Module)" in (tmp_path / "model.py").read_text() and (tmp_path / "model.mpk").is_file()


def test_unsupported_operators_are_all_listed(tmp_path: Path) -> None:
    # ModelGen runs the runtime's converters, so it refuses exactly the operators load_model refuses, all at once
    h = onnx.helper
    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    y = h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 3])
    nodes = [h.make_node("Warp", ["x"], ["v"], name="warp", domain="com.example"),
             h.make_node("Bend", ["v"], ["y"], name="bend", domain="com.example")]
    graph = h.make_graph(nodes, "g", [x], [y])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid("com.example", 1)])
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(OnnxImportError, match=r"(?s)2 operator\(s\).*Bend.*Warp"):
        ModelGen().input(tmp_path / "m.onnx").out_dir(tmp_path / "out").run()
    assert not (tmp_path / "out").exists()  # a refused model leaves no output folder behind
    with pytest.raises(ModelGenError, match="record_type"):
        ModelGen().record_type("pickle")


def test_topk_and_hardmax_generate_and_equal_the_runtime(tmp_path: Path) -> None:
    # the per-op generator refused both (issue 30); the traced converters write them
    h = onnx.helper
    x = h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    y = h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 2])
    k = h.make_tensor("k", onnx.TensorProto.INT64, [1], [2])
    nodes = [h.make_node("TopK", ["x", "k"], ["v", "i"], name="top"), h.make_node("Hardmax", ["v"], ["y"])]
    graph = h.make_graph(nodes, "g", [x], [y], [k])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    dev = ember.backend("numpy").device()
    net = _generate_and_load(tmp_path / "m.onnx", tmp_path / "out", "_generated_topk_hardmax", dev)
    data = np.array([[0.5, 2.0, -1.0], [3.0, 1.0, 4.0]], dtype=np.float32)
    got = _np(net(Tensor.from_data(data, dev)))
    np.testing.assert_array_equal(got, [[1.0, 0.0], [1.0, 0.0]])  # top-2 sorted descending: the max comes first


class _GruLm(torch.nn.Module):
    """Embedding -> one-layer GRU -> Linear (the GRU recognizer: ONNX gates z, r, h; ``linear_before_reset``)."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(30, 8)
        self.gru = torch.nn.GRU(8, 12, batch_first=True)
        self.head = torch.nn.Linear(12, 30)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.gru(self.embed(tokens))[0])


class _StyleNet(torch.nn.Module):
    """Conv -> InstanceNorm (affine) -> LeakyReLU -> Conv -> Sigmoid * Tanh (instance norm and activations)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 6, 3, padding=1)
        self.norm = torch.nn.InstanceNorm2d(6, affine=True)
        self.conv2 = torch.nn.Conv2d(6, 4, 3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv2(torch.nn.functional.leaky_relu(self.norm(self.conv1(x)), 0.2))
        return torch.sigmoid(y) * torch.tanh(y)


def _generate_and_load(path: Path, out_dir: Path, module_name: str, dev: Any) -> Any:
    """The module ModelGen writes for the ONNX file ``path``, imported and loaded on ``dev``."""
    py = ModelGen().input(path).out_dir(out_dir).run()
    spec = importlib.util.spec_from_file_location(module_name, py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return _load(mod, py, dev)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("name", "layers"), [("gru", {"Embedding": 1, "Gru": 1, "Linear": 1}),
                                              ("style", {"Conv2d": 2, "InstanceNorm": 1, "LeakyRelu": 1,
                                                         "Sigmoid": 1, "Tanh": 1})])
def test_gru_instance_norm_and_activations(name: str, layers: dict[str, int], backend: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    if name == "gru":
        model, x = _GruLm().eval(), np.random.default_rng(0).integers(0, 30, (2, 5)).astype(np.int64)
    else:
        model, x = _StyleNet().eval(), np.random.default_rng(0).standard_normal((2, 3, 9, 9)).astype(np.float32)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.empty_like(p).uniform_(-0.1, 0.1))
        want = model(torch.from_numpy(x)).double().numpy()
    path = export(model, x, tmp_path / f"{name}.onnx", optimize=False)
    dev = ember.backend(backend).device()
    net = _generate_and_load(path, tmp_path / name, f"_generated_extra_{name}_{backend}", dev)
    assert dict(_layers(net)) == layers
    _close(_np(net(_input(x, dev))), want)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gather_on_a_table_with_negative_ids_equals_the_runtime_and_onnxruntime(backend: str, tmp_path: Path) -> None:
    # ONNX Gather counts negative indices from the end; Ember's embedding rejects them (issue 28), so the
    # generated Embedding call and the runtime's Gather converter both wrap them first
    import onnx
    import onnxruntime as ort
    from onnx import helper, numpy_helper

    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    ids = np.array([[0, -1], [3, -4]], np.int64)
    node = helper.make_node("Gather", ["w", "ids"], ["y"], axis=0)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [2, 2])],
                              [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 2, 3])],
                              initializer=[numpy_helper.from_array(table, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "table.onnx"
    onnx.save(model, path)
    want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"ids": ids})[0]
    dev = ember.backend(backend).device()
    net = _generate_and_load(path, tmp_path / "table", f"_generated_table_{backend}", dev)
    assert dict(_layers(net)) == {"Embedding": 1}
    x = Tensor.from_data(ids, dev, dtype="int64")
    np.testing.assert_array_equal(_np(net(x)), want)
    np.testing.assert_array_equal(_np(load_model(path, dev)(x)), want)
