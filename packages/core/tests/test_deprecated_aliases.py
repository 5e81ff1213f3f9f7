"""The modules renamed by issue 31 keep their old names for one release: importing the old name warns with a
DeprecationWarning naming the new one, and serves the very same objects."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize(
    ("old", "new", "names"),
    [
        ("ember.tensor.module", "ember.tensor.functional", ["conv2d", "max_pool2d", "embedding", "ConvOptions"]),
        ("ember._data", "ember._tensor_data", ["TensorData", "Tolerance", "bf16_to_f32"]),
    ],
)
def test_old_module_name_warns_and_aliases_the_new_one(old: str, new: str, names: list[str]) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=rf"{old.replace('.', '[.]')} is deprecated: it was renamed {new}"):
        alias = importlib.import_module(old)
    target = importlib.import_module(new)
    assert alias.__all__ == target.__all__
    for name in names:
        assert getattr(alias, name) is getattr(target, name), name


def test_public_tensor_data_is_the_renamed_class() -> None:
    import ember
    from ember._tensor_data import TensorData

    assert ember.TensorData is TensorData
    assert TensorData.__module__ == "ember._tensor_data"
