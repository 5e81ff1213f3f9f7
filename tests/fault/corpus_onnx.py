"""The fault suite's ONNX corpus (issue 28): hostile and malformed ``.onnx`` files, and benign ones that load exactly.

``cases(full)`` builds every file in memory with ``onnx.helper`` (nothing is downloaded). Each case is loaded by
:func:`load` in the runner's child process: ``ember_import.onnx.load_model`` on the numpy backend, then one
forward on inputs of the declared shapes (symbolic and unknown dims take 2) filled with deterministic values.
Hostile files must end in an ``OnnxImportError`` (an ``EmberError``) whose message names the file; benign ones
load, run, and :func:`check_onnxruntime` compares the outputs with onnxruntime's on the same inputs
(:func:`check_chain` recomputes the long chains with numpy).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._case import Case

__all__ = ["cases", "chain", "check_chain", "check_onnxruntime", "load"]

LOADER = "tests.fault.corpus_onnx:load"
CHECK = "tests.fault.corpus_onnx:check_onnxruntime"
MEMORY_MIB = 2048


# ---------------------------------------------------------------------------------------------- the child side
def _inputs(path: str) -> dict[str, np.ndarray]:
    import onnx
    from onnx import helper

    model = onnx.load(path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    for k, v in enumerate(i for i in model.graph.input if i.name not in initializers):
        tt = v.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else 2 for d in tt.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tt.elem_type)
        n = int(np.prod(shape, dtype=np.int64))
        values = (np.arange(n, dtype=np.float64) * 0.37 + k) % 5 - 2.5
        feeds[v.name] = values.astype(dtype).reshape(shape)
    return feeds


def load(path: str) -> dict[str, Any]:
    """Import ``path`` on Ember's numpy backend and run it once on declared-shape inputs.

    Returns ``{"path", "inputs", "outputs"}`` (numpy arrays) for the check.
    """
    import ember
    from ember import Tensor
    from ember_import.onnx import load_model

    device = ember.backend("numpy").device()
    model = load_model(path, device)
    feeds = _inputs(path)
    args = [Tensor.from_data(feeds[name], device) for name in model.input_names]
    out = model(*args)
    outs = list(out) if isinstance(out, tuple) else [out]
    return {"path": path, "inputs": feeds, "outputs": [np.asarray(o.to_data().to_numpy()) for o in outs]}


def check_onnxruntime(loaded: dict[str, Any]) -> None:
    """The outputs agree with onnxruntime's on the same inputs (float32 tolerance)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(loaded["path"], opts, providers=["CPUExecutionProvider"])
    want = sess.run(None, loaded["inputs"])
    assert len(want) == len(loaded["outputs"]), (len(want), len(loaded["outputs"]))
    for w, h in zip(want, loaded["outputs"]):
        assert list(w.shape) == list(h.shape), (w.shape, h.shape)
        np.testing.assert_allclose(h, w, rtol=1e-5, atol=1e-5)


def check_chain(loaded: dict[str, Any]) -> None:
    """The output of :func:`chain` recomputed with numpy in float32 (onnxruntime takes a minute on 100k nodes)."""
    import onnx

    graph = onnx.load(loaded["path"], load_external_data=False).graph
    c = onnx.numpy_helper.to_array(graph.initializer[0])
    x = loaded["inputs"]["x"]
    for node in graph.node:
        x = x + c if node.op_type == "Add" else np.maximum(x, np.float32(0))
    np.testing.assert_allclose(loaded["outputs"][0], x, rtol=1e-6, atol=0)


# ---------------------------------------------------------------------------------------------- the files
def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], inits: list[Any] = (),  # type: ignore[assignment]
           opset: int = 17, domains: tuple[tuple[str, int], ...] = ()) -> Any:
    from onnx import helper

    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    ops = [helper.make_opsetid("", opset), *(helper.make_opsetid(d, v) for d, v in domains)]
    model = helper.make_model(graph, opset_imports=ops)
    model.ir_version = 8
    return model


def _bytes(model: Any) -> bytes:
    return bytes(model.SerializeToString())


def _f(name: str, shape: list[Any] | None) -> Any:
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _i64(name: str, values: list[int]) -> Any:
    from onnx import TensorProto, helper

    return helper.make_tensor(name, TensorProto.INT64, [len(values)], values)


