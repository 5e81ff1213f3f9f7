"""``ModelGen`` on hostile model files (issue 28): every string of the file reaches ``model.py`` only as a literal or
a sanitised identifier, and generation never imports or runs the file it wrote.

Each model's names (values, initializers, nodes, graph, dims, doc strings, metadata, opset domains) hold quotes,
triple quotes, backslashes, line breaks of every kind, NUL, non-ASCII text, keywords, builtins, names that
collide once sanitised, and payloads that create a marker file when run as code. The checks: the marker is
absent after generation and after importing the generated module; ``ast.parse`` accepts the file, which has no
raw line separator or NUL; the module's outputs equal numpy's and ``load_model``'s; the record loads into it.
"""

from __future__ import annotations

import ast
import builtins
import importlib.machinery
import importlib.util
import itertools
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
from ember import Tensor

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from ember_import._cli import main  # noqa: E402
from ember_import._keys import compile_remap, remap_key  # noqa: E402
from ember_import.onnx import ModelGen, ModelGenError, load_model, source_key_remap  # noqa: E402
from ember_import.onnx.codegen import generate  # noqa: E402
from ember_import.onnx.codegen._expr import Attr, Name, build, literal, quoted  # noqa: E402
from ember_import.onnx.codegen._names import MAX_LENGTH, doc_text, identifier  # noqa: E402
from ember_import.onnx.codegen._source import _fit, _undefined_names  # noqa: E402

_COUNTER = itertools.count()

#: hostile name fragments; ``{mark}`` becomes the name of a file the payload would create in the working folder
#: (a relative name: no ``/``, so the initializer names keep their module paths and reach ``SOURCE_NAMES``)
HOSTILE = {
    "docstring_payload": 'y""";__import__("pathlib").Path(r"{mark}").touch();"""',
    "dict_payload": 'x" + str(__import__("pathlib").Path(r"{mark}").touch()) + "',
    "single_quote_payload": "x' + str(__import__('pathlib').Path(r'{mark}').touch()) + '",
    "triple_single": "a'''b'''c",
    "backslashes": "back\\slash\\\\\\",
    "trailing_backslash": "end\\",
    "newline_payload": 'n\n__import__("pathlib").Path(r"{mark}").touch()\n#',
    "carriage_return": 'c\r__import__("pathlib").Path(r"{mark}").touch()\r#',
    "nul": "z\x00z",
    "line_separators": "u\u2028v\u2029w\x85x\x0by\x0cz\x1c",
    "non_ascii": "ünïcødé_名前_😀",
    "keyword": "class",
    "builtin": "list",
    "comment": "# ) ] } \\N{{BULLET}} {{x}}",
}

#: characters that must never stand raw in generated source
_BREAKERS = "\x00\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _model(s: str, path: Path) -> dict[str, Any]:
    """``x [batch, 4]`` -> ``h = x @ W + b`` (a ``Linear``) -> ``y1 = h * scale`` (a bare weight), ``y2 = relu(h)``,
    every name built from ``s``; saved at ``path``. Returns the arrays and names."""
    rng = np.random.default_rng(0)
    w, b, scale = (rng.standard_normal(shape).astype(np.float32) for shape in ((4, 3), (3,), (3,)))
    names = {"x": f"{s}in", "w": f"{s}.weight", "b": f"{s}.bias", "scale": f"{s}::scale", "h0": f"{s}h0",
             "h": f"{s}h", "y1": s, "y2": f"{s}-2"}
    nodes = [helper.make_node("MatMul", [names["x"], names["w"]], [names["h0"]], name=f"/{s}/lin/MatMul",
                              doc_string=s),
             helper.make_node("Add", [names["h0"], names["b"]], [names["h"]], name=f"/{s}/lin/Add"),
             helper.make_node("Mul", [names["h"], names["scale"]], [names["y1"]], name=f"{s}/Mul"),
             helper.make_node("Relu", [names["h"]], [names["y2"]], name=s)]
    graph = helper.make_graph(
        nodes, s, [helper.make_tensor_value_info(names["x"], TensorProto.FLOAT, [f"{s}batch", 4])],
        [helper.make_tensor_value_info(names["y1"], TensorProto.FLOAT, [f"{s}batch", 3], doc_string=s),
         helper.make_tensor_value_info(names["y2"], TensorProto.FLOAT, [f"{s}batch", 3])],
        [numpy_helper.from_array(w, names["w"]), numpy_helper.from_array(b, names["b"]),
         numpy_helper.from_array(scale, names["scale"])], doc_string=s)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(s, 1)],
                              producer_name=s, producer_version=s, doc_string=s, domain=s)
    helper.set_model_props(model, {s: s, "note": s})
    onnx.save(model, path)
    return {"w": w, "b": b, "scale": scale, "names": names}


