"""The error for a host read of a traced value: which Ember operation asked, where, and what to do instead."""

from __future__ import annotations

import os
import sys

from ember import BackendError

__all__ = ["host_read_error"]

#: Tensor methods that read values on the host -> how the user wrote them
_READERS = {
    "__bool__": "bool(tensor) (a Python if / while / and / or / assert on a tensor)",
    "__float__": "float(tensor)",
    "__int__": "int(tensor)",
    "__index__": "a tensor used as a Python index",
    "__array__": "numpy.asarray(tensor)",
    "__iter__": "iterating over a tensor",
    "into_scalar": "Tensor.into_scalar()",
    "to_data": "Tensor.to_data()",
    "into_data": "Tensor.into_data()",
    "to_numpy": "Tensor.to_numpy()",
    "tolist": "Tensor.tolist()",
}

#: the directories of the ember and ember_jax packages, with a trailing separator (a plain prefix would also
#: match ``ember_train`` or, in a regular install, everything in site-packages)
_EMBER = os.path.dirname(os.path.abspath(sys.modules["ember"].__file__ or "")) + os.sep
_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _caller() -> tuple[str | None, str | None]:
    """(the outermost Tensor reader method on the stack, the first frame outside Ember above it)."""
    f = sys._getframe(2)
    op = None
    while f is not None:
        path = os.path.abspath(f.f_code.co_filename)
        inside = path.startswith(_EMBER) or path.startswith(_HERE)
        if inside:
            name = f.f_code.co_name
            if name in _READERS and "tensor" in path:
                op = name
        else:
            return op, f"{f.f_code.co_filename}:{f.f_lineno} ({f.f_code.co_name})"
        f = f.f_back  # type: ignore[assignment]
    return op, None


def host_read_error() -> BackendError:
    """A BackendError for reading the values of a tracer (inside ``ember_jax.jit`` or ``jax.jit``)."""
    op, where = _caller()
    what = _READERS.get(op or "", "reading tensor values on the host (to_data, into_scalar, numpy conversion)")
    at = f" at {where}" if where else ""
    return BackendError(
        f"jax backend: {what}{at} is not possible inside a compiled function (ember_jax.jit / jax.jit): the "
        "values do not exist while jax traces the step. Return the tensor from the compiled step and read it "
        "outside, after the call; for value-dependent logic use tensor ops (mask_where, clamp, max_pair ...) "
        "instead of Python control flow on tensor values."
    )
