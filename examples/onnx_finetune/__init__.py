"""Fine-tune a PyTorch-trained model in Ember through ONNX.

1. :func:`pretrain_torch` trains the MNIST guide's CNN in raw PyTorch for part of an epoch;
2. :func:`export_onnx` exports it with ``torch.onnx.export``;
3. :func:`ember_import.onnx.load_model` imports it as a native Ember module (its weights become ``Param``\\ s);
4. :class:`OnnxClassifier` gives it the Learner's train and validation steps, and :func:`finetune` trains it
   for an epoch on Ember's numpy backend; :func:`evaluate` reports test accuracy before and after.

Run: ``python -m onnx_finetune --data-dir DIR`` from ``examples/`` (see README.md).
"""

from ._finetune import OnnxClassifier, evaluate, finetune
from ._torch import GuideCnn, export_onnx, pretrain_torch

__all__ = ["GuideCnn", "OnnxClassifier", "evaluate", "export_onnx", "finetune", "pretrain_torch"]
