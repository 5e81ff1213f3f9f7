"""ModelGen at the graph's boundary and on element types (issue 30), on small hand-built ONNX graphs:

- ``CastLike`` of a constant to a traced input's type stays a constant (float16 arithmetic equal to numpy's);
- a model without a tensor input makes its tensors on the module's device (its weights', else ``device_anchor``);
- sequence and optional outputs are returned as ``list[Tensor]`` and ``Tensor | None`` (equal to onnxruntime);
- a bfloat16 model is traced on torch's CPU backend and equals ``load_model`` bit for bit;
- sequence, optional and float8 inputs are refused with the reason.

Each generated module runs on several input values (it is not specialised on the trace's) and on every installed
backend; the generated files pass ruff and mypy.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ember import DType, Tensor

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from _onnx_backends import BACKENDS, installed  # noqa: E402
from ember_import.onnx import ModelGen, ModelGenError, load_model  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


def _save(tmp: Path, name: str, nodes: list[Any], inputs: list[Any], outputs: list[Any],
          inits: list[Any] | None = None, opset: int = 21) -> Path:
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits or [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    onnx.checker.check_model(model)
    path = tmp / f"{name}.onnx"
    onnx.save(model, path)
    return path


def _generate(path: Path, out: Path, tag: str) -> tuple[Any, Path]:
    py = ModelGen().input(path).out_dir(out).run()
    spec = importlib.util.spec_from_file_location(f"_generated_types_io_{tag}", py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look the module up
    spec.loader.exec_module(mod)
    return mod, py


def _ort(path: Path, feeds: dict[str, np.ndarray]) -> list[Any]:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)


def _lint(files: list[Path]) -> None:
    for tool in (["ruff", "check", "--no-cache"], ["mypy"]):
        if importlib.util.find_spec(tool[0]) is None:
            continue
        cmd = [sys.executable, "-m", *tool, "--config-file" if tool[0] == "mypy" else "--config",
               str(ROOT / "pyproject.toml"), *map(str, files)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def _castlike_model(tmp: Path) -> Path:
    k = helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array([1, -2, 3], np.int64)))
    nodes = [k, helper.make_node("CastLike", ["k", "x"], ["kx"]), helper.make_node("Mul", ["x", "kx"], ["y"])]
    return _save(tmp, "castlike", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["n", 3])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["n", 3])])


@pytest.mark.parametrize("backend", BACKENDS)
def test_castlike_of_a_constant_to_an_inputs_type_stays_a_constant(backend: str, tmp_path: Path) -> None:
    path = _castlike_model(tmp_path)
    mod, py = _generate(path, tmp_path / "gen", f"castlike_{backend}")
    src = py.read_text()  # the cast folds into a float16 constant: no cast runs in forward
    assert 'Tensor.from_data([1.0, -2.0, 3.0], device, dtype="float16")' in src and ".cast(" not in src
    dev = backend_device(backend)
    net = mod.Model.from_record(str(py.parent / "model.mpk"), dev)
    rng = np.random.default_rng(1)
    for n in (1, 4, 7):  # several values and sizes: nothing of the trace's example is baked in
        x = rng.standard_normal((n, 3)).astype(np.float16)
        got = net(Tensor.from_data(x, dev, dtype="float16"))
        assert got.dtype is DType.FLOAT16
        want = x * np.array([1, -2, 3], np.float16)  # float16 products, as numpy and onnxruntime compute them
        np.testing.assert_array_equal(got.to_numpy(), want)
        np.testing.assert_array_equal(got.to_numpy(), _ort(path, {"x": x})[0])


def _constant_model(tmp: Path, with_weight: bool) -> Path:
    c = np.array([[1.5, -2.0, 0.25], [-0.5, 3.0, -1.0]], np.float32)
    nodes = [helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(c)),
             helper.make_node("Relu", ["c"], ["r"])]
    outputs = [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2, 3])]
    inits = []
    if with_weight:  # y folds into a weight; r stays a constant forward makes
        inits = [numpy_helper.from_array(np.full((2, 3), 0.5, np.float32), "w")]
        nodes.append(helper.make_node("Add", ["r", "w"], ["y"]))
        outputs.append(helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]))
    return _save(tmp, "weighted" if with_weight else "constant", nodes, [], outputs, inits)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("with_weight", [False, True])
def test_a_model_without_input_makes_its_tensors_on_the_modules_device(backend: str, with_weight: bool,
                                                                         tmp_path: Path) -> None:
    path = _constant_model(tmp_path, with_weight)
    mod, py = _generate(path, tmp_path / "gen", f"noinput_{backend}_{with_weight}")
    src = py.read_text()
    assert "def forward(self) -> " in src and "module's device" in src
    # the weights give the device; a model without weights keeps an empty tensor for it
    assert ("device = self.devices()[0]" in src) is with_weight
    assert ("device = self.device_anchor.device" in src) is not with_weight
    dev = backend_device(backend)
    net = mod.Model.from_record(str(py.parent / "model.mpk"), dev)
    got = net() if not with_weight else net()[0]
    assert got.device == dev
    want = np.maximum(np.array([[1.5, -2.0, 0.25], [-0.5, 3.0, -1.0]], np.float32), 0)
    np.testing.assert_array_equal(got.to_numpy(), want)
    ref = load_model(path, dev)()
    np.testing.assert_array_equal(got.to_numpy(), (ref[0] if with_weight else ref).to_numpy())
    if with_weight:
        np.testing.assert_array_equal(net()[1].to_numpy(), want + np.float32(0.5))
    fresh = mod.ModelConfig().init(dev)  # init(device) puts the anchor (or the weights) on that device
    assert (fresh()[0] if with_weight else fresh()).device == dev
    assert "device_anchor" not in str(net.into_record())  # an empty constant: nothing saved


def _sequence_model(tmp: Path) -> Path:
    nodes = [helper.make_node("SplitToSequence", ["x"], ["pieces"], axis=1, keepdims=0),
             helper.make_node("Optional", ["x"], ["maybe"])]
    opt = helper.make_tensor_type_proto(TensorProto.FLOAT, ["n", 3])
    return _save(tmp, "sequence", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                 [helper.make_tensor_sequence_value_info("pieces", TensorProto.FLOAT, None),
                  helper.make_value_info("maybe", helper.make_optional_type_proto(opt))])


@pytest.mark.parametrize("backend", BACKENDS)
def test_sequence_and_optional_outputs_are_a_list_and_a_tensor(backend: str, tmp_path: Path) -> None:
    path = _sequence_model(tmp_path)
    mod, py = _generate(path, tmp_path / "gen", f"sequence_{backend}")
    assert "-> tuple[list[Tensor], Tensor | None]:" in py.read_text()
    dev = backend_device(backend)
    net = mod.Model.from_record(str(py.parent / "model.mpk"), dev)
    rng = np.random.default_rng(2)
    for n in (1, 2, 5):
        x = rng.standard_normal((n, 3)).astype(np.float32)
        pieces, maybe = net(Tensor.from_data(x, dev))
        want_pieces, want_maybe = _ort(path, {"x": x})
        assert isinstance(pieces, list) and len(pieces) == len(want_pieces) == 3
        for got, want in zip(pieces, want_pieces):
            assert list(got.shape) == [n]
            np.testing.assert_array_equal(got.to_numpy(), want)
        np.testing.assert_array_equal(maybe.to_numpy(), want_maybe)


def _bf16_model(tmp: Path) -> Path:
    nodes = [helper.make_node("Mul", ["x", "x"], ["sq"]), helper.make_node("Add", ["sq", "x"], ["s"]),
             helper.make_node("Cast", ["s"], ["y"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["x"], ["h"], to=TensorProto.BFLOAT16)]
    return _save(tmp, "bf16", nodes, [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, ["n", 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 4]),
                  helper.make_tensor_value_info("h", TensorProto.BFLOAT16, ["n", 4])])


def _bf16(a: np.ndarray) -> np.ndarray:
    """``a`` rounded to bfloat16 (to nearest, ties to even: the top 16 bits of its float32), as float32."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32)


