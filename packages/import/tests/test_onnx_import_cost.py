"""``load_model``'s work grows linearly with the graph (issue 30; issue 28 fixed a parser that took 436 s on
100k nodes). No clock: the work is counted, deterministically, as Python function calls and C-function calls
(``sys.setprofile`` events, every module, ``onnx`` included) plus bytecode instructions executed in
``ember_import``'s own frames (``sys.settrace`` opcode events). Doubling the nodes must cost less than 2.4x the
count; a loop over earlier nodes per node (the quadratic pattern) makes the ratio approach 4.

What the counter cannot see: work inside one C call (a container copied per node). The benchmark
``bench/onnx_import.py`` times 10k-100k-node loads for that."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from _onnx_graphs import NODES_PER_BLOCK, blocks, blocks_reference  # noqa: E402
from ember import Tensor  # noqa: E402
from ember_import.onnx import load_model  # noqa: E402
from ember_import.onnx.conformance._runner import backend_device  # noqa: E402

#: blocks of the smaller graph (x14 nodes); the larger one has twice as many
BLOCKS = 100


def _work(fn: Callable[[], Any]) -> int:
    """Calls, C calls and ``ember_import`` bytecode instructions executed by ``fn()``."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        count += 1

    def local(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        count += 1
        return local

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if "ember_import" in frame.f_code.co_filename:
            frame.f_trace_opcodes = True
            return local
        return None

    old_trace, old_profile = sys.gettrace(), sys.getprofile()
    sys.setprofile(profile)
    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(old_trace)
        sys.setprofile(old_profile)
    return count


def test_blocks_model_is_correct() -> None:
    """The graph the guard loads runs and equals its numpy formula (so the guard measures a real import)."""
    model = blocks(4)
    assert len(model.graph.node) == 4 * NODES_PER_BLOCK
    dev = backend_device("numpy")
    m = load_model(model, dev)
    x = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_allclose(m(Tensor.from_data(x, dev)).to_numpy(), blocks_reference(x, model), rtol=1e-6)
    # folding took the constant parts, the dynamic reshape kept only what reads the batch, dead nodes went
    ops = {n.op_type for n in m.program.graph.nodes}
    assert ops == {"Add", "Relu", "Shape", "Gather", "Unsqueeze", "Concat", "Reshape", "Mul", "Flatten", "If"}


def test_import_work_grows_linearly_with_nodes() -> None:
    dev = backend_device("numpy")
    small, large = blocks(BLOCKS).SerializeToString(), blocks(2 * BLOCKS).SerializeToString()
    load_model(small, dev)  # imports, registries and caches: once, outside the counts
    w1 = _work(lambda: load_model(small, dev))
    w2 = _work(lambda: load_model(large, dev))
    assert w1 > 100 * BLOCKS * NODES_PER_BLOCK  # the counter sees the import's work
    assert w2 < 2.4 * w1, f"doubling the nodes multiplied the import's work by {w2 / w1:.2f}"


def test_shape_inference_is_skipped_above_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """onnx's shape inference copies the outer scope into every sub-graph (O(If nodes x values)); above the
    budget the model imports without it, and still runs right (its shapes are then computed when it runs)."""
    from ember_import.onnx import _parse

    model = blocks(6)
    n, ifs = len(model.graph.node), 6
    assert _parse.inference_cost(model.graph) == n + ifs * (n + 1 + len(model.graph.initializer))
    dev = backend_device("numpy")
    x = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    with_inference = load_model(model, dev)
    monkeypatch.setattr(_parse, "INFERENCE_BUDGET", 0)
    without = load_model(model, dev)
    for m in (with_inference, without):
        np.testing.assert_allclose(m(Tensor.from_data(x, dev)).to_numpy(), blocks_reference(x, model), rtol=1e-6)
    # without inference, an intermediate value has no type at import (the declared input and output keep theirs)
    assert with_inference.program.graph.value_info["b0_h"].shape == ("batch", 8)
    assert "b0_h" not in without.program.graph.value_info
    assert without.program.graph.value_info["y"].shape == ("batch", 8)


def test_value_infos_converted_when_read_behave_as_a_dict() -> None:
    """The parser converts an inferred value type only when it is read (most are never read); the mapping still
    answers like the dict of them all, and copies as one."""
    import copy

    from ember_import.onnx._parse import read_model

    model = blocks(2)
    infos = read_model(model).graph.value_info
    inferred = onnx.shape_inference.infer_shapes(model).graph
    names = [v.name for v in inferred.value_info] + [v.name for v in (*model.graph.input, *model.graph.output)]
    assert list(infos) == list(dict.fromkeys(names)) and len(infos) == len(set(names))
    assert infos["b0_h"].shape == ("batch", 8) and infos.get("no such value") is None
    assert "b1_f" in infos and "no such value" not in infos
    copied = copy.deepcopy(infos)
    assert type(copied) is dict and copied == dict(infos.items())
