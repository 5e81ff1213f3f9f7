"""``numpy.einsum`` in Ember tensor ops, for the ONNX ``Einsum`` converter.

Each operand's labels are resolved (``...`` becomes one label per broadcast dim, aligned from the right as
numpy does), repeated labels of one operand become diagonals, labels used by one operand only are summed
out, and the operands are contracted pairwise, left to right, as batched matrix products
``[batch, left, k] @ [batch, k, right]`` (the usual pairwise strategy of ``opt_einsum``'s default path).
"""

from __future__ import annotations

from ember import Tensor

from .._errors import OnnxImportError
from .._ir import Node

__all__ = ["einsum"]

Labels = list[str]


def _parse_term(node: Node, term: str, rank: int | None, n_ell: int) -> Labels:
    """The labels of one term; ``...`` gives the last ``rank - letters`` of ``n_ell`` ellipsis labels."""
    term = term.strip()
    if term.count("...") > 1:
        raise OnnxImportError(f"{node.where()}: term {term!r} has more than one ellipsis.")
    head, _, tail = term.partition("...")
    letters = [c for c in head + tail if not c.isspace()]
    for c in letters:
        if not c.isalpha():
            raise OnnxImportError(f"{node.where()}: label {c!r} in {term!r} is not a letter (a-z, A-Z).")
    if "..." not in term:
        if rank is not None and rank != len(letters):
            raise OnnxImportError(
                f"{node.where()}: term {term!r} has {len(letters)} labels for an operand of rank {rank}."
            )
        return letters
    k = n_ell if rank is None else rank - len(letters)
    if k < 0:
        raise OnnxImportError(f"{node.where()}: term {term!r} has more labels than the operand's rank {rank}.")
    ell = [f".{i}" for i in range(n_ell - k, n_ell)]
    return [c for c in head if not c.isspace()] + ell + [c for c in tail if not c.isspace()]


def _diagonal(x: Tensor, labels: Labels) -> tuple[Tensor, Labels]:
    """Repeated labels of one operand reduced to their diagonal (``"ii->i"``)."""
    while True:
        seen: dict[str, int] = {}
        dup = None
        for i, lab in enumerate(labels):
            if lab in seen:
                dup = (seen[lab], i)
                break
            seen[lab] = i
        if dup is None:
            return x, labels
        i, j = dup
        n = x.shape[i]
        eye = Tensor.arange(0, n, x.device)
        shape_i = [n if d == i else 1 for d in range(x.rank)]
        shape_j = [n if d == j else 1 for d in range(x.rank)]
        off = eye.reshape(shape_i).not_equal(eye.reshape(shape_j))
        x = x.mask_fill(off, 0).sum_dim(j).squeeze_dim(j)
        labels = labels[:j] + labels[j + 1 :]


def _sum_out(x: Tensor, labels: Labels, keep: set[str]) -> tuple[Tensor, Labels]:
    dims = [i for i, lab in enumerate(labels) if lab not in keep]
    if not dims:
        return x, labels
    return x.sum_dims_squeeze(dims), [lab for lab in labels if lab in keep]


def _arrange(x: Tensor, labels: Labels, order: Labels, sizes: dict[str, int]) -> Tensor:
    """``x`` permuted to ``order`` (its labels, all present) and broadcast to the labels' sizes."""
    x = x.permute([labels.index(lab) for lab in order])
    target = [sizes[lab] for lab in order]
    return x if list(x.shape) == target else x.expand(target)


def _contract(
    a: Tensor, la: Labels, b: Tensor, lb: Labels, keep: set[str], sizes: dict[str, int]
) -> tuple[Tensor, Labels]:
    a, la = _sum_out(a, la, keep | set(lb))
    b, lb = _sum_out(b, lb, keep | set(la))
    batch = [lab for lab in la if lab in lb and lab in keep]
    inner = [lab for lab in la if lab in lb and lab not in keep]
    left = [lab for lab in la if lab not in lb]
    right = [lab for lab in lb if lab not in la]

    def size(labs: Labels) -> int:
        n = 1
        for lab in labs:
            n *= sizes[lab]
        return n

    a3 = _arrange(a, la, batch + left + inner, sizes).reshape([size(batch), size(left), size(inner)])
    b3 = _arrange(b, lb, batch + inner + right, sizes).reshape([size(batch), size(inner), size(right)])
    out = a3.matmul(b3).reshape([sizes[lab] for lab in batch + left + right])
    return out, batch + left + right


def einsum(node: Node, equation: str, operands: list[Tensor]) -> Tensor:
    """``numpy.einsum(equation, *operands)``.

    Raises:
        OnnxImportError: a malformed equation, a term that does not match its operand's rank, or label sizes
            that differ (other than 1, which broadcasts).
    """
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise OnnxImportError(
            f"{node.where()}: equation {equation!r} has {len(terms)} terms for {len(operands)} inputs."
        )
    n_ell = max(
        (t.rank - len(term.replace("...", "")) for term, t in zip(terms, operands) if "..." in term), default=0
    )
    labels = [_parse_term(node, term, t.rank, n_ell) for term, t in zip(terms, operands)]
    if arrow:
        out = _parse_term(node, rhs, None, n_ell)
    else:  # implicit output: the broadcast dims, then the labels used once, in alphabetical order
        counts: dict[str, int] = {}
        for labs in labels:
            for lab in labs:
                counts[lab] = counts.get(lab, 0) + 1
        out = [f".{i}" for i in range(n_ell)] + sorted(k for k, v in counts.items() if v == 1 and k[0] != ".")
    sizes: dict[str, int] = {}
    for labs, t in zip(labels, operands):
        for lab, s in zip(labs, t.shape):
            old = sizes.get(lab, 1)
            if old != 1 and s not in (1, old):
                raise OnnxImportError(f"{node.where()}: label {lab!r} has sizes {old} and {s} in {equation!r}.")
            sizes[lab] = max(old, s) if old != 1 else s
    items = [_diagonal(t, labs) for t, labs in zip(operands, labels)]
    keep_out = set(out)
    x, lx = items[0]
    for i in range(1, len(items)):
        later = {lab for _, labs in items[i + 1 :] for lab in labs}
        x, lx = _contract(x, lx, items[i][0], items[i][1], keep_out | later, sizes)
    x, lx = _sum_out(x, lx, keep_out)
    missing = [lab for lab in out if lab not in lx]
    if missing:
        raise OnnxImportError(f"{node.where()}: output labels {missing} of {equation!r} appear in no input.")
    return _arrange(x, lx, out, sizes)