def _import(py: Path) -> Any:
    """The generated module, imported by the test (after generation)."""
    spec = importlib.util.spec_from_file_location(f"_hostile_generated_{next(_COUNTER)}", py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses read the module of a class while building it
    spec.loader.exec_module(mod)
    return mod


def _np(t: Tensor) -> np.ndarray:
    return np.asarray(t.to_data().to_numpy(), dtype=np.float64)


def _check_source(text: str) -> None:
    ast.parse(text)
    assert not any(ch in text for ch in _BREAKERS)
    assert text.splitlines() == text.split("\n")[: len(text.splitlines())]


@pytest.mark.parametrize("key", list(HOSTILE))
def test_hostile_names_run_nothing_and_the_module_still_matches(key: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    mark = tmp_path / "pwned"
    s = HOSTILE[key].replace("{mark}", mark.name).replace("{{", "{").replace("}}", "}")
    data = _model(s, tmp_path / "m.onnx")
    py = ModelGen().input(tmp_path / "m.onnx").out_dir(tmp_path / "out").development(True).run()
    assert not mark.exists(), "generation ran code from the model file"
    text = py.read_text(encoding="utf-8")
    _check_source(text)
    for name in data["names"].values():
        if any(ch in name[1:] for ch in "\"\n" + _BREAKERS):
            assert name not in text  # written escaped, never raw

    mod = _import(py)
    assert not mark.exists(), "importing the generated module ran code from the model file"
    dev = ember.backend("numpy").device()
    net = mod.Model.from_record(str(py.parent / "model.mpk"), dev)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float32)
    y1, y2 = net(Tensor.from_data(x, dev))
    h = x.astype(np.float64) @ data["w"] + data["b"]
    np.testing.assert_allclose(_np(y1), h * data["scale"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(y2), np.maximum(h, 0), rtol=1e-5, atol=1e-5)
    r1, r2 = load_model(tmp_path / "m.onnx", dev)(Tensor.from_data(x, dev))
    np.testing.assert_allclose(_np(y1), _np(r1), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(_np(y2), _np(r2), rtol=1e-6, atol=1e-6)
    # the source module path survives as data: SOURCE_NAMES holds it exactly, and the export remaps apply
    explicit = getattr(mod, "SOURCE_NAMES", {})
    assert s in explicit.values()
    for pattern, repl in source_key_remap(net):
        rx, rp = compile_remap(pattern, repl)
        field = pattern[1:].split("\\.")[0]
        assert remap_key(f"{field}.weight", [(rx, rp)]) == f"{explicit.get(field, field.replace('_', '.'))}.weight"
    assert not mark.exists()


def test_names_that_collide_once_sanitised_stay_distinct(tmp_path: Path) -> None:
    """Outputs and weights whose names sanitise alike, or are keywords, builtins or the module's own methods:
    each output is a different multiple of the input, so a mixed-up name gives a wrong value."""
    outs = ["out.1", "out-1", "out_1", "OUT 1", "class", "float", "list", "device", "self", "math", "module"]
    weights = ["forward", "load_record", "from_record", "map", "fc.weight", "fc-weight", "fc_weight", "1x", ""]
    nodes, inits, outputs, want = [], [], [], []
    for i, name in enumerate(outs):
        w_name = weights[i] if i < len(weights) and weights[i] else f"w{i}"
        w = np.full((3,), float(i + 1), np.float32)
        inits.append(numpy_helper.from_array(w, w_name))
        nodes.append(helper.make_node("Mul", ["x", w_name], [name], name=f"mul{i}"))
        outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3]))
        want.append(float(i + 1))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])], outputs,
                              inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    py = ModelGen().input(tmp_path / "m.onnx").out_dir(tmp_path / "out").run()
    _check_source(py.read_text(encoding="utf-8"))
    mod = _import(py)
    fields = type(mod.ModelConfig().init(ember.backend("numpy").device())).__ember_fields__
    assert "forward" not in fields and "load_record" not in fields and "from_record" not in fields
    dev = ember.backend("numpy").device()
    net = mod.Model.from_record(str(py.parent / "model.mpk"), dev)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = net(Tensor.from_data(x, dev))
    assert len(got) == len(outs)
    for g, k in zip(got, want):
        np.testing.assert_array_equal(_np(g), x * k)


