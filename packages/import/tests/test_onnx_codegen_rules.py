"""ModelGen's host rules (issue 30): a converter's planning on values read from the data, recorded as one line.

``Reshape`` with its shape as a graph input plans on that shape with ONNX's rules (``0`` copies a dim, ``-1`` is
inferred, ``allowzero`` makes ``0`` an empty dim). The planning is :func:`ember_import.onnx.rules.reshape_target`,
a host rule: the generated code calls it (``shape = rules.reshape_target(...)``) and passes its result on
(``x.reshape(shape)``). One generated file is compared with onnxruntime for several shapes, so the code is shown
not to be specialised on the trace's stand-in values; a rule called on constants alone folds into a literal.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
from _codegen_support import generate_numpy, graph_model  # noqa: E402
from ember_import.onnx import ModelGenError, OnnxImportError, rules  # noqa: E402
from ember_import.onnx.codegen._active import set_active  # noqa: E402
from ember_import.onnx.codegen._gen import Gen  # noqa: E402
from ember_import.onnx.codegen._sym import Sym, Var, parts_text  # noqa: E402
from ember_import.onnx.rules import from_data, host_rule  # noqa: E402

h = onnx.helper
TP = onnx.TensorProto
DEV = ember.backend("numpy").device()
ROOT = Path(__file__).resolve().parents[3]


_model = graph_model


def _compare(model: Any, net: Any, feeds: dict[str, np.ndarray], atol: float = 0.0) -> None:
    """The generated ``net`` on ``feeds`` equals onnxruntime (every output, shape and values)."""
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    want = sess.run(None, feeds)
    got = net.forward(*(Tensor.from_data(v, DEV, dtype=str(v.dtype)) for v in feeds.values()))
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert tuple(g.shape) == w.shape, feeds
        np.testing.assert_allclose(g.to_numpy(), w, rtol=0, atol=atol)


def _rule_lines(src: str) -> list[str]:
    return [ln.strip() for ln in src.splitlines() if "rules." in ln and "import" not in ln]


# ---------------------------------------------------------------- the mechanism
def test_rule_outside_a_trace_is_a_plain_call() -> None:
    assert rules.reshape_target([2, 3, 4], [4, 0, -1], False) == [4, 3, 2]
    assert rules.reshape_target([2, 0, 4], [0, 8], True) == [0, 8]
    assert type(rules.reshape_target([2, 3], [-1], False)[0]) is int
    assert not from_data([1, 2], 3.0)
    with pytest.raises(OnnxImportError, match="more than one -1"):
        rules.reshape_target([2, 3], [-1, -1], False)


def test_host_rule_takes_a_lowercase_variable_name() -> None:
    with pytest.raises(ValueError, match="lower-case identifier"):
        host_rule(var="Shape")


def test_reshape_rule_is_one_line_and_its_result_feeds_the_next_call(tmp_path: Path) -> None:
    model = _model(
        [h.make_node("Reshape", ["x", "shape"], ["y"])],
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3, 4]), h.make_tensor_value_info("shape", TP.INT64, [3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [None, None, None])],
        14,
    )
    net, _, src = generate_numpy(model, tmp_path, "reshape", "_generated_rules")
    assert "from ember_import.onnx import rules" in src
    lines = _rule_lines(src)
    assert len(lines) == 1 and lines[0].startswith("shape_1 = rules.reshape_target([2, 3, 4], "), lines
    assert "x.reshape(shape_1)" in src  # the rule's result list is passed on as its variable
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 7.5
    for spec in ([4, 0, -1], [0, 4, 3], [-1, 1, 6], [24, 1, 1], [2, -1, 2], [0, 0, -1], [1, 2, 12]):
        _compare(model, net, {"x": x, "shape": np.array(spec, dtype=np.int64)})
    with pytest.raises(OnnxImportError, match="cannot reshape"):  # a shape the model refuses, as onnxruntime does
        net.forward(Tensor.from_data(x, DEV), Tensor.from_data(np.array([5, 5, 1]), DEV, dtype="int64"))


@pytest.mark.parametrize("dims", [[2, 3, 4], [2, 0, 3]], ids=["full", "empty"])
def test_reshape_allowzero_from_data(tmp_path: Path, dims: list[int]) -> None:
    model = _model(
        [h.make_node("Reshape", ["x", "shape"], ["y"], allowzero=1)],
        [h.make_tensor_value_info("x", TP.FLOAT, dims), h.make_tensor_value_info("shape", TP.INT64, [3])],
        [h.make_tensor_value_info("y", TP.FLOAT, [None, None, None])],
        14,
    )
    net, _, src = generate_numpy(model, tmp_path, f"allowzero_{len(dims)}_{dims[1]}", "_generated_rules")
    assert "rules.reshape_target(" in src and ", True)" in src
    x = np.arange(int(np.prod(dims)), dtype=np.float32).reshape(dims) + 0.25
    specs = [[4, -1, 3], [24, 1, 1], [3, 2, 4]] if dims[1] else [[0, 6, 5], [3, 0, 7], [1, 1, 0]]
    for spec in specs:
        _compare(model, net, {"x": x, "shape": np.array(spec, dtype=np.int64)})


def test_rule_on_constants_alone_folds(tmp_path: Path) -> None:
    spec = h.make_tensor("shape", TP.INT64, [3], [0, -1, 2])
    model = _model(
        [h.make_node("Reshape", ["x", "shape"], ["y"])],
        [h.make_tensor_value_info("x", TP.FLOAT, [2, 3, 4])],
        [h.make_tensor_value_info("y", TP.FLOAT, [2, 6, 2])],
        14,
        [spec],
    )
    net, _, src = generate_numpy(model, tmp_path, "folded", "_generated_rules")
    assert "rules." not in src and "import rules" not in src
    assert "x.reshape([2, 6, 2])" in src
    _compare(model, net, {"x": np.arange(24, dtype=np.float32).reshape(2, 3, 4)})


@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")
def test_generated_rule_code_passes_ruff_and_mypy(tmp_path: Path) -> None:
    """The rule's import is used (ruff F401), and its result types check (mypy on the generated file)."""
    model = _model(
        [h.make_node("Reshape", ["x", "shape"], ["r"]), h.make_node("Split", ["r", "split"], ["a", "b"], axis=0)],
        [
            h.make_tensor_value_info("x", TP.FLOAT, [2, 3, 4]),
            h.make_tensor_value_info("shape", TP.INT64, [2]),
            h.make_tensor_value_info("split", TP.INT64, [2]),
        ],
        [h.make_tensor_value_info("a", TP.FLOAT, [None, None]), h.make_tensor_value_info("b", TP.FLOAT, [None, None])],
        13,
    )
    net, _, src = generate_numpy(model, tmp_path, "lint", "_generated_rules")
    assert len(_rule_lines(src)) == 2
    py = tmp_path / "lint" / "model.py"
    for cmd in (["ruff", "check", "--no-cache"], ["mypy"]):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                *cmd,
                "--config-file" if cmd == ["mypy"] else "--config",
                str(ROOT / "pyproject.toml"),
                str(py),
            ],
            capture_output=True,
            text=True,
            cwd=py.parent,
        )
        assert done.returncode == 0, done.stdout + done.stderr
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for spec, split in (([6, 4], [1, 5]), ([-1, 2], [12, 0]), ([0, 12], [2, 0])):
        _compare(
            model, net, {"x": x, "shape": np.array(spec, dtype=np.int64), "split": np.array(split, dtype=np.int64)}
        )


