"""ModelGen on sequence and optional graph inputs, and ``If`` branches that return a list or ``None``.

Generated ``forward`` takes a sequence input as ``list[Tensor]`` and an optional one as ``Tensor | None`` (or
``list[Tensor] | None``), as ``load_model``'s module does; the ops over them are code over the run-time list or
``None``. Each hand-built graph is generated once and run on sequences of several lengths (empty included where
ONNX allows it) and optionals present and absent: the outputs must equal onnxruntime's, and ``load_model``'s for
the same inputs (one calling convention), which shows the code is not specialised on the trace's stand-ins. The
generated files pass ruff and mypy with the new signatures.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from _codegen_support import generate_numpy
from ember import Tensor
from ember_import.onnx import ModelGen, load_model

ort = pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[3]
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def _seq_type(elem: int, shape: list[Any] | None) -> Any:
    return helper.make_sequence_type_proto(helper.make_tensor_type_proto(elem, shape))


def _opt_type(inner: Any) -> Any:
    return helper.make_optional_type_proto(inner)


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], opset: int = 18) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _ember(v: Any, dev: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, list):
        return [Tensor.from_data(x, dev) for x in v]
    return Tensor.from_data(v, dev)


def _numpy(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, list):
        return [x.to_numpy() for x in v]
    return v.to_numpy()


def _same(got: Any, want: Any) -> None:
    if want is None:
        assert got is None
        return
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    want = np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


class _Case:
    """One generated model, checked against onnxruntime and load_model on each call."""

    def __init__(self, model: Any, tmp: Path, tag: str) -> None:
        self.net, self.dev, self.source = generate_numpy(model, tmp, tag, "seq_inputs")
        self.runtime = load_model(model, self.dev)
        self.session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        self.names = [i.name for i in model.graph.input]

    def check(self, *inputs: Any) -> list[Any]:
        want = self.session.run(None, dict(zip(self.names, inputs)))
        got = self.net(*[_ember(x, self.dev) for x in inputs])
        got_list = list(got) if isinstance(got, tuple) else [got]
        ref = self.runtime(*[_ember(x, self.dev) for x in inputs])
        ref_list = list(ref) if isinstance(ref, tuple) else [ref]
        for g, r, w in zip(got_list, ref_list, want):
            _same(_numpy(g), w)
            _same(_numpy(r), w)
        return got_list


def _rng_list(rng: np.random.Generator, sizes: list[int], cols: int = 3) -> list[np.ndarray]:
    return [rng.standard_normal((n, cols)).astype(np.float32) for n in sizes]


# ------------------------------------------------------------------------------------------- sequences
def _at_length_concat_model() -> Any:
    return _model(
        [
            helper.make_node("SequenceAt", ["seq", "i"], ["at"]),
            helper.make_node("SequenceLength", ["seq"], ["n"]),
            helper.make_node("ConcatFromSequence", ["seq"], ["cat"], axis=0),
        ],
        [helper.make_value_info("seq", _seq_type(F, ["N", 3])), helper.make_tensor_value_info("i", I64, [])],
        [
            helper.make_tensor_value_info("at", F, ["A", 3]),
            helper.make_tensor_value_info("n", I64, []),
            helper.make_tensor_value_info("cat", F, ["B", 3]),
        ],
    )


def test_sequence_input_at_length_concat(tmp_path: Path) -> None:
    """``SequenceAt`` (run-time index), ``SequenceLength`` and ``ConcatFromSequence`` on a ``list[Tensor]``
    input: lists of 1, 3 and 4 elements whose first dims differ."""
    case = _Case(_at_length_concat_model(), tmp_path, "at_length_concat")
    assert "def forward(self, seq: list[Tensor], i: Tensor) -> tuple[Tensor, Tensor, Tensor]:" in case.source
    assert "len(seq)" in case.source
    rng = np.random.default_rng(1)
    for sizes, i in (([2], 0), ([1, 4, 2], -1), ([3, 3, 1, 5], 2)):
        at, n, _ = case.check(_rng_list(rng, sizes), np.array(i, np.int64))
        assert int(n.into_scalar()) == len(sizes) and at.shape[0] == sizes[i]
    with pytest.raises(IndexError):  # past the end: refused, as onnxruntime and load_model refuse it
        case.net([Tensor.from_data(np.ones((2, 3), np.float32), case.dev)], Tensor.from_data(np.array(1), case.dev))


def _insert_erase_model() -> Any:
    return _model(
        [
            helper.make_node("SequenceInsert", ["seq", "t", "p"], ["inserted"]),
            helper.make_node("SequenceErase", ["inserted", "q"], ["erased"]),
        ],
        [
            helper.make_value_info("seq", _seq_type(F, [2])),
            helper.make_tensor_value_info("t", F, [2]),
            helper.make_tensor_value_info("p", I64, []),
            helper.make_tensor_value_info("q", I64, []),
        ],
        [helper.make_value_info("inserted", _seq_type(F, [2])), helper.make_value_info("erased", _seq_type(F, [2]))],
    )


def test_sequence_insert_erase_at_run_time_positions(tmp_path: Path) -> None:
    """``SequenceInsert`` and ``SequenceErase`` at a position read when the code runs, on lists of 0 to 5
    elements; positions out of ONNX's range raise as the runtime does (``list.insert`` would clamp)."""
    case = _Case(_insert_erase_model(), tmp_path, "insert_erase")
    assert "list[Tensor]" in case.source and "raise IndexError" in case.source
    rng = np.random.default_rng(2)
    t = np.full(2, 9.0, np.float32)
    for n, p, q in ((0, 0, 0), (0, 0, -1), (2, 2, 0), (3, -3, -1), (5, 1, 4), (5, -1, -6)):
        seq = [rng.standard_normal(2).astype(np.float32) for _ in range(n)]
        inserted, erased = case.check(seq, t, np.array(p, np.int64), np.array(q, np.int64))
        assert len(inserted) == n + 1 and len(erased) == n
    dev = case.dev
    two = [Tensor.from_data(np.zeros(2, np.float32), dev)] * 2
    for p, q in ((3, 0), (-3, 0), (0, 3), (0, -4)):  # insert into [-2, 2], erase from [-3, 2] of 3
        with pytest.raises(IndexError):
            case.net(two, Tensor.from_data(t, dev), *(Tensor.from_data(np.array(v), dev) for v in (p, q)))


