"""The graph's inputs and outputs as a generated ``forward`` takes and returns them.

The calling convention is ``load_model``'s (:meth:`~ember_import.onnx.OnnxModule.forward`): a tensor input is a
``Tensor``, a sequence input a ``list[Tensor]`` (of any length, empty included, the elements of any size along
the dims its type leaves free), an optional input its value (a ``Tensor``, or a ``list[Tensor]`` for an optional
sequence) or ``None``; outputs likewise (several as a tuple). Inputs are tensors of an Ember element type and
known rank, and a sequence's or optional's element likewise (:func:`check_input`); an element type Ember has no
dtype for (float8, 4-bit, 2-bit, strings) is refused, as ``load_model`` refuses it.

A sequence input is traced as a :class:`~._seqval.SeqVal` (its length is the run's: the sequence ops on it are
list code, :mod:`._seqs`), an optional input as an :class:`~._optval.OptVal` (its emptiness is the run's:
``x is not None``, :mod:`._optional`). A sequence made in straight-line code from tensors has a length fixed by
the graph (the trace saw every op that made it; a count read from the data is refused where it is read), so the
generated code returns a list display (``[seq_0, seq_1, seq_2]``) or ``None``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ember import DType, Tensor, TensorData

from .._ir import ValueInfo
from .._program import host_device
from ._errors import ModelGenError
from ._gen import Gen
from ._optval import OptVal, annotation_of
from ._seqs import SeqVal
from ._sym import Var, parts_text
from ._trace import untraced

__all__ = ["CONVENTION", "check_input", "container_input", "input_annotation", "output_source", "stand_in"]

#: the docstring note of a generated module that takes a sequence or an optional
CONVENTION = ("Sequence inputs are lists of tensors (any length, empty included), optional inputs a value or "
              "``None``, as ``ember_import.onnx.load_model``'s module takes them.")

#: the sizes of the free dims of a sequence's or optional's element stand-in (small, distinct, not 1)
_ELEM_HINTS = (2, 3, 5, 7, 11, 13)


def _contents(info: ValueInfo) -> ValueInfo | None:
    """The tensor type a sequence, optional or optional sequence holds (``None``: not a tensor, or unknown)."""
    inner = info.elem
    if info.kind == "optional" and inner is not None and inner.kind == "sequence":
        inner = inner.elem
    return inner if inner is not None and inner.kind == "tensor" else None


def check_input(info: ValueInfo) -> None:
    """Refuse a graph input generated code cannot take.

    Raises:
        ModelGenError: an element type without an Ember dtype, a tensor of unknown rank, or a sequence or
            optional whose contents the file does not declare as tensors (an optional of an optional).
    """
    if info.kind in ("sequence", "optional"):
        inner = _contents(info)
        if inner is None or inner.dtype is None:
            raise ModelGenError(f"{info.describe()}: generated code takes sequences and optionals of tensors of an "
                                "Ember element type; the file declares no such contents. Use "
                                "ember_import.onnx.load_model.")
        if info.kind == "optional" and inner.shape is None:
            raise ModelGenError(f"{info.describe()}: generated code takes optional tensors of known rank; give the "
                                "input a shape, or use ember_import.onnx.load_model.")
        return
    if info.kind != "tensor" or info.dtype is None:
        raise ModelGenError(f"{info.describe()}: its element type has no Ember dtype (float8, 4-bit and 2-bit "
                            "types, strings); load_model cannot run it either. Convert the model's inputs to a "
                            "supported type.")
    if info.shape is None:
        raise ModelGenError(f"{info.describe()}: generated code takes tensors of known rank; give the input a "
                            "shape (onnx.shape_inference or the exporter's input shapes).")


def input_annotation(info: ValueInfo) -> str:
    """The annotation of input ``info`` in ``forward``'s signature."""
    if info.kind == "sequence":
        return "list[Tensor]"
    if info.kind == "optional":
        return "list[Tensor] | None" if info.elem is not None and info.elem.kind == "sequence" else "Tensor | None"
    return "Tensor"


def stand_in(dtype: DType, shape: list[int], rng: np.random.Generator) -> Tensor:
    """A host tensor of ``dtype`` and ``shape`` for the trace to run on: standard normal floats, zero ints,
    false bools (untraced)."""
    if dtype.is_float:
        data = TensorData(rng.standard_normal(shape).astype(np.float32), DType.FLOAT32)
    elif dtype is DType.BOOL:
        data = TensorData(np.zeros(shape, dtype=bool), DType.BOOL)
    else:
        data = TensorData(np.zeros(shape, dtype=np.int64), DType.INT64)
    with untraced():
        return Tensor.from_data(data, host_device(), dtype=dtype)


def container_input(info: ValueInfo, var: Var, rng: np.random.Generator,
                    sizes: tuple[int, ...] = _ELEM_HINTS) -> SeqVal | OptVal:
    """The traced value of a sequence or optional input held by ``var`` (checked by :func:`check_input`): a
    :class:`SeqVal` whose element stand-in has the declared rank (none when the file leaves it open: an op
    reading an element is refused then), or an :class:`OptVal` of a tensor or sequence stand-in. The element's
    free dims take ``sizes`` in turn."""
    inner = _contents(info)
    assert inner is not None and inner.dtype is not None
    elem = None
    if inner.shape is not None:
        hints = iter(sizes)
        shape = [d if isinstance(d, int) and d >= 0 else next(hints, 2) for d in inner.shape]
        elem = stand_in(inner.dtype, shape, rng)
    if info.kind == "sequence":
        return SeqVal(var, elem)
    assert info.elem is not None
    if info.elem.kind == "sequence":
        return OptVal(var, SeqVal(var, elem))
    assert elem is not None
    return OptVal(var, elem)


def output_source(g: Gen, info: ValueInfo, v: Any) -> tuple[str, str]:
    """The source of output ``info`` (traced value ``v``) and its annotation.

    Raises:
        ModelGenError: a value that is not a tensor, a list of tensors or (for an optional) ``None``, or a kind
            that does not match the graph's declaration.
    """
    kind = info.kind
    if isinstance(v, Tensor) and kind in ("tensor", "optional"):
        return parts_text(g.arg(v)), "Tensor" if kind == "tensor" else "Tensor | None"
    if isinstance(v, list) and kind in ("sequence", "optional") and all(isinstance(x, Tensor) for x in v):
        items = ", ".join(parts_text(g.arg(x)) for x in v)
        return f"[{items}]", "list[Tensor]" if kind == "sequence" else "list[Tensor] | None"
    if isinstance(v, SeqVal) and kind in ("sequence", "optional"):
        return v.var.name, "list[Tensor]" if kind == "sequence" else "list[Tensor] | None"
    if isinstance(v, OptVal):  # an optional input, or a loop's optional start value: None when the code runs so
        return v.var.name, annotation_of(v)
    if v is None and kind == "optional":
        return "None", "list[Tensor] | None" if info.elem is not None and info.elem.kind == "sequence" else \
            "Tensor | None"
    raise ModelGenError(f"output {info.name!r:.80} ({info.describe()}) is a {type(v).__name__} in the trace; "
                        "generated code returns tensors, lists of tensors (sequences) and None (empty optionals).")
