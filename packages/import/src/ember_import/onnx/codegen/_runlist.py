"""Tensor-API calls whose *number* of results the data decides: kept as one run-time list.

``x.split(size, dim)`` gives ``ceil(x.shape[dim] / size)`` pieces; when ``size`` is read from the data
(``SplitToSequence`` with a scalar ``split`` graph input) or ``x.shape[dim]`` is a run-time size, the count the
trace saw with its stand-in values is not the count of the next run. Unpacking it into a fixed tuple of
variables (``a, b, c = x.split(size, 1)``) is wrong for every other value, so such a call is written as one
line binding a list (``seq = x.split(size, 1)``) and traced as a :class:`~._seqval.SeqVal`: a sequence of
run-time length, which sequence ops and graph outputs take as a list (:mod:`._seqs`, :mod:`._io`). A converter
that unpacks or iterates the pieces itself (``Split`` into named outputs, a per-piece ``squeeze``) gets a
``SeqVal``, not a list, and the node is refused (:class:`~._errors.ModelGenError`): right or refused.
"""

from __future__ import annotations

from typing import Any

from ember import Tensor

from ._gen_state import Line
from ._seqval import SeqVal
from ._sym import Parts, Sym
from ._trace import untraced

__all__ = ["COUNT_FROM_SIZE", "count_is_dynamic", "run_list"]

#: calls whose count is a receiver dim's size (divided by an int ``split_size``/``chunks`` argument)
COUNT_FROM_SIZE = frozenset({"split", "chunk", "unbind"})


def _dim_arg(name: str, rest: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    if "dim" in kwargs:
        return kwargs["dim"]
    pos = 0 if name == "unbind" else 1
    return rest[pos] if len(rest) > pos else 0


def count_is_dynamic(gen: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether the number of results of the call ``name(*args, **kwargs)`` (a method's receiver first) may
    differ from run to run: an int argument that is a :class:`Sym` (a list of them has a fixed length), or,
    for :data:`COUNT_FROM_SIZE`, a run-time size of the receiver along the split dim."""
    rest = args[1:]
    if any(isinstance(a, Sym) for a in (*rest, *kwargs.values())):
        return True
    if name not in COUNT_FROM_SIZE or not args or not isinstance(args[0], Tensor):
        return False
    if name != "unbind" and rest and not isinstance(rest[0], int) and "split_size" not in kwargs:
        return False  # a list of sizes: as many pieces as sizes
    dims = gen.sym_shapes.get(id(args[0]))
    if dims is None:
        return False
    dim = int(_dim_arg(name, rest, kwargs))
    dim = dim + len(dims) if dim < 0 else dim
    return 0 <= dim < len(dims) and isinstance(dims[dim], Sym)


def run_list(gen: Any, parts: Parts, out: list[Any] | tuple[Any, ...], base: str) -> Any:
    """The call ``parts`` (traced result ``out``) written as one list variable; a :class:`~._seqval.SeqVal`
    whose element stand-in is a copy of the first piece (``None`` for no piece)."""
    var = gen.new_var(base)
    gen.lines.append(Line((var,), parts))
    elem = None
    if out:
        with untraced():
            elem = Tensor.from_data(out[0].to_data(), out[0].device, dtype=out[0].dtype)
    return SeqVal(var, elem)