@pytest.mark.skipif(not installed("torch"), reason="tracing bfloat16 needs torch's backend (numpy has no bfloat16)")
def test_a_bfloat16_model_generates_and_equals_load_model_bit_for_bit(tmp_path: Path) -> None:
    path = _bf16_model(tmp_path)
    mod, py = _generate(path, tmp_path / "gen", "bf16")
    assert "DType.FLOAT32" in py.read_text() or "float32" in py.read_text()
    rng = np.random.default_rng(3)
    for backend in [b for b in BACKENDS if b != "numpy"]:
        dev = backend_device(backend)
        net, ref = mod.Model.from_record(str(py.parent / "model.mpk"), dev), load_model(path, dev)
        for n in (1, 3):
            x = Tensor.from_data(rng.standard_normal((n, 4)).astype(np.float32), dev).cast(DType.BFLOAT16)
            (y, h), (ry, rh) = net(x), ref(x)
            assert y.dtype is DType.FLOAT32 and h.dtype is DType.BFLOAT16
            np.testing.assert_array_equal(y.to_numpy(), ry.to_numpy())
            np.testing.assert_array_equal(h.cast(DType.FLOAT32).to_numpy(), rh.cast(DType.FLOAT32).to_numpy())
            np.testing.assert_array_equal(h.cast(DType.FLOAT32).to_numpy(), x.cast(DType.FLOAT32).to_numpy())
            xf = x.cast(DType.FLOAT32).to_numpy().astype(np.float64)  # exact: bfloat16 values, float64 sums
            np.testing.assert_array_equal(y.to_numpy(), _bf16(_bf16(xf * xf) + xf))  # each op rounded to bfloat16


