"""The device of a generated ``forward`` that has no tensor input to take it from.

A model with a tensor input makes its tensors (constants, ``Tensor.zeros(..., device)``) on the first such
input's device (``device = x.device``). A model without one (only constants, or only sequence/optional inputs
that may be empty) uses the module's own device, as Burn's generated models keep theirs: the device of its
weights (``self.devices()[0]``), or, when it has no weights, of an empty tensor field ``device_anchor`` that
``init(device)`` makes on the device it is given and that :meth:`~ember.module.Module.to_device` moves like any
tensor field (it holds no data and is not saved in the record).
"""

from __future__ import annotations

from ._expr import Attr, Call, Name
from ._gen import Gen
from ._sym import Var

__all__ = ["module_device", "resolve_module_device"]

#: the docstring note of a generated module whose device is its own
NOTE = ("``forward`` has no tensor input: it makes its tensors on the module's device (the device given to "
        "``init``/``from_record``, moved by ``to_device``).")


class _ModuleDevice(Var):
    """The source of the module's device, set by :func:`resolve_module_device` once the fields are known."""

    __slots__ = ()


def module_device(g: Gen) -> None:
    """Make ``g``'s device (:meth:`Gen.device`) the module's own."""
    g.device_source = (_ModuleDevice("self.devices()[0]"),)


def resolve_module_device(g: Gen) -> None:
    """After the trace, before ``forward`` is rendered: when ``forward`` uses the module's device, take it from
    the weights, else from a new empty ``device_anchor`` field, and note it in the module's docstring."""
    holder = g.device_source[0] if g.device_source else None
    if g.device_var is None or not isinstance(holder, _ModuleDevice):
        return
    if any(f.state for f in g.fields):
        holder.name = "self.devices()[0]"
    else:
        empty = Call(Attr(Name("Tensor"), "zeros"), ([0], Name("device")))
        name = g.add_field("device_anchor", "Tensor", empty, {}, None, "Tensor")
        holder.name = f"self.{name}.device"
    g.doc_notes.append(NOTE)
