"""Quantization methods of ``Tensor``: ``quantize`` and ``quantize_dynamic`` (Burn's ``Tensor::quantize`` and
``quantize_dynamic``). The work is the quantization core's (``ember._quantization``, public as
:mod:`ember.quantization`); these methods forward to it. The core builds on ``Tensor``, so the forwarding imports it
inside the methods: the one cycle ``tools/import_cycles.py`` still allows for quantization."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._quantization._qtensor import QuantizedTensor
    from .._quantization._scheme import QParams, QuantScheme


class QuantizeTensorOps:
    __slots__ = ()

    def quantize(self: Any, scheme: QuantScheme, qparams: QParams) -> QuantizedTensor:
        """This Float tensor quantized with ``scheme`` and ``qparams``:
        ``q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax)`` (ONNX ``QuantizeLinear``, Burn's
        ``Tensor::quantize``). See :func:`ember.quantization.quantize`.

        Returns:
            :class:`~ember.quantization.QuantizedTensor` of this shape on this device (no autodiff graph).

        Raises:
            QuantizationError: a non-Float tensor, NaN/inf values, qparams that do not fit the scheme and shape.
        """
        from .._quantization._quantize import quantize

        return quantize(self, scheme, qparams)

    def quantize_dynamic(self: Any, scheme: QuantScheme) -> QuantizedTensor:
        """This tensor quantized with qparams from its own min/max (Burn's ``quantize_dynamic``; ONNX
        ``DynamicQuantizeLinear`` for ``Q8F`` per tensor). See :func:`ember.quantization.quantize_dynamic`.

        Raises:
            QuantizationError: as :meth:`quantize`; an empty tensor.
        """
        from .._quantization._quantize import quantize_dynamic

        return quantize_dynamic(self, scheme)
