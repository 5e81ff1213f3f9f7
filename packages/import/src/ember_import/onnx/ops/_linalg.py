"""Matrix products and linear algebra: ``MatMul``, ``Gemm``, ``Einsum`` and ``Det``.

Semantics from the ONNX operator specification (onnx/docs/Operators.md): ``MatMul`` is ``numpy.matmul``
(1-D operands get a dim prepended/appended and removed again, batch dims broadcast); ``Gemm`` is
``alpha * A' @ B' + beta * C`` with ``C`` broadcast to the product; ``Einsum`` is ``numpy.einsum``.
"""

from __future__ import annotations

from ember import Tensor

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._axes import scale
from ._einsum import einsum

__all__ = ["matmul_nd"]


def matmul_nd(a: Tensor, b: Tensor) -> Tensor:
    """``numpy.matmul``: a 1-D left operand is a row ``[1, k]``, a 1-D right operand a column ``[k, 1]``,
    the added dims are removed from the result; batch dims broadcast."""
    va, vb = a.rank == 1, b.rank == 1
    y = (a.unsqueeze_dim(0) if va else a).matmul(b.unsqueeze_dim(1) if vb else b)
    if va:
        y = y.squeeze_dim(-2)
    if vb:
        y = y.squeeze_dim(-1)
    return y


@converter("MatMul", since=1)
def matmul(ctx: Context, node: Node, a: Tensor, b: Tensor) -> Tensor:
    """``MatMul`` (opsets 1, 9, 13: only the element types changed): ``numpy.matmul`` semantics."""
    return matmul_nd(a, b)


@converter("Gemm", since=1)
def gemm(ctx: Context, node: Node, a: Tensor, b: Tensor, c: Tensor | None = None) -> Tensor:
    """``Gemm`` (opsets 1, 6, 7, 9, 11, 13): ``alpha * A' @ B' + beta * C``, ``A' = A^T`` when ``transA``
    (``B'`` likewise). ``C`` is optional from opset 11 and broadcasts to ``[M, N]`` (opsets 1 and 6 had a
    ``broadcast`` attribute; broadcasting where the model allows none gives the same values)."""
    for name, t in (("A", a), ("B", b)):
        if t.rank != 2:
            raise OnnxImportError(f"{node.where()}: input {name} must be 2-D, got shape {list(t.shape)}.")
    if node.attr("transA", 0):
        a = a.t()
    if node.attr("transB", 0):
        b = b.t()
    y = scale(a.matmul(b), float(node.attr("alpha", 1.0)))
    beta = float(node.attr("beta", 1.0))
    if c is not None and beta != 0:
        y = y.add(scale(c, beta))
    return y


@converter("Einsum", since=12)
def einsum_op(ctx: Context, node: Node, *operands: Tensor) -> Tensor:
    """``Einsum`` (opset 12): ``numpy.einsum`` with explicit or implicit output, ellipsis and repeated
    labels (diagonals); contractions run pairwise as batched matrix products."""
    return einsum(node, str(node.attr("equation")), list(operands))


@converter("Det", since=11)
def det(ctx: Context, node: Node, x: Tensor) -> Tensor:
    """``Det`` (opset 11, 22): determinant of ``[*, M, M]`` by Gaussian elimination with partial pivoting
    (LU, Golub & Van Loan, *Matrix Computations*, alg. 3.4.1), unrolled over ``M`` in tensor ops so that it
    is differentiable; the result has shape ``[*]``."""
    shape = list(x.shape)
    if x.rank < 2 or shape[-1] != shape[-2]:
        raise OnnxImportError(f"{node.where()}: expected square matrices [*, M, M], got shape {shape}.")
    m = shape[-1]
    batch = shape[:-2]
    if m == 0:
        return Tensor.ones(batch, x.device).cast(x.dtype)
    rows = Tensor.arange(0, m, x.device).reshape([m, 1])
    a = x
    result: Tensor | None = None
    for k in range(m):
        col = a.narrow(-1, k, 1).narrow(-2, k, m - k)  # [*, m-k, 1]
        piv = col.abs().argmax(-2).add(k)  # [*, 1, 1]: the row holding the largest pivot candidate
        # swap rows k and piv: index[r] = piv if r == k, k if r == piv, else r
        at_k = rows.equal(k)
        idx = rows.expand(batch + [m, 1]).mask_where(at_k, piv.expand(batch + [m, 1]))
        idx = idx.mask_fill(rows.equal(piv).bool_and(at_k.bool_not()), k)
        a = a.gather(-2, idx.expand(batch + [m, m]))
        sign = Tensor.ones(batch + [1, 1], x.device).cast(x.dtype).mask_fill(piv.not_equal(k), -1.0)
        pivot = a.narrow(-2, k, 1).narrow(-1, k, 1)  # [*, 1, 1]
        factor = pivot.mul(sign)
        result = factor if result is None else result.mul(factor)
        if k + 1 < m:
            safe = pivot.mask_fill(pivot.equal(0.0), 1.0)
            below = a.narrow(-2, k + 1, m - k - 1)
            mult = below.narrow(-1, k, 1).div(safe)  # [*, m-k-1, 1]
            below = below.sub(mult.mul(a.narrow(-2, k, 1)))
            a = Tensor.cat([a.narrow(-2, 0, k + 1), below], -2)
    assert result is not None
    return result.reshape(batch)