def test_generation_never_imports_or_runs_the_written_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Loading, compiling or executing anything under the output folder during ``run()`` fails the test (the
    pre-issue-28 generator imported ``model.py`` to save the record)."""
    _model("plain", tmp_path / "m.onnx")
    out = tmp_path / "out"
    seen: list[str] = []

    def guard(what: str, path: Any) -> None:
        if str(out) in str(path):
            seen.append(f"{what}: {path}")
            raise AssertionError(f"generation {what} {path}")

    real_spec = importlib.util.spec_from_file_location
    real_get_code = importlib.machinery.SourceFileLoader.get_code
    real_compile, real_exec = builtins.compile, builtins.exec

    def spec_from_file_location(name: str, location: Any = None, *a: Any, **k: Any) -> Any:
        guard("made a spec for", location)
        return real_spec(name, location, *a, **k)

    def get_code(self: Any, fullname: str) -> Any:
        guard("loaded code from", self.path)
        return real_get_code(self, fullname)

    def compile_(source: Any, filename: Any, *a: Any, **k: Any) -> Any:
        guard("compiled", filename)
        flags = a[1] if len(a) > 1 else k.get("flags", 0)
        if isinstance(source, str) and "class ModelConfig" in source and not flags & ast.PyCF_ONLY_AST:
            seen.append("compiled the generated source to code")  # ast.parse (a syntax check) is allowed
        return real_compile(source, filename, *a, **k)

    def exec_(source: Any, *a: Any, **k: Any) -> Any:
        if isinstance(source, str) and "class ModelConfig" in source:
            seen.append("executed the generated source")
        return real_exec(source, *a, **k)

    monkeypatch.setattr(importlib.util, "spec_from_file_location", spec_from_file_location)
    monkeypatch.setattr(importlib.machinery.SourceFileLoader, "get_code", get_code)
    monkeypatch.setattr(builtins, "compile", compile_)
    monkeypatch.setattr(builtins, "exec", exec_)
    before = set(sys.modules)
    py = ModelGen().input(tmp_path / "m.onnx").out_dir(out).run()
    monkeypatch.undo()
    assert seen == []
    assert py.exists() and (out / "model.mpk").exists()
    assert not [m for m in set(sys.modules) - before if str(out) in str(getattr(sys.modules[m], "__file__", ""))]
    # the record saved from the generation state loads into the generated module
    net = _import(py).Model.from_record(str(out / "model.mpk"), ember.backend("numpy").device())
    assert net.num_params() == 4 * 3 + 3 + 3


def test_a_huge_name_is_cut_in_identifiers_and_docstrings(tmp_path: Path) -> None:
    s = "n" * 100_000 + '"""'
    _model(s, tmp_path / "m.onnx")
    py = ModelGen().input(tmp_path / "m.onnx").out_dir(tmp_path / "out").run()
    text = py.read_text(encoding="utf-8")
    _check_source(text)
    idents = {n.id for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Name)}
    idents |= {n.attr for n in ast.walk(ast.parse(text)) if isinstance(n, ast.Attribute)}
    assert max(map(len, idents)) <= MAX_LENGTH + 8  # cut, plus a Namer suffix
    assert len(text) < 100_000 + 20_000  # the name's full text is in SOURCE_NAMES once, not in every docstring


@pytest.mark.parametrize("s", [*HOSTILE.values(), "", '"', "\\", '\\"', "'\"'", "\ud800", "\U0010ffff", "\t\x7f"])
def test_literals_and_docstring_text_round_trip(s: str) -> None:
    assert ast.literal_eval(quoted(s)) == s
    assert ast.literal_eval(literal([s, 1, 2.5, None, True, b"\x00'\""])) == [s, 1, 2.5, None, True, b"\x00'\""]
    doc = doc_text(s)
    value = ast.literal_eval('"""' + doc + '"""')
    assert len(('"""' + doc + '"""').splitlines()) == 1 and not any(ch in doc for ch in _BREAKERS)
    assert value.replace("\\x", "").isprintable() or s == ""
    ident = identifier(s)
    assert ident.isidentifier() and ident.isascii() and not ident.startswith("_")


def test_literal_and_build_refuse_what_is_not_data() -> None:
    with pytest.raises(ModelGenError, match="expected a constant"):
        literal(object())
    with pytest.raises(ModelGenError, match="not a public name"):
        build(Attr(Name("nn"), "__class__"), {"nn": ember.nn})
    with pytest.raises(ModelGenError, match="not bound"):
        build(Name("os"), {"nn": ember.nn})


@pytest.mark.parametrize("name", ["class", "Tensor", "Module", "_Model", "Model;import os", "Ｍodel", "SOURCE_NAMES",
                                  "PADDING_1", "config", 'M"]'])
