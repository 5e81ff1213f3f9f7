"""``QuantizationError``: what quantized tensors raise for an op they do not support or bad quantization input."""

from __future__ import annotations

from .._errors import EmberError

__all__ = ["QuantizationError"]


class QuantizationError(EmberError, ValueError):
    """A quantization op met input it cannot handle (NaN/inf values, a scheme that does not fit the tensor, a
    non-positive scale), or a :class:`~ember.quantization.QuantizedTensor` was asked for an op it does not run
    natively. The message says what was expected and found and what to do (for an op: call ``.dequantize()``
    first, then run the float op)."""
