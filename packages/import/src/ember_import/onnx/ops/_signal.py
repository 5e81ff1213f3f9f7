"""Signal processing: ``DFT`` (opsets 17, 20), ``STFT`` (17), ``HannWindow``, ``HammingWindow``,
``BlackmanWindow`` and ``MelWeightMatrix`` (17).

Complex values are ONNX's real representation: a trailing dim of 2 (real, imaginary) or 1 (real only). The
DFT is a matrix product with cosine and sine matrices built with Ember ops (the angle ``2*pi*(k*t mod n)/n``
is reduced in integers first): ``O(n^2)`` for lengths up to ``DIRECT_MAX``, longer composite lengths are
split recursively (four-step FFT, split by :func:`~..rules.dft_split`); ``dft_length`` zero-pads or truncates,
``onesided`` keeps the ``n//2 + 1`` non-negative frequencies, and the inverse with ``onesided`` (``irfft``)
rebuilds a real signal from half a spectrum by Hermitian symmetry. Window formulas are the ONNX specification's
(onnx/docs/Operators.md); ``MelWeightMatrix`` follows ``onnx.reference.ops.op_mel_weight_matrix``.

Every size here (a window's length, ``dft_length``, the DFT axis, ``STFT``'s step and frame length, the mel
scalars) may be read from the data: the converters build their tensors with the Tensor API (``arange`` of the
length) and keep their planning branch-free or in host rules (:mod:`ember_import.onnx.rules`), so ModelGen's
generated code reads those values when it runs. A Python ``float`` divided by such a length would lose it
(``float.__truediv__`` accepts an ``int`` subclass), hence tensor divisions: ``angle * (2 pi) / n``.
"""

from __future__ import annotations

import math

from ember import DType, Tensor

from .._context import Context
from .._dtypes import dtype_of
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from .._validate import validating
from ..rules import dft_split, from_data, window_period


def _trig(n_in: int, n_out: int, n: int, like: Tensor) -> tuple[Tensor, Tensor]:
    """``cos`` and ``sin`` of ``2*pi*k*t/n`` for ``t < n_in`` (rows) and ``k < n_out`` (columns)."""
    dev = like.device
    t = Tensor.arange(0, n_in, dev).reshape([n_in, 1])
    k = Tensor.arange(0, n_out, dev).reshape([1, n_out])
    # ``(2 pi) / n`` as a tensor division: ``float / n`` would drop a length known only when generated code runs
    angle = (t * k).remainder(n).float().cast(like.dtype) * (2.0 * math.pi) / n
    return angle.cos(), angle.sin()


def _fit(x: Tensor, n: int) -> Tensor:
    """``x`` zero-padded or truncated to ``n`` along its last dim (one :meth:`Tensor.pad`: a negative amount
    crops, so the length may be known only when generated code runs)."""
    return x.pad([(0, n - x.shape[-1])])


def dft_last(re: Tensor, im: Tensor | None, n: int, inverse: bool, onesided: bool,
             fit: bool = True, bound: int | None = None) -> tuple[Tensor, Tensor | None]:
    """The DFT of ``re + i*im`` along the last dim with length ``n``: ``(real, imag)``; the inverse is
    normalized by ``1/n``; an inverse ``onesided`` returns the real signal (``imag`` ``None``). Computed in
    float64 where the backend has it (sums of ``n`` products lose ~1e-5 in float32), then cast back.
    ``fit=False``: the last dim already has the length the transform reads (``n``, or ``n // 2 + 1`` for
    an inverse ``onesided``), no zero-padding or truncation. ``bound``: an upper bound of ``n`` (the signal's
    length when frames of ``n`` were cut from it) that picks the method, so a length known only when generated
    code runs takes the direct one when the bound allows it."""
    dtype = re.dtype
    wide = DType.FLOAT64 if DType.FLOAT64 in re.backend.supported_dtypes else dtype
    if wide is not dtype:
        out_re, out_im = _dft_last(re.cast(wide), None if im is None else im.cast(wide), n, inverse, onesided, fit,
                                   bound)
        return out_re.cast(dtype), None if out_im is None else out_im.cast(dtype)
    return _dft_last(re, im, n, inverse, onesided, fit, bound)


#: lengths up to this use one [n, n] matrix product; longer composite lengths split (four-step FFT)
DIRECT_MAX = 2048