def _sequence_map_model() -> Any:
    body = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Shape", ["a"], ["shape"])],
        "body",
        [helper.make_tensor_value_info("a", F, ["N"]), helper.make_tensor_value_info("b", F, ["N"])],
        [helper.make_tensor_value_info("s", F, ["N"]), helper.make_tensor_value_info("shape", I64, [1])],
    )
    return _model(
        [helper.make_node("SequenceMap", ["xs", "y"], ["sums", "shapes"], body=body)],
        [helper.make_value_info("xs", _seq_type(F, ["N"])), helper.make_tensor_value_info("y", F, ["N"])],
        [helper.make_value_info("sums", _seq_type(F, ["N"])), helper.make_value_info("shapes", _seq_type(I64, [1]))],
    )


def test_sequence_map_over_list_inputs(tmp_path: Path) -> None:
    """``SequenceMap`` over a ``list[Tensor]`` input and a tensor: a ``for`` loop, two output lists; empty
    and unequal-length lists."""
    case = _Case(_sequence_map_model(), tmp_path, "sequence_map")
    assert re.search(r"for \w+ in \w+:", case.source)
    rng = np.random.default_rng(3)
    for n, size in ((1, 4), (3, 2), (5, 7)):
        case.check(
            [rng.standard_normal(size).astype(np.float32) for _ in range(n)],
            rng.standard_normal(size).astype(np.float32),
        )
    sums, shapes = case.net([], Tensor.from_data(np.ones(3, np.float32), case.dev))
    assert sums == [] and shapes == []  # no element: no iteration (load_model gives the same)
    assert case.runtime([], Tensor.from_data(np.ones(3, np.float32), case.dev)) == ([], [])


