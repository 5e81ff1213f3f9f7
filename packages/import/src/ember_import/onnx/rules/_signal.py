"""Host rules of the signal and sampling operators (onnx/docs/Operators.md: the window ops and ``DFT`` 17,
``AffineGrid`` 20): the small branches of their planning, so that a length read from the data stays code."""

from __future__ import annotations

import math

from ._hostrule import host_rule

__all__ = ["affine_grid_axis", "dft_split", "window_period"]


@host_rule(var="period")
def window_period(size: int, periodic: bool) -> int:
    """The ``N`` of the window formulas (``HannWindow``, ``HammingWindow``, ``BlackmanWindow`` 17:
    ``cos(2 pi k i / N)``): ``size`` for a periodic window, ``size - 1`` for a symmetric one, at least 1 (a
    symmetric window of one sample is its ``cos(0)`` terms, the runtime's convention where ONNX's formula
    divides by zero).

    Returns:
        An int ``>= 1``.
    """
    return max(size if periodic else size - 1, 1)


@host_rule(var="axis_grid")
def affine_grid_axis(n: int, align_corners: bool) -> list[float]:
    """``[start, step]`` of ``AffineGrid``'s ``n`` normalized positions along one spatial dim (position ``i`` is
    ``start + i * step``; ``onnx/reference/ops/op_affine_grid.py``, PyTorch's ``affine_grid``): with
    ``align_corners`` ``-1 + 2 i / (n - 1)`` (``-1`` alone for ``n == 1``), else ``-1 + (2 i + 1) / n``.

    Returns:
        Two floats.
    """
    if align_corners:
        return [-1.0, 2.0 / (n - 1) if n > 1 else 0.0]
    return [-1.0 + 1.0 / n if n > 0 else -1.0, 2.0 / n if n > 0 else 0.0]


@host_rule(var="split")
def dft_split(n: int, direct_max: int) -> int:
    """The factor ``n1`` of a length-``n`` DFT's four-step split (Bailey, 1990: ``n = n1 * n2``, ``n2`` DFTs of
    length ``n1`` then ``n1`` of length ``n2``): 1 (no split: one direct transform) for ``n <= direct_max`` or a
    prime ``n``, else the largest factor of ``n`` not above ``sqrt(n)``.

    Args:
        n: the transform's length.
        direct_max: the longest length transformed directly (one ``[n, n]`` matrix product).

    Returns:
        An int ``>= 1`` dividing ``n`` (1 for ``n <= 1``).
    """
    if n <= direct_max:
        return 1
    for f in range(math.isqrt(n), 1, -1):
        if n % f == 0:
            return f
    return 1