def _direct(re: Tensor, im: Tensor | None, n: int, sign: int, n_out: int) -> tuple[Tensor, Tensor]:
    """The transform of :func:`_cdft` as one matrix product with ``[n, n_out]`` cosines and sines."""
    cos, sin = _trig(n, n_out, n, re)  # (a + ib)(cos + i*sign*sin) = a cos - sign b sin + i(b cos + sign a sin)
    out_re, out_im = re.matmul(cos), re.matmul(sin) * float(sign)
    if im is not None:
        out_re = out_re - im.matmul(sin) * float(sign)
        out_im = out_im + im.matmul(cos)
    return out_re, out_im


def _cdft(re: Tensor, im: Tensor | None, n: int, sign: int, n_out: int,
          bound: int | None = None) -> tuple[Tensor, Tensor]:
    """``sum_t x_t exp(sign*2*pi*i*k*t/n)`` for ``k < n_out`` along the last dim (length ``n``), unnormalized.

    Long composite lengths ``n = n1*n2`` use the four-step FFT (Bailey, 1990): ``n2`` DFTs of length ``n1``,
    twiddle factors ``exp(sign*2*pi*i*t2*k1/n)``, ``n1`` DFTs of length ``n2``; ``k = k1 + n1*k2``. A length
    read from the data (:func:`~..rules.from_data`, a ModelGen trace) picks the method by its ``bound``: the
    direct one under :data:`DIRECT_MAX`, else (or with no bound) one four-step level split by
    :func:`~..rules.dft_split` (``n1 = 1``: the direct transform of the whole length) with direct inner
    transforms, a structure that holds for every length.
    """
    if from_data(n):
        if bound is not None and bound <= DIRECT_MAX:
            return _direct(re, im, n, sign, n_out)
        return _four_step(re, im, n, dft_split(n, DIRECT_MAX), sign, n_out, nested=False)
    n1 = dft_split(n, DIRECT_MAX)
    if n1 == 1:
        return _direct(re, im, n, sign, n_out)
    return _four_step(re, im, n, n1, sign, n_out, nested=True)


def _four_step(re: Tensor, im: Tensor | None, n: int, n1: int, sign: int, n_out: int,
               nested: bool) -> tuple[Tensor, Tensor]:
    """One level of the four-step FFT of :func:`_cdft` with ``n = n1 * n2``; the inner transforms are
    :func:`_cdft` (``nested``: split again where long) or :func:`_direct`."""
    inner = _cdft if nested else _direct
    n2 = n // n1
    lead = list(re.shape[:-1])
    r = len(lead)

    def grid(t: Tensor) -> Tensor:  # [..., n] with t = n2*t1 + t2 -> [..., t2, t1]
        return t.reshape([*lead, n1, n2]).swap_dims(r, r + 1)

    a_re, a_im = inner(grid(re), None if im is None else grid(im), n1, sign, n1)  # [..., t2, k1]
    cos, sin = _trig(n2, n1, n, re)
    b_re = a_re * cos - a_im * sin * float(sign)
    b_im = a_im * cos + a_re * sin * float(sign)
    c_re, c_im = inner(b_re.swap_dims(r, r + 1), b_im.swap_dims(r, r + 1), n2, sign, n2)  # [..., k1, k2]

    def flat(t: Tensor) -> Tensor:  # [..., k1, k2] -> [..., n] with k = k1 + n1*k2
        out = t.swap_dims(r, r + 1).reshape([*lead, n])
        return out if nested and n_out == n else out.narrow(r, 0, n_out)

    return flat(c_re), flat(c_im)


