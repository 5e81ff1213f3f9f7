"""LoadArgs: key remapping, top-level keys, contiguous indices, adapters and the debug print."""

from __future__ import annotations

import dataclasses
import struct
from pathlib import Path

import pytest

from _import_craft import num, state_dict, tensor, write_zip
from ember import TensorData
from ember_import import (
    Adapter,
    IdentityAdapter,
    LoadArgs,
    ModelImportError,
    TensorEntry,
    load_tensors,
    map_indices_contiguous,
    unflatten,
)


def _file(tmp_path: Path, keys: list[str], extra: dict[str, bytes] | None = None) -> Path:
    """A zip .pt whose tensor ``i`` (under ``keys[i]``) is ``[i]`` (float32), so values identify keys."""
    entries = {k: tensor(str(i), 1, 0, (1,), (1,)) for i, k in enumerate(keys)}
    entries.update(extra or {})
    return write_zip(tmp_path / "m.pt", state_dict(entries), {str(i): struct.pack("<f", i) for i in range(len(keys))})


def _values(result: object) -> dict[str, float]:
    return {k: v.to_list()[0] for k, v in result.tensors.items()}  # type: ignore[attr-defined]


def test_key_remap_in_order_and_repeatable(tmp_path: Path) -> None:
    path = _file(tmp_path, ["conv.conv1.weight", "conv.conv1.bias", "fc.weight"])
    args = (LoadArgs(path)
            .with_key_remap(r"conv\.(.*)", r"\1")          # conv.conv1.weight -> conv1.weight
            .with_key_remap(r"^conv1\.", "features.first.")  # applied to the result of the first rule
            .with_key_remap(r"weight$", "w"))
    result = load_tensors(args)
    assert _values(result) == {"features.first.w": 0.0, "features.first.bias": 1.0, "fc.w": 2.0}
    assert result.original_keys["features.first.w"] == "conv.conv1.weight"
    assert args.key_remap == ((r"conv\.(.*)", r"\1"), (r"^conv1\.", "features.first."), (r"weight$", "w"))


def test_burn_style_dollar_groups(tmp_path: Path) -> None:
    path = _file(tmp_path, ["block.a.weight"])
    result = load_tensors(LoadArgs(path).with_key_remap(r"^block\.(\w+)\.(?P<p>\w+)$", "${p}_$1"))
    assert _values(result) == {"weight_a": 0.0}


def test_invalid_pattern_reported() -> None:
    with pytest.raises(ModelImportError, match="not a valid regular expression"):
        LoadArgs("x.pt").with_key_remap("(unclosed", "x")
    with pytest.raises(ModelImportError, match="invalid"):
        LoadArgs("x.pt").with_key_remap("(a)", r"\2")


def test_collision_after_remap_names_both(tmp_path: Path) -> None:
    path = _file(tmp_path, ["enc.weight", "dec.weight"])
    with pytest.raises(ModelImportError, match=r"'dec.weight' and 'enc.weight' both map to 'weight'"):
        load_tensors(LoadArgs(path).with_key_remap(r"^\w+\.", ""))


def test_contiguous_indices_burn_behaviour(tmp_path: Path) -> None:
    """Burn's map_indices_contiguous: per original prefix, sorted numerically, renumbered from 0."""
    keys = ["fc.0.weight", "fc.0.bias", "fc.2.weight", "fc.2.bias", "fc.10.weight", "head.5.weight",
            "feature.layers.0.block.0.w", "feature.layers.0.block.2.w", "feature.layers.2.block.0.w",
            "feature.layers.2.block.3.w"]
    mapping = map_indices_contiguous(keys)
    assert mapping == {
        "fc.0.weight": "fc.0.weight", "fc.0.bias": "fc.0.bias", "fc.2.weight": "fc.1.weight",
        "fc.2.bias": "fc.1.bias", "fc.10.weight": "fc.2.weight",  # 10 after 2: numeric order, not text order
        "head.5.weight": "head.0.weight",
        "feature.layers.0.block.0.w": "feature.layers.0.block.0.w",
        "feature.layers.0.block.2.w": "feature.layers.0.block.1.w",
        "feature.layers.2.block.0.w": "feature.layers.1.block.0.w",
        "feature.layers.2.block.3.w": "feature.layers.1.block.1.w",  # each block renumbered on its own
    }
    path = _file(tmp_path, ["layers.0.w", "layers.2.w", "layers.5.w"])
    assert _values(load_tensors(LoadArgs(path))) == {"layers.0.w": 0.0, "layers.1.w": 1.0, "layers.2.w": 2.0}
    off = load_tensors(LoadArgs(path).with_map_indices_contiguous(False))
    assert list(off.tensors) == ["layers.0.w", "layers.2.w", "layers.5.w"]


