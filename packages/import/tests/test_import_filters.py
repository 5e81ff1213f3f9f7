"""Burn's store filters (issue 34): select what to load or save by path, with a report of what was applied.

Every expectation is written out by hand: which keys a regex, a full path or a predicate keeps, in file order.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _import_models_support import device
from ember import TensorData, nn
from ember.module import Module
from ember_import import (
    ApplyResult,
    LoadArgs,
    ModelImportError,
    PathFilter,
    PyTorchFileRecorder,
    load_tensors,
    read_pytorch,
    read_safetensors,
    save_pytorch,
    save_safetensors,
)
from ember_import._export import write_safetensors
from ember_import._pt_writer import write_pytorch

KEYS = ["encoder.0.weight", "encoder.0.bias", "decoder.weight", "decoder.bias", "head.weight"]


def _file(tmp_path: Path, fmt: str = "pt") -> Path:
    tensors = {k: TensorData(np.full((2,), i, np.float32)) for i, k in enumerate(KEYS)}
    path = tmp_path / f"m.{'pt' if fmt == 'pt' else 'safetensors'}"
    (write_pytorch if fmt == "pt" else write_safetensors)(tensors, path)
    return path


def test_path_filter_is_burns_or_of_regexes_paths_and_predicates() -> None:
    f = PathFilter().with_regex(r"^encoder\.").with_regex(r"\.bias$")
    assert [k for k in KEYS if f.matches(k)] == ["encoder.0.weight", "encoder.0.bias", "decoder.bias"]
    assert PathFilter().with_regex("coder.w").matches("decoder.weight")  # found anywhere, as Regex::is_match
    g = PathFilter().with_full_path("head.weight").with_predicate(lambda p: p.startswith("decoder"))
    assert [k for k in KEYS if g.matches(k)] == ["decoder.weight", "decoder.bias", "head.weight"]
    assert PathFilter().is_empty() and not PathFilter().matches("x") and PathFilter.none().is_empty()
    assert PathFilter.all().matches("anything") and PathFilter().match_all().criteria_count() == 1
    assert f.or_(g).criteria_count() == 4 and f.or_(g).matches("head.weight")
    assert PathFilter().with_regexes([r"^a$", r"^b$"]).with_full_paths(["c"]).criteria_count() == 3
    assert str(f) == "PathFilter[regex: '^encoder\\\\.', '\\\\.bias$']" and str(PathFilter.all()) == "PathFilter.all()"
    with pytest.raises(ModelImportError, match="invalid regular expression"):
        PathFilter().with_regex("(unclosed")
    with pytest.raises(ModelImportError, match="expected a PathFilter"):
        LoadArgs("x.pt").with_filter(3)  # type: ignore[arg-type]


@pytest.mark.parametrize("fmt", ["pt", "safetensors"])
def test_load_with_regexes_ored_reports_applied_and_skipped(tmp_path: Path, fmt: str) -> None:
    path = _file(tmp_path, fmt)
    result = load_tensors(LoadArgs(path).with_filter(r"^encoder\.", r"\.bias$"))
    assert list(result.tensors) == ["encoder.0.weight", "encoder.0.bias", "decoder.bias"]
    assert result.apply_result.applied == ["encoder.0.weight", "encoder.0.bias", "decoder.bias"]
    assert result.apply_result.skipped == ["decoder.weight", "head.weight"]
    assert result.apply_result.missing == [] and result.apply_result.unused == []
    assert result.tensors["decoder.bias"].to_numpy().tolist() == [3.0, 3.0]
    # no filter: everything, nothing skipped
    full = load_tensors(LoadArgs(path))
    assert list(full.tensors) == KEYS and full.apply_result.skipped == []


def test_burn_names_on_load_args_or_together_after_the_remaps(tmp_path: Path) -> None:
    path = _file(tmp_path)
    args = (LoadArgs(path).with_key_remap(r"^encoder\.0\.", "enc.")  # the filter sees the remapped keys
            .with_regex(r"^enc\.weight$").with_full_path("head.weight").with_predicate(lambda k: k == "decoder.bias"))
    result = load_tensors(args)
    assert list(result.tensors) == ["enc.weight", "decoder.bias", "head.weight"]
    assert result.apply_result.skipped == ["enc.bias", "decoder.weight"]
    assert list(load_tensors(LoadArgs(path).with_regexes([r"^head", r"^decoder\.w"])).tensors) == \
        ["decoder.weight", "head.weight"]
    assert list(load_tensors(LoadArgs(path).with_full_paths(["head.weight"])).tensors) == ["head.weight"]
    assert list(load_tensors(LoadArgs(path).with_regex("^nothing").match_all()).tensors) == KEYS
    assert list(load_tensors(LoadArgs(path).with_filter(PathFilter())).tensors) == []  # the empty filter


def test_skipped_keys_are_logged_and_printed(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    path = _file(tmp_path)
    with caplog.at_level(logging.INFO, logger="ember_import"):
        load_tensors(LoadArgs(path).with_filter(re.compile("^head")).with_debug_print())
    assert "skipped 4: encoder.0.weight, encoder.0.bias, decoder.weight, decoder.bias" in caplog.text
    out = capsys.readouterr().out
    assert out.count("(skipped)") == 4 and "head.weight" in out


class Net(Module):
    fc: nn.Linear


def test_recorder_reports_applied_skipped_and_unused(tmp_path: Path) -> None:
    dev = device("numpy")
    tensors = {"fc.weight": TensorData(np.arange(6, dtype=np.float32).reshape(2, 3)),
               "fc.bias": TensorData(np.ones(2, np.float32)),
               "extra.weight": TensorData(np.zeros(2, np.float32))}
    path = write_pytorch(tensors, tmp_path / "net.pt")
    record = PyTorchFileRecorder().load(LoadArgs(path).with_filter(r"^fc\.weight$", r"^extra"), dev)
    assert record.skipped == ["fc.bias"] and sorted(record.tensors) == ["extra.weight", "fc.weight"]
    net = Net(fc=nn.LinearConfig(3, 2).init(dev))
    bias = net.fc.bias.val().to_numpy().copy()
    net, report = net.load_record(record, strict=False)
    assert record.apply_result.applied == ["fc.weight"]
    assert record.apply_result.skipped == ["fc.bias"] and record.apply_result.unused == ["extra.weight"]
    assert record.apply_result.missing == ["fc.bias"] and not record.apply_result.is_success()
    assert "fc.bias" in report.missing  # the filtered-out bias keeps its initial value
    np.testing.assert_array_equal(net.fc.bias.val().to_numpy(), bias)
    np.testing.assert_array_equal(net.fc.weight.val().to_numpy(), np.arange(6, dtype=np.float32).reshape(2, 3).T)
    text = str(record.apply_result)
    assert "skipped 1 (filtered), missing 1" in text and "unused: 'extra.weight'" in text


class Two(Module):
    enc: nn.Linear
    head: nn.Linear


def test_export_filter_to_pytorch_and_safetensors(tmp_path: Path) -> None:
    dev = device("numpy")
    model = Two(enc=nn.LinearConfig(3, 4).init(dev), head=nn.LinearConfig(4, 2).init(dev))
    report = ApplyResult()
    save_safetensors(model, tmp_path / "w.safetensors", filter=r"\.weight$", report=report)
    assert sorted(read_safetensors(tmp_path / "w.safetensors").tensors) == ["enc.weight", "head.weight"]
    assert report.applied == ["enc.weight", "head.weight"] and report.skipped == ["enc.bias", "head.bias"]
    keep = [PathFilter().with_full_path("enc.bias"), lambda k: k == "head.weight"]
    save_pytorch(model, tmp_path / "enc.pt", filter=keep)
    got = read_pytorch(tmp_path / "enc.pt").tensors
    assert sorted(got) == ["enc.bias", "head.weight"]
    np.testing.assert_array_equal(got["head.weight"].to_numpy(), model.head.weight.val().to_numpy().T)
    # the filter sees the keys after key_remap
    save_pytorch(model, tmp_path / "r.pt", key_remap=[(r"^enc\.", "encoder.")], filter=r"^encoder\.")
    assert sorted(read_pytorch(tmp_path / "r.pt").tensors) == ["encoder.bias", "encoder.weight"]


def test_filtered_export_loads_into_torch(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    dev = device("numpy")
    model = Two(enc=nn.LinearConfig(3, 4).init(dev), head=nn.LinearConfig(4, 2).init(dev))
    save_pytorch(model, tmp_path / "head.pt", filter=r"^head\.")
    target: Any = torch.nn.ModuleDict({"enc": torch.nn.Linear(3, 4), "head": torch.nn.Linear(4, 2)})
    missing, unexpected = target.load_state_dict(torch.load(tmp_path / "head.pt", weights_only=True), strict=False)
    assert sorted(missing) == ["enc.bias", "enc.weight"] and unexpected == []
    np.testing.assert_array_equal(target["head"].bias.detach().numpy(), model.head.bias.val().to_numpy())