def _mlp() -> Any:
    from onnx import helper, numpy_helper

    rng = np.random.default_rng(28)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="mm1"),
        helper.make_node("Add", ["h", "b1"], ["hb"], name="add1"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w2"], ["z"], name="mm2"),
        helper.make_node("Softmax", ["z"], ["y"], name="softmax", axis=-1),
    ]
    return _model(nodes, [_f("x", ["batch", 8])], [_f("y", ["batch", 4])], [w1, b1, w2])


def _shape_arith() -> Any:
    """Shape -> Gather -> Concat -> Reshape, ConstantOfShape and Expand of a legitimate size (folded or run)."""
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="shape"),
        helper.make_node("Gather", ["s", "zero"], ["b"], name="gather", axis=0),
        helper.make_node("Concat", ["b", "minus1"], ["spec"], name="concat", axis=0),
        helper.make_node("Reshape", ["x", "spec"], ["flat"], name="reshape"),
        helper.make_node("ConstantOfShape", ["small"], ["ones"], name="cos",
                         value=helper.make_tensor("v", TensorProto.FLOAT, [1], [1.5])),
        helper.make_node("Expand", ["ones", "small"], ["ones2"], name="expand"),
        helper.make_node("ReduceSum", ["ones2"], ["total"], name="sum", keepdims=0),
        helper.make_node("Mul", ["flat", "total"], ["y"], name="mul"),
    ]
    inits = [_i64("zero", [0]), _i64("minus1", [-1]), _i64("small", [3, 4])]
    return _model(nodes, [_f("x", ["batch", 3, 4])], [_f("y", ["batch", 12])], inits)


def chain(n: int) -> Any:
    """An ``n``-node chain alternating ``Add`` (one shared ``[1, 8]`` initializer) and ``Relu``."""
    from onnx import helper, numpy_helper

    nodes, prev = [], "x"
    for i in range(n):
        out = f"v{i}" if i < n - 1 else "y"
        if i % 2 == 0:
            nodes.append(helper.make_node("Add", [prev, "c"], [out], name=f"add{i}"))
        else:
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"relu{i}"))
        prev = out
    c = numpy_helper.from_array(np.full((1, 8), 0.001, np.float32), "c")
    return _model(nodes, [_f("x", ["batch", 8])], [_f("y", ["batch", 8])], [c])


def _bomb(op: str, inputs: list[str], inits: list[Any], rank: int = 2, **attrs: Any) -> Any:
    from onnx import helper

    node = helper.make_node(op, inputs, ["y"], name="bomb", **attrs)
    return _model([node], [], [_f("y", [None] * rank)], inits)


def _bomb_on_input(op: str, extra: list[str], inits: list[Any], x_shape: list[Any], **attrs: Any) -> Any:
    """A bomb fed by the graph input: not folded at import, refused when the model runs."""
    from onnx import helper

    node = helper.make_node(op, ["x", *extra], ["y"], name="bomb", **attrs)
    return _model([node], [_f("x", x_shape)], [_f("y", [None] * len(x_shape))], inits)


def _raw_tensor(name: str, dims: list[int], raw: bytes) -> Any:
    """A float32 tensor with ``raw`` as its data whatever ``dims`` say (``make_tensor`` checks the size)."""
    from onnx import TensorProto

    t = TensorProto()
    t.name, t.data_type, t.raw_data = name, TensorProto.FLOAT, raw
    t.dims.extend(dims)
    return t


def _doublings(n: int) -> Any:
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Concat", [f"c{k}", f"c{k}"], [f"c{k + 1}"], name=f"cat{k}", axis=0) for k in range(n)]
    nodes.append(helper.make_node("Shape", [f"c{n}"], ["y"], name="shape"))
    return _model(nodes, [], [helper.make_tensor_value_info("y", TensorProto.INT64, [1])], [_i64("c0", [7])])


def _huge_initializer() -> Any:
    from onnx import helper

    t = _raw_tensor("w", [1 << 20, 1 << 20], b"\0" * 16)
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return _model([node], [_f("x", [1, 1])], [_f("y", [None, None])], [t])


def _short_raw() -> Any:
    from onnx import helper

    t = _raw_tensor("w", [4, 4], b"\0" * 60)  # 64 declared
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return _model([node], [_f("x", [4, 4])], [_f("y", [4, 4])], [t])


