"""Generate the guide CNN's Ember source from ONNX, then train it and the hand-written guide model alike."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from ember.autodiff import Autodiff
from ember_import.onnx import ModelGen
from guide.model import ModelConfig as GuideConfig
from onnx_finetune import OnnxClassifier, evaluate, export_onnx, finetune
from onnx_finetune._torch import GuideCnn

__all__ = ["generate_guide", "import_generated", "train_both"]


def generate_guide(out_dir: Path) -> Path:
    """Export the (untrained) PyTorch guide CNN in training mode (its ``Dropout`` nodes kept) and run ``ModelGen``
    on it. Returns the path of the generated ``model.py``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    path = export_onnx(GuideCnn(), out_dir / "guide_cnn.onnx", training=True)
    return ModelGen().input(path).out_dir(out_dir / "generated").class_name("GuideCnn").run()


def import_generated(py: Path) -> ModuleType:
    """The generated ``model.py`` as a Python module."""
    spec = importlib.util.spec_from_file_location("generated_guide_cnn", py)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def train_both(generated: ModuleType, train: Any, test: Any, backend: Any, artifacts: Path, epochs: int = 1,
               seed: int = 42) -> tuple[float, float]:
    """Train the generated module (fresh weights from its ``init``) and the hand-written guide model with the
    same Learner settings (Adam, lr 1e-4, batch 64, seed 42). Returns both test accuracies in percent."""
    device = Autodiff(backend).device()
    backend.seed(seed)
    gen = OnnxClassifier(net=generated.GuideCnnConfig().init(device))
    gen = finetune(gen, train, test, device, artifacts / "learner-generated", epochs=epochs, seed=seed)
    backend.seed(seed)
    hand = GuideConfig(10, 512).init(device)
    hand = finetune(hand, train, test, device, artifacts / "learner-guide", epochs=epochs, seed=seed)
    return evaluate(gen.valid(), test, backend.device()), evaluate(hand.valid(), test, backend.device())
