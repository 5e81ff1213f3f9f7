"""@config: fields, with_<field>, validation, JSON save/load, nested configs."""

from __future__ import annotations

import enum
import json
from typing import Literal, Optional

import pytest

import ember
from ember import ConfigError
from ember.config import config, is_config


class Activation(enum.Enum):
    RELU = "relu"
    GELU = "gelu"


@config
class LinearConfig:
    d_input: int
    d_output: int
    bias: bool = True
    init_scale: float = 1.0


@config
class MlpConfig:
    layers: list[LinearConfig]
    dropout: float = 0.1
    activation: Activation = Activation.RELU
    head: Optional[LinearConfig] = None  # noqa: UP045 - typing.Optional spelled on purpose
    sizes: tuple[int, ...] = (1, 2)
    names: Optional[dict[str, int]] = None  # noqa: UP045
    mode: Literal["train", "eval"] = "train"


def test_required_then_defaults_positional_or_keyword():
    a = LinearConfig(784, 128)
    b = LinearConfig(d_input=784, d_output=128, bias=True)
    assert a == b and a.bias is True and a.init_scale == 1.0
    assert is_config(a) and is_config(LinearConfig) and not is_config(3)
    with pytest.raises(TypeError):
        LinearConfig(784)  # missing required field


def test_with_methods_return_new_config():
    a = LinearConfig(4, 2)
    b = a.with_bias(False).with_d_output(8)
    assert (a.bias, a.d_output) == (True, 2)
    assert (b.bias, b.d_output, b.d_input) == (False, 8, 4)
    for f in ("d_input", "d_output", "bias", "init_scale"):
        assert callable(getattr(a, f"with_{f}"))
    with pytest.raises(ConfigError, match="LinearConfig.bias"):
        a.with_bias("no")


def test_frozen():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        LinearConfig(1, 2).bias = False  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"d_input": "784", "d_output": 1}, "d_input"),
        ({"d_input": 1, "d_output": 2.5}, "d_output"),
        ({"d_input": True, "d_output": 1}, "d_input"),  # bool is not an int here
        ({"d_input": 1, "d_output": 1, "bias": 1}, "bias"),
        ({"d_input": 1, "d_output": 1, "init_scale": "x"}, "init_scale"),
    ],
)
def test_wrong_type_on_construction_names_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=f"LinearConfig.{field}"):
        LinearConfig(**kwargs)


def test_int_accepted_for_float():
    c = LinearConfig(1, 2, init_scale=2)
    assert c.init_scale == 2.0 and isinstance(c.init_scale, float)


def test_nested_round_trip_through_json(tmp_path):
    cfg = MlpConfig(
        layers=[LinearConfig(4, 8), LinearConfig(8, 2, bias=False)],
        activation=Activation.GELU, head=LinearConfig(2, 1), sizes=(3, 4), names={"a": 1}, mode="eval",
    )
    path = cfg.save(tmp_path / "mlp.json")
    raw = json.loads(path.read_text())
    assert raw["layers"][1] == {"d_input": 8, "d_output": 2, "bias": False, "init_scale": 1.0}
    assert raw["activation"] == "gelu" and raw["sizes"] == [3, 4]
    back = MlpConfig.load(path)
    assert back == cfg
    assert isinstance(back.layers[0], LinearConfig) and back.sizes == (3, 4)
    assert back.activation is Activation.GELU
    assert MlpConfig.from_dict(cfg.to_dict()) == cfg
    assert [p.name for p in tmp_path.iterdir()] == ["mlp.json"]  # atomic write leaves no temp file


def test_load_rejects_unknown_key(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"d_input": 1, "d_output": 2, "biass": False}))
    with pytest.raises(ConfigError, match="unknown field 'biass'"):
        LinearConfig.load(p)


def test_load_rejects_wrong_type_in_nested_field(tmp_path):
    p = tmp_path / "c.json"
    p.write_text(json.dumps({"layers": [{"d_input": 1, "d_output": "two"}]}))
    with pytest.raises(ConfigError, match=r"layers\[0\]\.d_output"):
        MlpConfig.load(p)


def test_load_rejects_missing_required_and_bad_enum_and_literal():
    with pytest.raises(ConfigError, match="missing required field 'd_output'"):
        LinearConfig.from_dict({"d_input": 1})
    with pytest.raises(ConfigError, match="activation"):
        MlpConfig.from_dict({"layers": [], "activation": "swish"})
    with pytest.raises(ConfigError, match="mode"):
        MlpConfig.from_dict({"layers": [], "mode": "test"})
    with pytest.raises(ConfigError, match="expected a JSON object"):
        LinearConfig.from_dict([1, 2])  # type: ignore[arg-type]


def test_load_invalid_json_and_missing_file(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        LinearConfig.load(p)
    with pytest.raises(FileNotFoundError):
        LinearConfig.load(tmp_path / "missing.json")


def test_required_after_default_is_a_config_error():
    with pytest.raises(ConfigError, match="required fields before defaulted"):
        @config
        class Bad:
            a: int = 1
            b: int


def test_user_post_init_runs_after_checks():
    @config
    class Positive:
        n: int

        def __post_init__(self):
            if self.n <= 0:
                raise ConfigError(f"Positive.n: expected > 0, got {self.n}")

    assert Positive(3).n == 3
    with pytest.raises(ConfigError, match="expected > 0"):
        Positive(0)
    with pytest.raises(ConfigError, match="Positive.n: expected int"):
        Positive("a")


def test_exported_from_ember():
    assert ember.config is config


def test_none_for_non_optional_field_is_rejected():
    with pytest.raises(ConfigError, match="LinearConfig.d_input: expected int, got NoneType"):
        LinearConfig(None, 2)  # type: ignore[arg-type]