def test_class_names_the_file_cannot_use_are_refused(name: str, tmp_path: Path) -> None:
    with pytest.raises(ModelGenError, match="class_name"):
        ModelGen().class_name(name)
    _model("plain", tmp_path / "m.onnx")
    with pytest.raises(ModelGenError, match="class_name"):
        generate(tmp_path / "m.onnx", class_name=name)
    with pytest.raises(ModelGenError, match="record_type"):
        generate(tmp_path / "m.onnx", record_type="pickle")


def test_a_string_attribute_is_checked_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``Gelu``'s ``approximate`` holding a payload: refused as the runtime converter refuses it (it was written
    as ``approximate=True``), the payload never runs and no output folder is made."""
    monkeypatch.chdir(tmp_path)
    payload = HOSTILE["docstring_payload"].replace("{mark}", "pwned")
    graph = helper.make_graph([helper.make_node("Gelu", ["x"], ["y"], approximate=payload)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), tmp_path / "m.onnx")
    with pytest.raises(ModelGenError, match="approximate must be 'none' or 'tanh'"):
        ModelGen().input(tmp_path / "m.onnx").out_dir(tmp_path / "out").run()
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "out").exists()


def test_the_command_line_on_a_hostile_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """``ember-import onnx2ember``: the payload model generates without running anything; a class name that is
    not an identifier exits 1 with the reason before anything is written."""
    monkeypatch.chdir(tmp_path)
    _model(HOSTILE["dict_payload"].replace("{mark}", "pwned"), tmp_path / "m.onnx")
    assert main(["onnx2ember", "m.onnx", "--out", "gen"]) == 0
    assert not (tmp_path / "pwned").exists()
    ast.parse((tmp_path / "gen" / "model.py").read_text(encoding="utf-8"))
    assert main(["onnx2ember", "m.onnx", "--out", "bad", "--name", "M:import os"]) == 1
    assert "class_name" in capsys.readouterr().err and not (tmp_path / "bad").exists()


@pytest.mark.parametrize("text", ['a(b, c)', 'x", y', "q\\'), (", '\\', "\n)"])
def test_wrapping_a_long_line_never_changes_its_code(text: str) -> None:
    """Lines are wrapped at a call's arguments; a string literal holding brackets, commas or escaped quotes
    must not move the split points (the wrapped text parses to the same code, or the line stays whole)."""
    for line in (f"y = x.cast({quoted(text)}).reshape({list(range(40))})",
                 f"y = f({quoted(text)}, {', '.join(quoted(text * 3) for _ in range(6))})",
                 f"field=nn.Conv2dConfig({', '.join(f'a{i}={quoted(text)}' for i in range(12))}).init(device),"):
        wrapped = "\n".join(_fit(line, "        "))
        assert ast.dump(ast.parse(line)) == ast.dump(ast.parse(textwrap.dedent(wrapped)))


def test_names_the_file_uses_are_imported_now_that_nothing_imports_it(tmp_path: Path) -> None:
    """Generation no longer imports ``model.py``, so a name it forgets to import would only fail in the user's
    hands: an integer weight (``Param(Tensor.zeros(..., Int))``, used only in ``init``) used to leave ``Int``
    unimported. The generated module runs, and the static check names what a file leaves undefined."""
    idx = np.arange(100, dtype=np.int64) % 5
    graph = helper.make_graph([helper.make_node("Gather", ["x", "idx"], ["y"], axis=1)], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 100])],
                              [numpy_helper.from_array(idx, "idx")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    py = ModelGen().input(tmp_path / "m.onnx").out_dir(tmp_path / "out").run()
    dev = ember.backend("numpy").device()
    net = _import(py).Model.from_record(str(tmp_path / "out" / "model.mpk"), dev)
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    np.testing.assert_array_equal(_np(net(Tensor.from_data(x, dev))), x[:, idx])
    assert _undefined_names(ast.parse("from ember import Tensor\nx = Tensor.zeros([1], d, Int)\nd = 1")) == ["Int"]


def test_a_hostile_file_name_is_escaped_in_the_docstrings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The input's file name is shown in ``model.py``'s docstrings: quotes and a newline in it stay text."""
    monkeypatch.chdir(tmp_path)
    name = 'm""";__import__("pathlib").Path("pwned").touch()\n#\\.onnx'
    _model("plain", tmp_path / name)
    py = ModelGen().input(tmp_path / name).out_dir(tmp_path / "out").run()
    text = py.read_text(encoding="utf-8")
    _check_source(text)
    shown = name.replace("\n", "\\x0a")  # the docstring reads as the name, its newline as the text \x0a
    assert ast.get_docstring(ast.parse(text)).startswith(f"Model: generated from ``{shown}``")  # type: ignore[union-attr]
    _import(py)
    assert not (tmp_path / "pwned").exists()
