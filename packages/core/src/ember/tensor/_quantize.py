"""Quantization methods of ``Tensor``: ``quantize`` and ``quantize_dynamic`` (Burn's ``Tensor::quantize`` and
``quantize_dynamic``). The work is the quantization core's (``ember._quantization``, public as
:mod:`ember.quantization`); these methods forward to it. The core is typed against :class:`~._base.TensorBase`
(generic in :data:`~._base.TensorT`, so ``Tensor.quantize`` gives a ``QuantizedTensor[Tensor]``) and builds its
results through :mod:`._core` or on a tensor at hand, never importing the ``Tensor`` class: this module imports it
at module level without an import cycle (``tools/import_cycles.py``)."""

from __future__ import annotations

from .._quantization import _quantize as _core_quantize
from .._quantization._qtensor import QuantizedTensor
from .._quantization._scheme import QParams, QuantScheme
from ._base import TensorBase, TensorT


class QuantizeTensorOps(TensorBase):
    __slots__ = ()

    def quantize(self: TensorT, scheme: QuantScheme, qparams: QParams[TensorT]) -> QuantizedTensor[TensorT]:
        """This Float tensor quantized with ``scheme`` and ``qparams``:
        ``q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax)`` (ONNX ``QuantizeLinear``, Burn's
        ``Tensor::quantize``). See :func:`ember.quantization.quantize`.

        Returns:
            :class:`~ember.quantization.QuantizedTensor` of this shape on this device (no autodiff graph).

        Raises:
            QuantizationError: a non-Float tensor, NaN/inf values, qparams that do not fit the scheme and shape.
        """
        return _core_quantize.quantize(self, scheme, qparams)

    def quantize_dynamic(self: TensorT, scheme: QuantScheme) -> QuantizedTensor[TensorT]:
        """This tensor quantized with qparams from its own min/max (Burn's ``quantize_dynamic``; ONNX
        ``DynamicQuantizeLinear`` for ``Q8F`` per tensor). See :func:`ember.quantization.quantize_dynamic`.

        Raises:
            QuantizationError: as :meth:`quantize`; an empty tensor.
        """
        return _core_quantize.quantize_dynamic(self, scheme)
