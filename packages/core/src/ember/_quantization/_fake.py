"""``fake_quantize``: quantize then dequantize in float, with a straight-through gradient (quantization-aware
training)."""

from __future__ import annotations

from ..tensor._tensor import Tensor
from ._errors import QuantizationError
from ._quantize import quantize
from ._scheme import QParams, QuantScheme
from ._validate import check_qparams

__all__ = ["fake_quantize"]


def fake_quantize(x: Tensor, scheme: QuantScheme, qparams: QParams) -> Tensor:
    """``dequantize(quantize(x, scheme, qparams))`` as a Float tensor of ``x``'s shape, differentiable under
    ``Autodiff`` with the straight-through estimator (Bengio et al. 2013; PyTorch's ``FakeQuantize`` /
    ``torch.fake_quantize_per_tensor_affine`` backward): the gradient passes unchanged where
    ``qmin <= round(x / scale) + zero_point <= qmax`` and is zero where the value saturates. ``scale`` and
    ``zero_point`` get no gradient (no LSQ).

    Args:
        x: Float tensor, finite values.
        scheme: as :meth:`Tensor.quantize`.
        qparams: as :meth:`Tensor.quantize`.

    Returns:
        Float tensor, ``x``'s shape, backend float type, on ``x``'s device.

    Raises:
        QuantizationError: as :func:`~ember.quantization.quantize`.
    """
    if not isinstance(x, Tensor):
        raise QuantizationError(f"fake_quantize: expected a Float tensor, got {type(x).__name__}.")
    fq = quantize(x, scheme, qparams).dequantize()
    if not x.device.backend.is_autodiff or not x.is_require_grad():
        return fq
    lay = check_qparams("fake_quantize", scheme, qparams, x.shape, x.device)
    qmin, qmax = scheme.value.range
    xi = x.inner().reshape(lay.view)
    s = qparams.scale.inner().cast(xi.dtype).reshape(lay.bcast)
    r = (xi / s).round()
    if qparams.zero_point is not None:
        r = r + qparams.zero_point.inner().reshape(lay.bcast).float()
    inside = ((r >= float(qmin)).int() * (r <= float(qmax)).int()).float().reshape(x.shape)
    mask = Tensor.from_inner(inside, x.device)
    through = x * mask
    # fq + (through - through): the value is fq exactly, the gradient with respect to x is the mask
    return fq + (through - through.detach())