def test_untyped_container_and_float8_inputs_are_refused_with_the_reason(tmp_path: Path) -> None:
    """Sequence and optional inputs of tensors generate (``test_onnx_codegen_seq_inputs.py``); a sequence of
    sequences, an optional tensor of unknown rank and a float8 input are refused, nothing written."""
    nested = helper.make_sequence_type_proto(helper.make_sequence_type_proto(
        helper.make_tensor_type_proto(TensorProto.FLOAT, [2])))
    seq = _save(tmp_path, "seq_in", [helper.make_node("SequenceLength", ["s"], ["n"])],
                [helper.make_value_info("s", nested)], [helper.make_tensor_value_info("n", TensorProto.INT64, [])])
    with pytest.raises(ModelGenError, match="sequences and optionals of tensors"):
        ModelGen().input(seq).out_dir(tmp_path / "a").run()
    opt_t = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    opt = _save(tmp_path, "opt_in", [helper.make_node("OptionalHasElement", ["o"], ["b"])],
                [helper.make_value_info("o", opt_t)], [helper.make_tensor_value_info("b", TensorProto.BOOL, [])])
    with pytest.raises(ModelGenError, match="optional tensors of known rank"):
        ModelGen().input(opt).out_dir(tmp_path / "b").run()
    f8 = _save(tmp_path, "f8_in", [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
               [helper.make_tensor_value_info("x", TensorProto.FLOAT8E4M3FN, [2])],
               [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(ModelGenError, match="no Ember dtype"):
        ModelGen().input(f8).out_dir(tmp_path / "c").run()
    assert not any((tmp_path / d).exists() for d in "abc")  # nothing written on a refusal


def test_generated_files_pass_ruff_and_mypy(tmp_path: Path) -> None:
    models = [_castlike_model(tmp_path), _constant_model(tmp_path, False), _constant_model(tmp_path, True),
              _sequence_model(tmp_path)]
    if installed("torch"):
        models.append(_bf16_model(tmp_path))
    lint = tmp_path / "lint"
    lint.mkdir()
    files = []
    for m in models:  # one folder, one module name each: mypy refuses two modules named ``model``
        py = ModelGen().input(m).out_dir(tmp_path / m.stem).run()
        files.append(lint / f"{m.stem}.py")
        files[-1].write_text(py.read_text())
    _lint(files)