def _two_sequences_model() -> Any:
    body = helper.make_graph(
        [helper.make_node("Mul", ["a", "b"], ["m"])],
        "body",
        [helper.make_tensor_value_info("a", F, ["N"]), helper.make_tensor_value_info("b", F, ["N"])],
        [helper.make_tensor_value_info("m", F, ["N"])],
    )
    return _model(
        [helper.make_node("SequenceMap", ["xs", "ys"], ["prods"], body=body)],
        [helper.make_value_info("xs", _seq_type(F, ["N"])), helper.make_value_info("ys", _seq_type(F, ["N"]))],
        [helper.make_value_info("prods", _seq_type(F, ["N"]))],
    )


def test_two_sequences_zipped_and_length_checked(tmp_path: Path) -> None:
    case = _Case(_two_sequences_model(), tmp_path, "two_sequences")
    rng = np.random.default_rng(4)
    for sizes in ([3], [2, 5], [1, 1, 4, 2]):
        xs = [rng.standard_normal(s).astype(np.float32) for s in sizes]
        ys = [rng.standard_normal(s).astype(np.float32) for s in sizes]
        case.check(xs, ys)
    dev = case.dev
    with pytest.raises(ValueError, match="equally long"):
        case.net([Tensor.from_data(np.ones(2, np.float32), dev)], [])


# ------------------------------------------------------------------------------------------- optionals
def _optional_tensor_model() -> Any:
    """``y = has(o) ? get(o) + x : x * 2`` with ``o: optional<float32[N]>``."""
    then_b = helper.make_graph(
        [helper.make_node("OptionalGetElement", ["o"], ["v"]), helper.make_node("Add", ["v", "x"], ["r1"])],
        "then",
        [],
        [helper.make_tensor_value_info("r1", F, ["N"])],
    )
    two = helper.make_tensor("two", F, [], [2.0])
    else_b = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["r2"])],
        "else",
        [],
        [helper.make_tensor_value_info("r2", F, ["N"])],
        initializer=[two],
    )
    return _model(
        [
            helper.make_node("OptionalHasElement", ["o"], ["has"]),
            helper.make_node("If", ["has"], ["y"], then_branch=then_b, else_branch=else_b),
            helper.make_node("OptionalHasElement", ["o"], ["has_out"]),
        ],
        [
            helper.make_value_info("o", _opt_type(helper.make_tensor_type_proto(F, ["N"]))),
            helper.make_tensor_value_info("x", F, ["N"]),
        ],
        [helper.make_tensor_value_info("y", F, ["N"]), helper.make_tensor_value_info("has_out", TensorProto.BOOL, [])],
    )


def test_optional_tensor_input_present_and_absent(tmp_path: Path) -> None:
    case = _Case(_optional_tensor_model(), tmp_path, "optional_tensor")
    assert "o: Tensor | None" in case.source and "is not None" in case.source
    rng = np.random.default_rng(5)
    for n in (1, 3, 6):
        x = rng.standard_normal(n).astype(np.float32)
        y, has = case.check(rng.standard_normal(n).astype(np.float32), x)
        assert bool(has.into_scalar())
        y, has = case.check(None, x)
        assert not bool(has.into_scalar())
        np.testing.assert_allclose(y.to_numpy(), x.astype(np.float64) * 2, rtol=1e-6)


def _optional_sequence_model() -> Any:
    return _model(
        [
            helper.make_node("OptionalGetElement", ["o"], ["items"]),
            helper.make_node("SequenceLength", ["items"], ["n"]),
        ],
        [helper.make_value_info("o", _opt_type(_seq_type(F, [2])))],
        [helper.make_value_info("items", _seq_type(F, [2])), helper.make_tensor_value_info("n", I64, [])],
    )


def test_optional_get_element_of_empty_raises(tmp_path: Path) -> None:
    """``OptionalGetElement`` of ``None`` is an error in ONNX: the generated code raises (mypy sees the
    narrowing), as load_model does; a present optional sequence comes out as the list."""
    case = _Case(_optional_sequence_model(), tmp_path, "optional_sequence")
    assert "o: list[Tensor] | None" in case.source
    rng = np.random.default_rng(6)
    for n in (0, 1, 4):
        items, count = case.check([rng.standard_normal(2).astype(np.float32) for _ in range(n)])
        assert len(items) == n and int(count.into_scalar()) == n
    with pytest.raises(ValueError, match="empty"):
        case.net(None)