def _dft_last(re: Tensor, im: Tensor | None, n: int, inverse: bool, onesided: bool,
              fit: bool, bound: int | None) -> tuple[Tensor, Tensor | None]:
    last = re.rank - 1
    if inverse and onesided:  # irfft: the full spectrum by Hermitian symmetry (X_{n-k} = conj X_k), real part
        m = n // 2 + 1
        re = _fit(re, m) if fit else re
        im = (_fit(im, m) if fit else im) if im is not None else Tensor.zeros(list(re.shape), re.device).cast(re.dtype)
        # bins 1 .. n - m mirrored (none for n <= 2: a narrow of length 0, no branch on a run-time n)
        re = Tensor.cat([re, re.narrow(last, 1, n - m).flip([last])], last)
        im = Tensor.cat([im, -im.narrow(last, 1, n - m).flip([last])], last)
        out, _ = _cdft(re, im, n, 1, n, bound)
        return out / n, None
    if fit:
        re = _fit(re, n)
        im = None if im is None else _fit(im, n)
    out_re, out_im = _cdft(re, im, n, 1 if inverse else -1, n // 2 + 1 if onesided else n, bound)
    return (out_re / n, out_im / n) if inverse else (out_re, out_im)


def _dft(ctx: Context, node: Node, x: Tensor, n_in: Tensor | None, axis: int) -> Tensor:
    rank = x.rank
    axis = axis % rank
    with validating():
        bad = axis == rank - 1
    if bad:
        raise OnnxImportError(f"{node.where()}: axis {axis} is the real/imaginary dim; it must be a signal axis.")
    if x.shape[-1] not in (1, 2):
        raise OnnxImportError(
            f"{node.where()}: the last dim must be 1 (real) or 2 (complex), got shape {list(x.shape)}."
        )
    inverse = bool(node.attr("inverse", 0))
    onesided = bool(node.attr("onesided", 0))
    if n_in is not None:
        n = ctx.int_scalar(n_in)
    else:
        n = 2 * (x.shape[axis] - 1) if inverse and onesided else x.shape[axis]
    parts = [p.squeeze_dim(rank - 1).movedim(axis, -1) for p in x.split(1, dim=rank - 1)]
    # without dft_length the length is the signal axis's (irfft: 2 * (bins - 1)): bounded by the dims of x
    bound = None if n_in is not None else max(2 * (d - 1) if inverse and onesided else d for d in x.shape[:-1])
    re, im = dft_last(parts[0], parts[1] if len(parts) == 2 else None, n, inverse, onesided, fit=n_in is not None,
                      bound=bound)
    outs = [re] if im is None else [re, im]
    return Tensor.stack([o.movedim(-1, axis) for o in outs], rank - 1)


@converter("DFT", since=17, static=(1,))
def dft17(ctx: Context, node: Node, x: Tensor, n: Tensor | None = None) -> Tensor:
    """``DFT`` 17: ``axis`` attribute (default 1), optional ``dft_length`` input."""
    return _dft(ctx, node, x, n, int(node.attr("axis", 1)))


@converter("DFT", since=20, static=(1, 2))
def dft20(ctx: Context, node: Node, x: Tensor, n: Tensor | None = None, axis: Tensor | None = None) -> Tensor:
    """``DFT`` 20: ``axis`` became an input (default -2)."""
    return _dft(ctx, node, x, n, ctx.int_scalar(axis, -2))


@converter("STFT", since=17, static=(1, 3))
def stft(ctx: Context, node: Node, x: Tensor, step: Tensor, window: Tensor | None = None,
         frame_length: Tensor | None = None) -> Tensor:
    """``STFT``: frames of the window's length every ``frame_step``, weighted by ``window``, each
    transformed with length ``frame_length``: ``[batch, frames, bins, 2]``."""
    hop = ctx.int_scalar(step)
    n = ctx.int_scalar(frame_length)
    size = window.shape[0] if window is not None else (n if n is not None else x.shape[1])
    n = size if n is None else n
    with validating():  # only rejects a bad model (the lengths may be read from the data)
        bad = size > x.shape[1]
    if bad:
        raise OnnxImportError(f"{node.where()}: frame length {size} is longer than the signal ({x.shape[1]}).")
    # the real and imaginary parts apart first (their count is the static last dim), each cut into frames
    # [batch, frames, size] (unfold rejects a size above the signal's) and weighted by the window
    parts = [p.squeeze_dim(2).unfold(1, size, hop) for p in x.split(1, dim=2)]
    if window is not None:
        parts = [p * window.cast(x.dtype) for p in parts]
    re, im = dft_last(parts[0], parts[1] if len(parts) == 2 else None, n, False,
                      bool(node.attr("onesided", 1)), fit=window is not None and frame_length is not None,
                      bound=x.shape[1] if window is None else None)
    assert im is not None
    return Tensor.stack([re, im], 3)


# ---------------------------------------------------------------------------------------------- windows
def _window(ctx: Context, node: Node, size: Tensor, terms: list[float]) -> Tensor:
    """``sum_j terms[j] * cos(2*pi*j*i/N)`` for ``i < size``, ``N`` :func:`~..rules.window_period` (``size``
    periodic, ``size - 1`` symmetric, at least 1); computed in float64 where the backend has it, then cast to
    ``output_datatype``. ``size`` may be read from the data: the window is Tensor-API code over ``arange``."""
    m = ctx.int_scalar(size)
    period = window_period(m, bool(int(node.attr("periodic", 1))))
    dtype = dtype_of(int(node.attr("output_datatype", 1)), f"{node.where()} output_datatype")
    wide = DType.FLOAT64 if DType.FLOAT64 in size.backend.supported_dtypes else DType.FLOAT32
    angle = Tensor.arange(0, m, ctx.device).float().cast(wide) * (2.0 * math.pi) / period
    out = angle.cos() * terms[1] + terms[0]
    for j, a in enumerate(terms[2:], start=2):
        out = out + (angle * float(j)).cos() * a
    return out.cast(dtype)


@converter("HannWindow", since=17, static=(0,))
def hann_window(ctx: Context, node: Node, size: Tensor) -> Tensor:
    """``HannWindow``: ``0.5 - 0.5 cos(2*pi*i/N)``."""
    return _window(ctx, node, size, [0.5, -0.5])


@converter("HammingWindow", since=17, static=(0,))
def hamming_window(ctx: Context, node: Node, size: Tensor) -> Tensor:
    """``HammingWindow``: ``25/46 - 21/46 cos(2*pi*i/N)``."""
    return _window(ctx, node, size, [25.0 / 46.0, -21.0 / 46.0])


@converter("BlackmanWindow", since=17, static=(0,))
def blackman_window(ctx: Context, node: Node, size: Tensor) -> Tensor:
    """``BlackmanWindow``: ``0.42 - 0.5 cos(2*pi*i/N) + 0.08 cos(4*pi*i/N)``."""
    return _window(ctx, node, size, [0.42, -0.5, 0.08])


@converter("MelWeightMatrix", since=17, static=(0, 1, 2, 3, 4))
def mel_weight_matrix(ctx: Context, node: Node, bins: Tensor, dft_length: Tensor, rate: Tensor, low: Tensor,
                      high: Tensor) -> Tensor:
    """``MelWeightMatrix``: ``[dft_length//2 + 1, num_mel_bins]`` triangular filters on the mel scale
    (``mel = 2595 log10(1 + hz/700)``), as ``onnx.reference`` computes them: ``num_mel_bins + 2`` edges evenly
    spaced in mel, each at spectrogram bin ``floor((dft_length + 1) hz / sample_rate)``; filter ``i`` rises
    from edge ``i`` to 1 at edge ``i + 1`` and falls to edge ``i + 2`` (the falling side written last, a
    filter whose edges coincide is 1 at its centre). Computed with the Tensor API in float64 where the
    backend has it, so the scalars may be read from the data when generated code runs; edges past the last
    bin fall outside the matrix."""
    n_mel, n_dft = ctx.int_scalar(bins), ctx.int_scalar(dft_length)
    dtype = dtype_of(int(node.attr("output_datatype", 1)), f"{node.where()} output_datatype")
    dev = low.device  # the scalars' device: the host under load_model (static inputs), the model's when generated
    wide = DType.FLOAT64 if DType.FLOAT64 in bins.backend.supported_dtypes else DType.FLOAT32
    ln10 = math.log(10.0)
    lo_mel = (low.cast(wide) / 700.0).log1p() * (2595.0 / ln10)
    hi_mel = (high.cast(wide) / 700.0).log1p() * (2595.0 / ln10)
    step = (hi_mel - lo_mel) / (n_mel + 2)
    mel = Tensor.arange(0, n_mel + 2, dev).float().cast(wide) * step + lo_mel
    hz = ((mel * (ln10 / 2595.0)).exp() - 1.0) * 700.0
    edges = (hz * (n_dft + 1) / rate.float().cast(wide)).floor()  # [num_mel_bins + 2]
    left, center, right = (edges.narrow(0, k, n_mel).reshape([1, n_mel]) for k in range(3))
    j = Tensor.arange(0, n_dft // 2 + 1, dev).float().cast(wide).reshape([n_dft // 2 + 1, 1])
    rising = (j.greater_equal(left)).bool_and(j.lower_equal(center))
    falling = (j.greater_equal(center)).bool_and(j.lower(right))
    # (j - left) / (center - left) written as 1 - (center - j) / (center - left): 1 at a centre equal to its left
    up = (center - j) / (center - left).clamp_min(1.0) * -1.0 + 1.0
    down = (right - j) / (right - center).clamp_min(1.0)
    zero = Tensor.zeros([n_dft // 2 + 1, n_mel], dev).cast(wide)
    return zero.mask_where(rising, up).mask_where(falling, down).cast(dtype).to_device(ctx.device)


__all__ = ["dft_last"]