def test_contiguous_runs_after_remap(tmp_path: Path) -> None:
    path = _file(tmp_path, ["seq.0.w", "seq.2.w", "seq.4.w"])
    result = load_tensors(LoadArgs(path).with_key_remap(r"^seq\.", "layers."))
    assert _values(result) == {"layers.0.w": 0.0, "layers.1.w": 1.0, "layers.2.w": 2.0}
    assert result.original_keys["layers.2.w"] == "seq.4.w"


def test_top_level_key_and_values(tmp_path: Path) -> None:
    keys = ["model.fc.weight", "model.fc.bias", "optim.state.0.exp_avg"]
    path = _file(tmp_path, keys, extra={"epoch": num(7)})
    result = load_tensors(LoadArgs(path).with_top_level_key("model"))
    assert _values(result) == {"fc.weight": 0.0, "fc.bias": 1.0}
    assert load_tensors(LoadArgs(path)).values == {"epoch": 7}
    with pytest.raises(ModelImportError, match=r"no top-level key 'state_dict'.*'epoch', 'model', 'optim'"):
        load_tensors(LoadArgs(path).with_top_level_key("state_dict"))


class _DropAndRename:
    """Drops ``num_batches_tracked``, renames ``.weight`` to ``.gamma`` and shifts its value by 10."""

    def __init__(self) -> None:
        self.seen: list[TensorEntry] = []

    def adapt(self, entry: TensorEntry) -> TensorEntry | None:
        self.seen.append(entry)
        if entry.key.endswith("num_batches_tracked"):
            return None
        if entry.key.endswith(".weight"):
            shifted = TensorData([entry.data.to_list()[0] + 10.0])
            return entry.with_(key=entry.key[: -len("weight")] + "gamma", data=shifted)
        return entry


def test_adapter_hook(tmp_path: Path) -> None:
    path = _file(tmp_path, ["bn.weight", "bn.bias", "bn.num_batches_tracked"])
    adapter = _DropAndRename()
    assert isinstance(adapter, Adapter)
    result = load_tensors(LoadArgs(path).with_key_remap("^bn", "norm").with_adapter(adapter))
    assert _values(result) == {"norm.gamma": 10.0, "norm.bias": 1.0}
    assert [(e.key, e.original_key, e.container) for e in adapter.seen] == [
        ("norm.weight", "bn.weight", None), ("norm.bias", "bn.bias", None),
        ("norm.num_batches_tracked", "bn.num_batches_tracked", None)]
    assert result.original_keys["norm.gamma"] == "bn.weight"


def test_identity_adapter_is_default(tmp_path: Path) -> None:
    assert isinstance(LoadArgs("x.pt").adapter, IdentityAdapter)
    with pytest.raises(TypeError, match="adapt"):
        LoadArgs("x.pt").with_adapter(object())  # type: ignore[arg-type]


def test_load_args_immutable() -> None:
    a = LoadArgs("x.pt")
    b = a.with_key_remap("a", "b").with_top_level_key("m").with_debug_print().with_mmap()
    assert a.key_remap == () and a.top_level_key is None and not a.debug_print and not a.mmap
    assert b.key_remap == (("a", "b"),) and b.top_level_key == "m" and b.debug_print and b.mmap
    assert b.path == Path("x.pt")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.top_level_key = "x"  # type: ignore[misc]


def test_debug_print(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path, ["conv.layer.weight", "fc.bias"])
    load_tensors(LoadArgs(path).with_key_remap(r"^conv\.", "").with_debug_print())
    out = capsys.readouterr().out
    assert "conv.layer.weight" in out and "layer.weight" in out and "fc.bias" in out
    assert "[1]" in out and "float32" in out
    load_tensors(LoadArgs(path))
    assert capsys.readouterr().out == ""


def test_unflatten() -> None:
    a, b = TensorData([1.0]), TensorData([2.0])
    assert unflatten({"enc.0.w": a, "enc.1.w": b}) == {"enc": {"0": {"w": a}, "1": {"w": b}}}
    with pytest.raises(ModelImportError, match="both a tensor and a prefix"):
        unflatten({"a.b": a, "a": b})