def _external(location: str, **extra: str) -> Any:
    from onnx import TensorProto, helper

    t = helper.make_tensor("w", TensorProto.FLOAT, [4], [0.0] * 4)
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for key, value in {"location": location, **extra}.items():
        entry = t.external_data.add()
        entry.key, entry.value = key, value
    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return _model([node], [_f("x", [4])], [_f("y", [4])], [t])


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes | str) -> bytes:
    """One length-delimited protobuf field (wire type 2)."""
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _nested_if(depth: int) -> bytes:
    """``If`` inside the then-branch of ``If``, ``depth`` deep, written as protobuf bytes by hand: the protobuf
    library refuses to build messages nested this deep (``MaxDepth``), but a file may hold them."""
    from onnx import AttributeProto, TensorProto, helper

    def graph(node: bytes, name: str, out: str) -> bytes:  # GraphProto: node=1, name=2, output=12
        return _field(1, node) + _field(2, name) + _field(12, _f(out, [2]).SerializeToString())

    def attr(name: str, g: bytes) -> bytes:  # AttributeProto: name=1, g=6, type=20
        return _field(1, name) + _field(6, g) + _varint(20 << 3) + _varint(AttributeProto.GRAPH)

    def out_name(level: int) -> str:
        return "y" if level == depth - 1 else f"v{level}"

    inner = b""
    for level in range(depth):
        then_node = inner or helper.make_node("Identity", ["x"], [f"i{level}"], name="id").SerializeToString()
        then_out = out_name(level - 1) if inner else f"i{level}"
        else_node = helper.make_node("Neg", ["x"], [f"e{level}"], name=f"neg{level}").SerializeToString()
        # NodeProto: input=1, output=2, name=3, op_type=4, attribute=5
        inner = (_field(1, "cond") + _field(2, out_name(level)) + _field(3, f"if{level}") + _field(4, "If")
                 + _field(5, attr("then_branch", graph(then_node, f"t{level}", then_out)))
                 + _field(5, attr("else_branch", graph(else_node, f"e{level}", f"e{level}"))))
    cond = helper.make_tensor_value_info("cond", TensorProto.BOOL, [])
    shell = _model([], [cond, _f("x", [2])], [_f("y", [2])])
    return _bytes(shell) + _field(7, _field(1, inner))  # a repeated field's later occurrence appends: graph.node


def _cycle() -> Any:
    from onnx import helper

    nodes = [
        helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
        helper.make_node("Relu", ["a"], ["b"], name="n2"),
        helper.make_node("Identity", ["b"], ["y"], name="n3"),
    ]
    return _model(nodes, [_f("x", [2])], [_f("y", [2])])


def _undefined_input() -> Any:
    from onnx import helper

    return _model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")], [_f("x", [2])], [_f("y", [2])])


def _duplicate_outputs() -> Any:
    from onnx import helper

    nodes = [helper.make_node("Relu", ["x"], ["y"], name="r1"), helper.make_node("Neg", ["x"], ["y"], name="r2")]
    return _model(nodes, [_f("x", [2])], [_f("y", [2])])


def _unknown_op(domain: str = "") -> Any:
    from onnx import helper

    node = helper.make_node("FrobnicateAll", ["x"], ["y"], name="frob", domain=domain)
    return _model([node], [_f("x", [2])], [_f("y", [2])], domains=((domain, 1),) if domain else ())


def _opset(version: int) -> Any:
    from onnx import helper

    return _model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [_f("x", [2])], [_f("y", [2])],
                  opset=version)


def _constant_attr_huge() -> Any:
    from onnx import helper

    node = helper.make_node("Constant", [], ["y"], name="const")
    node.attribute.add().CopyFrom(helper.make_attribute("value", _raw_tensor("v", [1 << 20, 1 << 20], b"\0" * 8)))
    return _model([node], [], [_f("y", [None, None])])


def _bomb_in_if() -> Any:
    """ConstantOfShape inside an ``If`` branch: sub-graphs are not folded, so the run refuses it."""
    from onnx import TensorProto, helper

    big = helper.make_graph([helper.make_node("ConstantOfShape", ["shape"], ["o"], name="bomb")], "then", [],
                            [_f("o", [None, None])], initializer=[_i64("shape", [1 << 20, 1 << 20])])
    small = helper.make_graph([helper.make_node("ConstantOfShape", ["two"], ["p"], name="fine")], "else", [],
                              [_f("p", [None, None])], initializer=[_i64("two", [2, 2])])
    node = helper.make_node("If", ["cond"], ["y"], name="if", then_branch=big, else_branch=small)
    return _model([node], [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])], [_f("y", [None, None])])


