"""Module trees: construction, immutability, replace, visit/map, counts, devices, repr, records in memory."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import ember
from ember import Int, RecordError, ShapeError, Tensor, TensorData
from ember.module import (
    LoadReport,
    Module,
    ModuleMapper,
    ModuleVisitor,
    Param,
    ParamId,
    RunningState,
    ad_enabled,
)

DEV = ember.backend("numpy").device()


def t(values, device=DEV, kind=None):
    return Tensor.from_data(np.asarray(values), device, kind)


class Linear(Module):
    weight: Param
    bias: Param | None = None


class Conv(Module):
    kernel: Param


class BatchNorm(Module):
    gamma: Param
    running_mean: RunningState
    momentum: float = 0.1


class Net(Module):
    layers: list[Linear]
    head: Linear | Conv  # a union ("enum") module field
    norm: BatchNorm | None = None
    blocks: dict[str, Linear] = dataclasses.field(default_factory=dict)
    pair: tuple[Linear, ...] = ()
    table: Param | None = None
    mask: Tensor | None = None  # a constant tensor, not a parameter
    activation: str = "relu"  # a plain value


def linear(i: int, o: int, seed: int, bias: bool = True) -> Linear:
    rng = np.random.default_rng(seed)
    w = Param(t(rng.standard_normal((i, o)).astype(np.float32)))
    b = Param(t(rng.standard_normal(o).astype(np.float32))) if bias else None
    return Linear(weight=w, bias=b)


def make_net() -> Net:
    return Net(
        layers=[linear(3, 4, 0), linear(4, 4, 1, bias=False)],
        head=Conv(kernel=Param(t(np.ones((2, 2, 3), np.float32)))),
        norm=BatchNorm(gamma=Param(t(np.ones(4, np.float32))), running_mean=RunningState(t(np.zeros(4, np.float32)))),
        blocks={"a": linear(2, 2, 2)},
        pair=(linear(1, 2, 3),),
        table=Param(t(np.arange(6).reshape(2, 3)), require_grad=False),
        mask=t(np.ones(5, np.float32)),
    )


# ---------------------------------------------------------------------------------------- structure
def test_construct_with_keywords_and_defaults():
    lin = Linear(weight=Param(t([[1.0, 2.0]])))
    assert lin.bias is None
    with pytest.raises(TypeError):
        Linear(Param(t([[1.0]])))  # keyword-only


def test_fields_are_immutable():
    net = make_net()
    with pytest.raises(dataclasses.FrozenInstanceError, match="replace"):
        net.activation = "gelu"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del net.activation
    p = net.layers[0].weight
    with pytest.raises(AttributeError):
        p.require_grad = False  # type: ignore[misc]


def test_replace_returns_new_module_and_keeps_original():
    net = make_net()
    new_head = linear(4, 2, 9)
    net2 = net.replace(head=new_head, activation="gelu")
    assert net2 is not net
    assert net.activation == "relu" and isinstance(net.head, Conv)
    assert net2.activation == "gelu" and net2.head is new_head
    assert net2.layers is net.layers  # unchanged fields are shared, not copied
    with pytest.raises(TypeError, match="no field named 'nope'"):
        net.replace(nope=1)


def test_custom_init_may_assign_fields():
    class Scaled(Module):
        weight: Param
        scale: float

        def __init__(self, d: int, scale: float) -> None:
            self.weight = Param(Tensor.ones([d], DEV))
            self.scale = scale

    m = Scaled(3, 2.0)
    assert m.num_params() == 3 and m.scale == 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.scale = 1.0  # type: ignore[misc]
    m2 = m.map(lambda p: p.map(lambda x: x * 2.0))
    assert isinstance(m2, Scaled) and m2.weight.val().to_numpy().tolist() == [2.0, 2.0, 2.0]


def test_named_params_paths_cover_lists_dicts_tuples_optionals():
    net = make_net()
    paths = [p for p, _ in net.named_params()]
    assert paths == [
        "layers.0.weight", "layers.0.bias", "layers.1.weight", "head.kernel", "norm.gamma",
        "blocks.a.weight", "blocks.a.bias", "pair.0.weight", "pair.0.bias", "table",
    ]
    assert [p for p, _ in net.running_states()] == ["norm.running_mean"]


def test_num_params_counts_params_only():
    net = make_net()
    # hand count: layers 3*4+4 + 4*4; head 12; norm gamma 4; blocks 2*2+2; pair 1*2+2; table 6
    assert net.num_params() == 16 + 16 + 12 + 4 + 6 + 4 + 6
    assert Linear(weight=Param(Tensor.zeros([0, 3], DEV))).num_params() == 0


def test_visit_callable_and_visitor_class():
    net = make_net()
    seen = []
    net.visit(lambda p: seen.append(p.id))
    assert seen == [p.id for p in net.params()]
    assert len(set(seen)) == len(seen)

    class Collect(ModuleVisitor):
        def __init__(self):
            self.events = []

        def visit_float(self, path, param):
            self.events.append(("float", path))

        def visit_int(self, path, param):
            self.events.append(("int", path))

        def visit_running_state(self, path, state):
            self.events.append(("state", path))

        def enter_module(self, path, module):
            self.events.append(("enter", type(module).__name__))

    v = Collect()
    net.visit(v)
    assert ("int", "table") in v.events
    assert ("state", "norm.running_mean") in v.events
    assert v.events[0] == ("enter", "Net")
    assert v.events.index(("enter", "BatchNorm")) < v.events.index(("float", "norm.gamma"))


def test_map_rewrites_params_keeps_ids_and_original():
    net = make_net()
    before = {p: prm.val().to_numpy().copy() for p, prm in net.named_params()}

    def double(p):
        return p.map(lambda x: x * 2) if p.kind is not Int else p

    net2 = net.map(double)
    for (path, p_old), (path2, p_new) in zip(net.named_params(), net2.named_params()):
        assert path == path2 and p_old.id == p_new.id
        np.testing.assert_array_equal(p_old.val().to_numpy(), before[path])  # original untouched
        factor = 1 if p_old.kind is Int else 2
        np.testing.assert_allclose(p_new.val().to_numpy(), before[path] * factor)
    assert net2.running_states()[0][1] is net.running_states()[0][1]  # plain mappers skip states
    assert net2.mask is net.mask and net2.activation == "relu"

    with pytest.raises(TypeError, match="expected a Param"):
        net.map(lambda p: p.val())


def test_map_with_mapper_class_dispatches_on_kind():
    class ZeroFloats(ModuleMapper):
        def map_float(self, path, param):
            return param.with_val(param.val().zeros_like() if hasattr(param.val(), "zeros_like")
                                  else param.val() * 0.0)

        def map_running_state(self, path, state):
            return state.with_value(state.value() + 1.0)

    net = make_net().map(ZeroFloats())
    assert all(np.all(p.val().to_numpy() == 0) for p in net.params() if p.kind is not Int)
    np.testing.assert_array_equal(net.table.val().to_numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(net.norm.running_mean.value().to_numpy(), np.ones(4))


def test_no_grad_sets_flag_and_keeps_ids():
    net = make_net()
    frozen = net.no_grad()
    assert all(not p.require_grad for p in frozen.params())
    assert [p.id for p in frozen.params()] == [p.id for p in net.params()]
    assert net.layers[0].weight.require_grad


def test_devices_and_to_device_same_backend():
    net = make_net()
    assert net.devices() == [DEV]
    moved = net.to_device(DEV)
    assert [p.id for p in moved.params()] == [p.id for p in net.params()]


def test_to_device_across_backends():
    if "torch" not in [b.name for b in ember.backends() if b.status == "ok"]:
        pytest.skip("torch backend not installed")
    tdev = ember.backend("torch").device()
    net = make_net()
    moved = net.to_device(tdev)
    assert moved.devices() == [tdev]
    for (_, a), (_, b) in zip(net.named_params(), moved.named_params()):
        assert a.id == b.id
        np.testing.assert_array_equal(a.val().to_numpy(), b.val().to_numpy())
    forked = net.fork(tdev)
    assert forked.devices() == [tdev]


def test_valid_on_plain_backend_is_equivalent():
    net = make_net()
    v = net.valid()
    assert v.devices() == [DEV]
    assert [p.id for p in v.params()] == [p.id for p in net.params()]


def test_repr_shows_tree_shapes_and_counts():
    text = repr(make_net())
    assert text.startswith("Net {")
    assert "weight: Param[[3, 4], float32]" in text
    assert "table: Param[[2, 3], int64, Int, no_grad]" in text
    assert "running_mean: RunningState[[4], float32]" in text
    assert "mask: Tensor[[5], float32, constant]" in text
    assert "activation: 'relu'" in text
    assert "params: 64" in text.splitlines()[-2]
    assert "0: Linear {" in text


# ---------------------------------------------------------------------------------------- params
def test_param_id_random_stable_serializable():
    ids = {ParamId() for _ in range(1000)}
    assert len(ids) == 1000
    pid = ParamId()
    s = pid.serialize()
    assert s.isdigit() and ParamId.deserialize(s) == pid and 0 <= pid.value < 2**64
    assert ParamId("abcdef") == ParamId("abcdef")  # legacy ids hash deterministically
    assert ParamId("abcdef") != ParamId("abcdeg")
    with pytest.raises(ValueError):
        ParamId(2**64)
    import pickle

    assert pickle.loads(pickle.dumps(pid)) == pid


def test_param_accessors():
    p = Param(t(np.zeros((2, 3), np.float32)), id=ParamId(7))
    assert p.id == ParamId(7) and p.shape == (2, 3) and p.num_params() == 6 and p.val() is p.val()
    q = p.with_val(t(np.ones((2, 3), np.float32)))
    assert q.id == p.id and q.require_grad
    with pytest.raises(TypeError):
        Param(np.zeros(3))  # type: ignore[arg-type]


def test_running_state_update_and_with_value():
    s = RunningState(t(np.zeros(3, np.float32)))
    s2 = s.with_value(t(np.ones(3, np.float32)))
    assert s2.id == s.id and s.value().to_numpy().tolist() == [0, 0, 0]
    s.update(t(np.full(3, 5.0, np.float32)))
    assert s.value().to_numpy().tolist() == [5, 5, 5]
    with pytest.raises(ShapeError):
        s.update(t(np.zeros(4, np.float32)))


def test_ad_enabled_false_on_plain_backend():
    assert not ad_enabled(t([1.0]))
    assert not ad_enabled(DEV)


# ---------------------------------------------------------------------------------------- records in memory
def test_into_record_mirrors_the_tree():
    net = make_net()
    rec = net.into_record()
    assert set(rec) == {"layers", "head", "norm", "blocks", "pair", "table"}
    assert isinstance(rec["layers"], list) and len(rec["layers"]) == 2
    assert rec["layers"][1] == {"weight": rec["layers"][1]["weight"], "bias": None}
    w = rec["layers"][0]["weight"]
    assert set(w) == {"id", "param"} and w["id"] == net.layers[0].weight.id
    assert isinstance(w["param"], TensorData) and w["param"].shape == (3, 4)
    assert rec["norm"]["running_mean"]["id"] == net.norm.running_mean.id
    assert "activation" not in rec and "mask" not in rec


def test_load_record_roundtrip_takes_values_and_ids():
    src, dst = make_net(), make_net().map(lambda p: p.map(lambda x: x * 0))
    dst = dst.replace(norm=dst.norm.replace(running_mean=RunningState(t(np.full(4, 3.0, np.float32)))))
    out = dst.load_record(src.into_record())
    for (_, a), (_, b) in zip(src.named_params(), out.named_params()):
        assert a.id == b.id
        np.testing.assert_array_equal(a.val().to_numpy(), b.val().to_numpy())
        assert a.kind is b.kind
    np.testing.assert_array_equal(out.norm.running_mean.value().to_numpy(), np.zeros(4))
    assert out.norm.running_mean.id == src.norm.running_mean.id


def test_load_record_strict_lists_every_mismatch():
    net = make_net()
    rec = net.into_record()
    del rec["layers"][0]["bias"]
    rec["head"]["kernel"]["param"] = TensorData(np.zeros((9,), np.float32))
    rec["extra"] = {"w": {"id": ParamId(), "param": TensorData([1.0])}}
    rec["blocks"]["b"] = {"weight": TensorData([1.0])}
    with pytest.raises(RecordError) as err:
        net.load_record(rec)
    msg = str(err.value)
    for needle in ("layers.0.bias", "head.kernel", "[9]", "[2, 2, 3]", "extra.w", "blocks.b.weight"):
        assert needle in msg


def test_load_record_non_strict_loads_what_fits():
    net = make_net()
    rec = make_net().into_record()
    rec["layers"][0]["weight"]["param"] = TensorData(np.zeros((5, 5), np.float32))
    del rec["pair"]
    out, report = net.load_record(rec, strict=False)
    assert isinstance(report, LoadReport) and not report.ok
    assert report.missing == ["pair.0.weight", "pair.0.bias"]
    assert [p for p, _ in report.mismatched] == ["layers.0.weight"]
    np.testing.assert_array_equal(out.layers[0].weight.val().to_numpy(), net.layers[0].weight.val().to_numpy())
    np.testing.assert_array_equal(out.head.kernel.val().to_numpy(), np.ones((2, 2, 3)))


def test_load_record_accepts_bare_tensors_and_index_dicts():
    net = Net(layers=[linear(2, 2, 0), linear(2, 2, 1)], head=linear(2, 1, 2))
    w = np.arange(4, dtype=np.float64).reshape(2, 2)
    rec = {
        "layers": {"0": {"weight": w, "bias": np.zeros(2)}, "1": {"weight": w, "bias": np.ones(2)}},
        "head": {"weight": np.ones((2, 1)), "bias": np.zeros(1)},
        "norm": None, "blocks": {}, "pair": [], "table": None,
    }
    out = net.load_record(rec)
    np.testing.assert_array_equal(out.layers[1].weight.val().to_numpy(), w.astype(np.float32))
    assert out.layers[1].weight.val().dtype.value == "float32"
    assert out.layers[0].weight.id == net.layers[0].weight.id  # bare tensors keep the module's id


def test_load_record_converts_kind_and_dtype():
    class M(Module):
        ids: Param

    m = M(ids=Param(t(np.array([1, 2, 3])), require_grad=False))
    out = m.load_record({"ids": {"id": ParamId(1), "param": TensorData(np.array([4, 5, 6], np.int16))}})
    assert out.ids.kind is Int and out.ids.val().to_numpy().tolist() == [4, 5, 6]
    assert out.ids.val().dtype.value == "int64"


def test_pickle_and_deepcopy_round_trip():
    import copy
    import pickle

    net = make_net()
    for clone in (pickle.loads(pickle.dumps(net)), copy.deepcopy(net)):
        assert type(clone) is Net and clone is not net
        assert [p.id for p in clone.params()] == [p.id for p in net.params()]
        for (_, a), (_, b) in zip(net.named_params(), clone.named_params()):
            np.testing.assert_array_equal(a.val().to_numpy(), b.val().to_numpy())
        with pytest.raises(dataclasses.FrozenInstanceError):
            clone.activation = "x"  # type: ignore[misc]


def test_unit_module_repr_and_record():
    class Relu(Module):
        pass

    class Block(Module):
        act: Relu
        lin: Linear

    b = Block(act=Relu(), lin=linear(2, 2, 0))
    assert repr(Relu()) == "Relu" and "act: Relu\n" in repr(b)
    assert b.into_record()["act"] == {} and Relu().num_params() == 0 and Relu().devices() == []


# ---------------------------------------------------------------------------- calling a module
def test_calling_a_module_calls_its_forward_with_every_argument():
    class Scale(Module):
        factor: float = 2.0

        def forward(self, x, *, offset=0.0):
            return x * self.factor + offset

    class Triple(Scale):  # overrides forward only: the call follows the override
        def forward(self, x, *, offset=0.0):
            return x * 3.0 + offset

    x = t([1.0, 2.0])
    np.testing.assert_allclose(Scale()(x, offset=1.0).to_numpy(), [3.0, 5.0])
    np.testing.assert_allclose(Triple()(x).to_numpy(), [3.0, 6.0])


def test_a_module_that_defines_call_keeps_it_and_one_without_forward_says_so():
    class Custom(Module):
        def forward(self, x):
            return x

        def __call__(self, x):
            return "custom"

    class NoForward(Module):
        pass

    class CustomChild(Custom):  # a subclass of a class with its own __call__ keeps that __call__
        def forward(self, x):
            return x * 2.0

    assert Custom()(t([1.0])) == "custom"
    assert CustomChild()(t([1.0])) == "custom"
    with pytest.raises(AttributeError, match="forward"):
        NoForward()(t([1.0]))
    NoForward.forward = lambda self, x: x + 1.0  # a forward added later is served by Module.__call__
    np.testing.assert_allclose(NoForward()(t([1.0])).to_numpy(), [2.0])


def test_calling_a_module_costs_no_frame_over_forward():
    """A class that defines ``forward`` gets it as its ``__call__`` (no ``*args`` frame on every layer call)."""
    from ember import nn

    class Model(Module):
        def forward(self, x):
            return x

    class Sub(Model):
        def forward(self, x):
            return x

    assert Model.__call__ is Model.__dict__["forward"] and Sub.__call__ is Sub.__dict__["forward"]
    assert nn.Linear.__call__ is nn.Linear.forward and nn.Conv2d.__call__ is nn.Conv2d.forward


def test_layers_define_forward_only():
    """``Module`` serves every layer's call: no ``__call__ = forward`` line is left in ``ember.nn``."""
    from pathlib import Path

    from ember import nn

    sources = sorted(Path(nn.__file__).parent.rglob("*.py"))
    assert len(sources) > 30
    assert [p.name for p in sources if "__call__ = forward" in p.read_text(encoding="utf-8")] == []