# ------------------------------------------------------------------------------------------- If
def _if_lists_model() -> Any:
    then_b = helper.make_graph(
        [
            helper.make_node("Neg", ["x"], ["nx"]),
            helper.make_node("SequenceConstruct", ["x", "nx"], ["s1"]),
            helper.make_node("Optional", [], ["o1"], type=helper.make_tensor_type_proto(F, ["N"])),
        ],
        "then",
        [],
        [
            helper.make_value_info("s1", _seq_type(F, ["N"])),
            helper.make_value_info("o1", _opt_type(helper.make_tensor_type_proto(F, ["N"]))),
        ],
    )
    else_b = helper.make_graph(
        [helper.make_node("SequenceConstruct", ["x"], ["s2"]), helper.make_node("Optional", ["x"], ["o2"])],
        "else",
        [],
        [
            helper.make_value_info("s2", _seq_type(F, ["N"])),
            helper.make_value_info("o2", _opt_type(helper.make_tensor_type_proto(F, ["N"]))),
        ],
    )
    return _model(
        [helper.make_node("If", ["c"], ["s", "o"], then_branch=then_b, else_branch=else_b)],
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), helper.make_tensor_value_info("x", F, ["N"])],
        [
            helper.make_value_info("s", _seq_type(F, ["N"])),
            helper.make_value_info("o", _opt_type(helper.make_tensor_type_proto(F, ["N"]))),
        ],
    )


def test_if_returning_lists_and_none(tmp_path: Path) -> None:
    """Branches returning lists of different lengths, and a value on one branch and ``None`` on the other."""
    case = _Case(_if_lists_model(), tmp_path, "if_lists")
    assert "-> tuple[list[Tensor], Tensor | None]:" in case.source
    rng = np.random.default_rng(7)
    for c, n in ((True, 2), (False, 3), (True, 5), (False, 1)):
        s, o = case.check(np.array(c), rng.standard_normal(n).astype(np.float32))
        assert len(s) == (2 if c else 1) and (o is None) == c


# ------------------------------------------------------------------------------------------- the files
def test_hostile_names_stay_literals(tmp_path: Path) -> None:
    """A name from the file reaches the ``raise`` message of OptionalGetElement as a literal only."""
    bad = 'o"); import os; os.system("echo pwned'
    model = _model(
        [helper.make_node("OptionalGetElement", [bad], ["y"])],
        [helper.make_value_info(bad, _opt_type(helper.make_tensor_type_proto(F, [2])))],
        [helper.make_tensor_value_info("y", F, [2])],
    )
    net, dev, src = generate_numpy(model, tmp_path, "hostile", "seq_inputs")
    tree = ast.parse(src)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert "os" not in imported
    assert not any(isinstance(n, ast.Attribute) and n.attr == "system" for n in ast.walk(tree))
    x = np.array([1.0, 2.0], np.float32)
    np.testing.assert_array_equal(net(Tensor.from_data(x, dev)).to_numpy(), x)
    with pytest.raises(ValueError):
        net(None)


