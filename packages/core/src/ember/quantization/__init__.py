"""Quantization (Burn's ``burn_tensor::quantization``; PyTorch's ``torch.ao.quantization`` core): quantized tensors,
their schemes and parameters, the int8 kernels and fake quantization.

>>> import ember
>>> from ember.quantization import QuantScheme, QuantValue, QuantLevel
>>> dev = ember.device("numpy")
>>> x = ember.Tensor.from_floats([[0.5, -1.0], [0.25, 2.0]], dev)
>>> q = x.quantize_dynamic(QuantScheme(QuantValue.Q8S, QuantLevel.tensor()))
>>> q.values.tolist(), q.qparams.scale.tolist()   # scale = max|x| / 127
([[32, -64], [16, 127]], [0.015748031437397003])

See ``docs/reference/quantization.md`` for the formulas, the kernels per backend and the record layout; the
module-level workflow (``Quantizer``, calibration, QAT) builds on this package.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._errors import QuantizationError
from ._fake import fake_quantize
from ._matmul import int_path_applies, quantized_linear, quantized_matmul
from ._pack import pack_int4, unpack_int4
from ._qtensor import QuantizedTensor
from ._quantize import dequantize, quantize, quantize_dynamic
from ._range import compute_qparams, compute_range, scale_eps
from ._scheme import QParams, QuantLevel, QuantParam, QuantScheme, QuantValue

# The module-level workflow (Quantizer, calibration observers, quantized layers, QAT) builds on ember.module and
# ember.nn, which import this package's tensor part: its names load on first use (PEP 562), so importing
# ember.module first (as `import ember` does) never meets a half-initialised package.
_LAZY = {
    "InputQuant": "_layers", "QuantizedLinear": "_layers", "QuantizedConv1d": "_layers",
    "QuantizedConv2d": "_layers", "QuantizedEmbedding": "_layers",
    "Observed": "_observed", "FakeQuantized": "_observed",
    "Calibration": "_observers", "Observer": "_observers", "MinMaxObserver": "_observers",
    "MovingAverageObserver": "_observers", "PercentileObserver": "_observers",
    "Quantizer": "_quantizer", "calibrate": "_quantizer",
    "PathFilter": "_swap", "swap_modules": "_swap",
}


if TYPE_CHECKING:  # what the lazy names are, for type checkers
    from ._layers import InputQuant, QuantizedConv1d, QuantizedConv2d, QuantizedEmbedding, QuantizedLinear
    from ._observed import FakeQuantized, Observed
    from ._observers import Calibration, MinMaxObserver, MovingAverageObserver, Observer, PercentileObserver
    from ._quantizer import Quantizer, calibrate
    from ._swap import PathFilter, swap_modules


def __getattr__(name: str) -> object:
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'ember.quantization' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{mod}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "QuantValue",
    "QuantLevel",
    "QuantParam",
    "QuantScheme",
    "QParams",
    "QuantizedTensor",
    "QuantizationError",
    "compute_range",
    "compute_qparams",
    "scale_eps",
    "quantize",
    "quantize_dynamic",
    "dequantize",
    "quantized_matmul",
    "quantized_linear",
    "int_path_applies",
    "fake_quantize",
    "pack_int4",
    "unpack_int4",
    "Calibration",
    "Observer",
    "MinMaxObserver",
    "MovingAverageObserver",
    "PercentileObserver",
    "Quantizer",
    "calibrate",
    "InputQuant",
    "QuantizedLinear",
    "QuantizedConv1d",
    "QuantizedConv2d",
    "QuantizedEmbedding",
    "Observed",
    "FakeQuantized",
    "PathFilter",
    "swap_modules",
]