def _recursive_function() -> Any:
    from onnx import helper

    f = helper.make_function("local", "F", ["a"], ["b"], [helper.make_node("F", ["a"], ["b"], domain="local")],
                             opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    model = _model([helper.make_node("F", ["x"], ["y"], domain="local", name="f")], [_f("x", [2])], [_f("y", [2])],
                   domains=(("local", 1),))
    model.functions.append(f)
    return model


def _string_initializer() -> Any:
    from onnx import TensorProto, helper

    t = helper.make_tensor("s", TensorProto.STRING, [2], [b"a", b"b"])
    node = helper.make_node("Identity", ["s"], ["y"], name="id")
    return _model([node], [], [helper.make_tensor_value_info("y", TensorProto.STRING, [2])], [t])


def _negative_dims() -> Any:
    from onnx import helper

    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return _model([node], [_f("x", [4])], [_f("y", [4])], [_raw_tensor("w", [-4, -1], b"\0" * 16)])


def _many_dims_initializer() -> Any:
    from onnx import helper

    node = helper.make_node("Add", ["x", "w"], ["y"], name="add")
    return _model([node], [_f("x", [1])], [_f("y", [1])], [_raw_tensor("w", [1] * 100_000, b"\0" * 4)])


def cases(full: bool) -> list[Case]:
    """The ONNX corpus; ``full`` adds the 100k-node chain (slow to build and load, about 10 s)."""
    from onnx import TensorProto, helper

    def err(name: str, model: Any | bytes, note: str, seconds: float = 60.0) -> Case:
        data = model if isinstance(model, bytes) else _bytes(model)
        return Case(f"onnx/{name}", f"{name}.onnx", data, LOADER, "error", None, MEMORY_MIB, seconds, note,
                    ("onnx",))

    def exact(name: str, model: Any | bytes, note: str, seconds: float = 60.0, check: str = CHECK) -> Case:
        data = model if isinstance(model, bytes) else _bytes(model)
        return Case(f"onnx/{name}", f"{name}.onnx", data, LOADER, "exact", check, MEMORY_MIB, seconds, note,
                    ("onnx",))

    big = [1 << 20, 1 << 20]
    one = helper.make_tensor("one", TensorProto.FLOAT, [1, 1], [1.0])
    mlp = _bytes(_mlp())
    out = [
        exact("mlp", _mlp(), "benign: MatMul/Add/Relu/Softmax with a symbolic batch, checked against onnxruntime"),
        exact("shape-arith", _shape_arith(),
              "benign: Shape/Gather/Concat/Reshape, a small ConstantOfShape/Expand (within the budget)"),
        exact("chain-2k", chain(2000), "benign: a 2000-node Add/Relu chain (a quadratic parser took seconds)",
              check="tests.fault.corpus_onnx:check_chain"),
        err("constantofshape-bomb", _bomb("ConstantOfShape", ["shape"], [_i64("shape", big)]),
            "ConstantOfShape [2**20, 2**20] (4 TiB): folded into a bare MemoryError at import"),
        err("expand-bomb", _bomb("Expand", ["one", "shape"], [one, _i64("shape", big)]),
            "Expand of a 1x1 constant to [2**20, 2**20]: a free broadcast view until folding stored it"),
        err("tile-bomb", _bomb("Tile", ["one", "reps"], [one, _i64("reps", big)]), "Tile of a 1x1 by [2**20, 2**20]"),
        err("range-bomb", _bomb("Range", ["a", "b", "d"], [
            helper.make_tensor("a", TensorProto.INT64, [], [0]),
            helper.make_tensor("b", TensorProto.INT64, [], [1 << 40]),
            helper.make_tensor("d", TensorProto.INT64, [], [1])], rank=1),
            "Range 0..2**40 (the converter builds a Python list of the values)"),
        err("onehot-bomb", _bomb("OneHot", ["idx", "depth", "vals"], [
            _i64("idx", [0, 1]), helper.make_tensor("depth", TensorProto.INT64, [], [1 << 40]),
            helper.make_tensor("vals", TensorProto.FLOAT, [2], [0.0, 1.0])]), "OneHot with depth 2**40"),
        err("pad-bomb", _bomb("Pad", ["one", "pads"], [one, _i64("pads", [0, 0, 1 << 20, 1 << 20])]),
            "Pad of a 1x1 by 2**20 per side"),
        err("resize-bomb", _bomb_on_input("Resize", ["", "", "sizes"], [_i64("sizes", [1, 1, 1 << 20, 1 << 20])],
                                          [1, 1, 2, 2], mode="nearest"),
            "Resize of the input to sizes [1, 1, 2**20, 2**20]: not folded, refused when the model runs"),
        err("expand-input-bomb", _bomb_on_input("Expand", ["shape"], [_i64("shape", big)], [1, 1]),
            "Expand of the input to [2**20, 2**20] at run time"),
        err("random-bomb", _model([helper.make_node("RandomNormal", [], ["y"], name="bomb", shape=big)], [],
                                  [_f("y", [None, None])]), "RandomNormal of shape [2**20, 2**20] (never folded)"),
        err("huge-initializer", _huge_initializer(), "an initializer declaring [2**20, 2**20] over 16 bytes of data"),
        err("short-raw-data", _short_raw(), "raw_data 60 bytes for a float32 [4, 4] initializer"),
        err("external-traversal", _external("../../../../../../etc/passwd"),
            "external data location ../../etc/passwd: must not leave the model's folder"),
        err("external-absolute", _external("/etc/passwd"), "external data at an absolute path"),
        err("external-missing", _external("weights.bin"), "external data file that is not there"),
        err("external-proc", _external("../../../../../../proc/self/environ"),
            "external data reading the process environment through a relative path"),
        err("truncated", mlp[: len(mlp) // 2], "the benign MLP cut in half"),
        err("truncated-tail", mlp[:-3], "the benign MLP less its last 3 bytes"),
        err("not-onnx", b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, "a PNG header and noise"),
        err("empty", b"", "an empty file"),
        err("nested-if-1000", _nested_if(1000), "If inside If, 1000 deep (recursive walks, protobuf depth)"),
        exact("nested-if-20", _nested_if(20), "benign: If inside If, 20 deep"),
        err("cycle", _cycle(), "a cycle: n1 reads n2's output, n2 reads n1's"),
        err("undefined-input", _undefined_input(), "a node reads a value nothing defines"),
        err("duplicate-outputs", _duplicate_outputs(), "two nodes write the same value (not SSA)"),
        err("unknown-op", _unknown_op(), "an operator ai.onnx does not define"),
        err("unknown-domain", _unknown_op("com.example.evil"), "an operator of a domain Ember does not know"),
        err("constant-attribute-huge", _constant_attr_huge(), "a Constant whose value declares [2**20, 2**20] over 8 "
            "bytes"),
        err("bomb-in-if", _bomb_in_if(), "ConstantOfShape [2**20, 2**20] in an If branch (not folded; refused at run)"),
        err("range-tiny-delta", _bomb("Range", ["a", "b", "d"], [
            helper.make_tensor("a", TensorProto.FLOAT, [], [0.0]),
            helper.make_tensor("b", TensorProto.FLOAT, [], [1.0]),
            helper.make_tensor("d", TensorProto.FLOAT, [], [1e-30])], rank=1), "Range 0..1 by 1e-30"),
        err("recursive-function", _recursive_function(), "a model-local function that calls itself"),
        err("string-initializer", _string_initializer(), "a string tensor (Ember has no string type)"),
        err("negative-dims", _negative_dims(), "an initializer with dims [-4, -1]"),
        err("many-dims-initializer", _many_dims_initializer(), "an initializer of rank 100000 (all dims 1)"),
        err("constantofshape-many-dims", _bomb("ConstantOfShape", ["shape"], [_i64("shape", [1] * 100_000)]),
            "ConstantOfShape to rank 100000 (one element; messages must not repeat the shape)"),
        err("opset-too-high", _opset(1000), "ai.onnx opset 1000"),
        err("opset-zero", _opset(0), "ai.onnx opset 0"),
    ]
    if full:
        out.append(err("concat-doublings", _doublings(40), "Concat(c, c) 40 times from one int64: each value within "
                       "the budget until the last ones, but folding keeps them all"))
        out.append(exact("chain-100k", chain(100_000), "a 100k-node chain: loaded in 436 s before issue 28 (6 s "
                         "after on an idle machine; the limit leaves room for a loaded one)", seconds=300.0,
                         check="tests.fault.corpus_onnx:check_chain"))
    return out