# ---------------------------------------------------------------- the trace side, on a bare generation state
class _Gen:
    """What :func:`ember_import.onnx.codegen._rules.record_rule` uses of a generation: its lines, reads, imports
    and the rendering of arguments (:class:`~ember_import.onnx.codegen._gen.Gen`'s own ``arg``/``call_args``)."""

    depth = 0

    def __init__(self) -> None:
        self.imports: set[tuple[str, str]] = set()
        self.lines: list[Any] = []
        self.reads: list[Any] = []

    def new_var(self, base: str) -> Var:
        return Var(f"{base}_{len(self.lines)}")

    def arg(self, v: Any, atom: bool = False) -> Any:
        return Gen.arg(self, v, atom)  # type: ignore[arg-type]

    def call_args(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return Gen.call_args(self, args, kwargs)  # type: ignore[arg-type]


@pytest.fixture
def bare_gen() -> Any:
    gen = _Gen()
    set_active(gen)  # type: ignore[arg-type]
    try:
        yield gen
    finally:
        set_active(None)


def _read(name: str, *hints: int) -> list[Sym]:
    """Values read from the data (``name[i]``) whose trace stand-ins are ``hints``."""
    var = Var(name)
    return [Sym(v, (var, f"[{i}]"), data=True) for i, v in enumerate(hints)]


@host_rule(var="twice")
def _twice(values: list[int]) -> list[int]:
    return [2 * v for v in values]


@host_rule(var="flag")
def _flag(n: int) -> bool:  # breaks the contract: a bool result would be a branch
    return n > 0


def test_a_rule_call_with_data_is_one_line_whose_results_are_run_time_values(bare_gen: Any) -> None:
    sizes = _read("sizes", 0, 0)  # stand-ins the rule refuses (they do not sum to 6): its stand_in is used
    out = rules.split_sizes(6, 2, sizes, None)
    assert len(bare_gen.lines) == 1 and bare_gen.reads == list(bare_gen.lines[0].targets)
    assert parts_text(bare_gen.lines[0].parts) == "rules.split_sizes(6, 2, [sizes[0], sizes[1]], None)"
    assert bare_gen.imports == {("ember_import.onnx", "rules")}
    assert [int(s) for s in out] == [3, 3] and all(isinstance(s, Sym) and s.data for s in out)
    var = bare_gen.lines[0].targets[0].name
    assert [repr(s) for s in out] == [f"{var}[0]", f"{var}[1]"]
    assert parts_text(bare_gen.arg(out)) == var  # the unchanged result list is written as its variable
    out.append(1)
    assert parts_text(bare_gen.arg(out)) == f"[{var}[0], {var}[1], 1]"  # changed: element-wise again
    assert from_data(out) and not from_data([1, 2], 3.0)


def test_a_rule_call_on_constants_alone_is_a_plain_call(bare_gen: Any) -> None:
    assert rules.split_sizes(6, 2, [2, 4], None) == [2, 4]
    assert rules.range_count(1.0, 10.0, 2.0) == 5
    assert bare_gen.lines == [] and bare_gen.imports == set()


def test_a_rule_must_be_exported_by_the_rules_module(bare_gen: Any) -> None:
    assert _twice([1, 2]) == [2, 4]  # static: a plain call, wherever the rule lives
    with pytest.raises(ModelGenError, match="not exported"):
        _twice(_read("sizes", 1, 2))


def test_a_rule_returning_a_bool_is_refused(bare_gen: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "_flag", _flag, raising=False)
    monkeypatch.setattr(_flag, "__module__", "ember_import.onnx.rules")
    monkeypatch.setattr(_flag, "__name__", "_flag")
    with pytest.raises(ModelGenError, match="bool"):
        _flag(_read("n", 3)[0])
