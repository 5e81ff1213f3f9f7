"""The second trace: a model with dynamic dims is generated again with other sizes, and the sources compared.

A dynamic dim is traced as a :class:`~._sym.Sym`, an ``int`` whose value is the trace's *hint* (2, 3, 5 ... for
the named dims). Host arithmetic that leaves the Sym world (``1.5 * dim``: ``float.__mul__`` accepts an ``int``
subclass and returns a plain float of the hint; ``int(dim)``; a list built from ``range(dim)``) writes a constant
tied to the traced size into the code, silently. Rather than audit every converter for that, the generator traces
such a model a second time with different hints (:data:`RETRACE_HINTS`: other primes, none of the first set's
values for up to three dims) and requires the same source: a line that differs is code specialised on a traced
size, refused with :class:`~._errors.ModelGenError` (``load_model`` runs the model at any size). Models whose
inputs have no dynamic dim are traced once. The generated source carries no hint legitimately (docstrings name
the dims, ``batch``, or show the file's own ``?``), so the comparison is exact.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ember import Tensor

from .._ir import Graph, ValueInfo
from ._errors import ModelGenError
from ._host import HostDTypeError

__all__ = ["RETRACE_HINTS", "check_same_source", "has_dynamic_dims"]

#: the sizes of the second trace's dynamic dims, in order of appearance (the first trace's
#: ``_modelgen._HINTS`` are 2, 3, 5 ...): distinct primes, none of the first set's values for the first
#: three dims (the common case: batch, sequence, spatial), small so the second trace costs little more
RETRACE_HINTS = (7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47)


def has_dynamic_dims(graph: Graph) -> bool:
    """Whether an input of ``graph`` (a tensor, or a sequence's or optional's element) has a dim without a fixed
    size (a name, ``?``): the trace gives it a hint, and the source could depend on it."""
    for top in graph.inputs:
        info: ValueInfo | None = top
        while info is not None and info.kind != "tensor":
            info = info.elem
        if info is not None and info.shape is not None and any(not (isinstance(d, int) and d >= 0) for d in info.shape):
            return True
    return False


def check_same_source(first: Any, again: Callable[[], Any]) -> None:
    """Refuse when generating the model again with other hints writes a different source.

    ``first`` is the :class:`~._modelgen.GeneratedModel` traced with ``_modelgen._HINTS``; ``again()`` generates
    the model anew with :data:`RETRACE_HINTS`.

    Raises:
        ModelGenError: the first differing line (its number in ``model.py``, both versions) and the node whose
            output it computes where known: the code would be specialised on a size the trace used. Or the second
            trace's own refusal (a converter that fails at other sizes), said so.
    """
    try:
        second = again()
    except HostDTypeError:
        raise
    except ModelGenError as exc:
        raise ModelGenError(
            f"traced again with other sizes for the dynamic dims ({', '.join(map(str, RETRACE_HINTS[:3]))}"
            f" ...), generation fails, so the code could depend on the traced sizes: {exc}"
        ) from exc
    if first.source == second.source:
        return
    a, b = first.source.splitlines(), second.source.splitlines()
    k = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    line_a = a[k].strip() if k < len(a) else "<end of file>"
    line_b = b[k].strip() if k < len(b) else "<end of file>"
    node = _writer(first.gen, line_a)
    raise ModelGenError(
        f"the generated code would be specialised on a traced size: traced with other sizes for the dynamic "
        f"dims, line {k + 1} of model.py{node} changes from {line_a[:160]!r} to {line_b[:160]!r} (a converter's "
        f"host arithmetic left a dim's symbolic value, e.g. a float on the left of `*`). Use "
        f"ember_import.onnx.load_model, which runs the model at any size."
    )


def _writer(gen: Any, line: str) -> str:
    """`` (written for <node>)`` for the node whose output the assignment ``line`` computes, else ``""``."""
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(?:\s*,\s*[A-Za-z_][A-Za-z0-9_]*)*\s*=", line)
    if m is None:
        return ""
    target = m.group(1)
    for name, v in gen.env.items():
        bound = gen.traced.get(id(v)) if isinstance(v, Tensor) else None
        if bound is not None and bound[1].name == target:
            node = next((n for n in gen.graph.nodes if name in n.outputs), None)
            if node is not None:
                return f" (written for {node.where()})"
    return ""