def test_generated_sources_pass_ruff_and_mypy(tmp_path: Path) -> None:
    """Every model of this file generates a source that passes ruff and mypy with the new signatures."""
    builders = (
        _at_length_concat_model,
        _insert_erase_model,
        _sequence_map_model,
        _two_sequences_model,
        _optional_tensor_model,
        _optional_sequence_model,
        _if_lists_model,
    )
    files = []
    for k, build in enumerate(builders):
        tag = f"model_{k}"
        onnx.save(build(), tmp_path / f"{tag}.onnx")
        py = Path(ModelGen().input(tmp_path / f"{tag}.onnx").out_dir(tmp_path / tag).run())
        f = tmp_path / f"gen_{tag}.py"
        f.write_text(py.read_text())
        files.append(str(f))
    cfg = str(ROOT / "pyproject.toml")
    if importlib.util.find_spec("ruff") is not None:
        done = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--no-cache", "--config", cfg, "--extend-ignore", "E501", *files],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        long = [
            ln
            for f in files
            for ln in Path(f).read_text().splitlines()
            if len(ln) > 120 and '"""' not in ln and "Shapes:" not in ln
        ]
        assert not long, long
    if importlib.util.find_spec("mypy") is not None:
        done = subprocess.run(
            [sys.executable, "-m", "mypy", "--config-file", cfg, *files], capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr


# ------------------------------------------------------------------------------------------- Loop
def _loop_append_model(optional: bool) -> Any:
    """``for i in range(trips): seq = [*seq, x * i]`` over a sequence input; with ``optional`` the start is an
    ``optional<sequence>`` the body replaces by ``[]`` when empty (ONNX's ``test_loop16_seq_none`` without its
    data-dependent ``Slice``)."""
    nodes = [
        helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("Cast", ["i"], ["fi"], to=F),
        helper.make_node("Mul", ["x", "fi"], ["y"]),
    ]
    carried_type = _opt_type(_seq_type(F, [2])) if optional else _seq_type(F, [2])
    if optional:
        then_b = helper.make_graph(
            [helper.make_node("OptionalGetElement", ["seq_in"], ["got"])],
            "then",
            [],
            [helper.make_value_info("got", _seq_type(F, [2]))],
        )
        else_b = helper.make_graph(
            [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F)],
            "else",
            [],
            [helper.make_value_info("empty", _seq_type(F, [2]))],
        )
        nodes += [
            helper.make_node("OptionalHasElement", ["seq_in"], ["has"]),
            helper.make_node("If", ["has"], ["start"], then_branch=then_b, else_branch=else_b),
            helper.make_node("SequenceInsert", ["start", "y"], ["seq_out"]),
        ]
    else:
        nodes.append(helper.make_node("SequenceInsert", ["seq_in", "y"], ["seq_out"]))
    body = helper.make_graph(
        nodes,
        "body",
        [
            helper.make_tensor_value_info("i", I64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_value_info("seq_in", carried_type),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_value_info("seq_out", _seq_type(F, [2])),
        ],
    )
    return _model(
        [helper.make_node("Loop", ["trips", "", "seq"], ["out"], body=body)],
        [
            helper.make_tensor_value_info("trips", I64, []),
            helper.make_value_info("seq", carried_type),
            helper.make_tensor_value_info("x", F, [2]),
        ],
        [helper.make_value_info("out", _seq_type(F, [2]))],
    )


def test_loop_carrying_a_sequence_input(tmp_path: Path) -> None:
    case = _Case(_loop_append_model(False), tmp_path, "loop_sequence")
    assert "seq: list[Tensor]" in case.source
    rng = np.random.default_rng(8)
    for start, trips in ((0, 0), (0, 3), (2, 1), (3, 4)):
        seq = [rng.standard_normal(2).astype(np.float32) for _ in range(start)]
        (out,) = case.check(np.array(trips, np.int64), seq, rng.standard_normal(2).astype(np.float32))
        assert len(out) == start + trips


def test_loop_carrying_an_optional_sequence(tmp_path: Path) -> None:
    """The body reads the optional with ``is not None`` each iteration: absent at the start, a list after."""
    case = _Case(_loop_append_model(True), tmp_path, "loop_optional")
    assert "seq: list[Tensor] | None" in case.source
    rng = np.random.default_rng(9)
    x = rng.standard_normal(2).astype(np.float32)
    for start, trips in ((None, 1), (None, 3), (0, 2), (2, 3)):
        seq = None if start is None else [rng.standard_normal(2).astype(np.float32) for _ in range(start)]
        (out,) = case.check(np.array(trips, np.int64), seq, x)
        assert len(out) == (start or 0) + trips
    dev = case.dev  # no iteration: the start comes back, None included, as load_model gives it
    assert case.net(Tensor.from_data(np.array(0), dev), None, Tensor.from_data(x, dev)) is None
    assert case.runtime(Tensor.from_data(np.array(0), dev), None, Tensor.from_data(x, dev)) is None
