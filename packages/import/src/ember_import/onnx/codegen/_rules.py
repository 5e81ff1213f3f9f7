"""Host rules under a trace: a call with a value read from the data is recorded as one line of ``forward``.

:func:`~ember_import.onnx.rules.host_rule` marks a converter's host planning (ONNX's rules for a ``Reshape``
target, a ``Range`` count, ``Split`` sizes) as a pure function over Python ints, floats and lists. This module is
the trace's side of it (the ``torch.fx.wrap`` pattern): :func:`record_rule` is installed as the rules' hook when
:mod:`ember_import.onnx.codegen` is imported, and for each call

- with no generation tracing on this thread, inside a recorded Tensor-API call, or with no value read from the
  data among the arguments (ints, including the :class:`~._sym.Sym` dims of a dynamic shape, fold as before):
  the plain call;
- otherwise: the rule runs once on the trace's stand-in values (the *hint run*, whose result gives the
  structure and the values the converter goes on with), and the call is written as one line
  ``shape = rules.reshape_target([2, 3, 4], sizes, False)``; its results are :class:`~._sym.Sym`\\ s (ints) and
  :class:`~._symfloat.SymFloat`\\ s (floats) read from that variable (``shape[0]``), lists of them being
  :class:`RuleList`\\ s that a Tensor-API call writes as the variable itself (``x.reshape(shape)``).

The result variable counts as a read of the data: a node whose converter uses it in no recorded call (it
decided a branch or a count instead) is refused, as for ``tolist`` reads (:func:`~._run._check_traced`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ..rules._hostrule import set_trace_hook
from ._active import active
from ._errors import ModelGenError
from ._gen_state import Line
from ._sym import Parts, Sym, Var
from ._symfloat import SymFloat

__all__ = ["RULE_MODULES", "RuleList", "has_data", "record_rule"]

#: the public modules a recorded rule is called from, and the name the generated file imports each as (a name
#: no generated variable takes: :data:`._names._RESERVED`)
RULE_MODULES = {"ember_import.onnx.rules": "rules"}


class RuleList(list):  # type: ignore[type-arg]
    """A list of a host rule's results, written as the source :attr:`parts` that computes it (its variable,
    ``shape``) while it is unchanged; a converter that changes it in place gets element-wise source again."""

    parts: Parts | None

    def __init__(self, items: list[Any], parts: Parts) -> None:
        super().__init__(items)
        self.parts = parts


def _forget(name: str) -> Callable[..., Any]:
    orig = getattr(list, name)

    def changed(self: RuleList, *args: Any, **kwargs: Any) -> Any:
        self.parts = None
        return orig(self, *args, **kwargs)

    changed.__name__ = name
    return changed


for _name in (
    "__setitem__",
    "__delitem__",
    "__iadd__",
    "__imul__",
    "append",
    "extend",
    "insert",
    "pop",
    "remove",
    "reverse",
    "sort",
    "clear",
):
    setattr(RuleList, _name, _forget(_name))


def has_data(v: Any) -> bool:
    """Whether ``v`` (a value, or lists/tuples/dicts nesting them) holds a value read from the data: a
    :class:`~._sym.Sym` or :class:`~._symfloat.SymFloat` whose ``data`` flag is set."""
    if isinstance(v, (Sym, SymFloat)):
        return bool(v.data)
    if isinstance(v, (list, tuple)):
        return any(has_data(x) for x in v)
    if isinstance(v, dict):
        return any(has_data(x) for x in v.values())
    return False


def _hint(v: Any) -> Any:
    """``v`` with its symbolic values replaced by the trace's stand-ins (plain ints and floats)."""
    if isinstance(v, Sym):
        return int(v)
    if isinstance(v, SymFloat):
        return float(v)
    if isinstance(v, (list, tuple)):
        return type(v)(_hint(x) for x in v) if type(v) in (list, tuple) else [_hint(x) for x in v]
    if isinstance(v, dict):
        return {k: _hint(x) for k, x in v.items()}
    return v


def _home(rule: Callable[..., Any]) -> tuple[str, str]:
    """The public module ``rule`` is called from in generated code, and the name the file imports it as."""
    mod = rule.__module__
    parts = mod.split(".")
    public = ".".join(parts[: next((i for i, p in enumerate(parts) if p.startswith("_")), len(parts))])
    alias = RULE_MODULES.get(public)
    if alias is None or getattr(importlib.import_module(public), rule.__name__, None) is not rule:
        raise ModelGenError(
            f"host rule {mod}.{rule.__name__} is not exported by one of the public modules generated "
            f"code imports rules from ({', '.join(RULE_MODULES)}); this is a bug in ember_import."
        )
    return public, alias


def _results(v: Any, var: Var, path: str) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float, list, tuple)):
        raise ModelGenError(
            f"host rule result {type(v).__name__} at {var.name}{path}: a rule returns ints, floats "
            "and lists/tuples of them (a bool or None would decide a branch of the converter for "
            "every input); this is a bug in ember_import."
        )
    if isinstance(v, int):
        return Sym(v, (var, path), data=True)
    if isinstance(v, float):
        return SymFloat(v, (var, path), data=True)
    items = [_results(x, var, f"{path}[{i}]") for i, x in enumerate(v)]
    return tuple(items) if isinstance(v, tuple) else RuleList(items, (var, path) if path else (var,))


def record_rule(rule: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The hook of every host-rule call (see the module docstring).

    Raises:
        ModelGenError: the rule is not exported by a public rules module, or returns something other than
            ints, floats and lists/tuples of them.
        OnnxImportError: the rule's own error on the stand-in values (the trace then tries the next stand-ins).
    """
    fn = rule.__wrapped__  # type: ignore[attr-defined]
    gen: Any = active()
    if gen is None or gen.depth or not (has_data(args) or has_data(kwargs)):
        return fn(*args, **kwargs)
    hint = fn(*_hint(args), **_hint(kwargs))
    public, alias = _home(rule)
    gen.imports.add((public.rpartition(".")[0], alias))
    parts = (f"{alias}.{rule.__name__}(", *gen.call_args(args, kwargs), ")")
    var = gen.new_var(rule.__ember_host_rule__)  # type: ignore[attr-defined]
    gen.lines.append(Line((var,), parts))
    gen.reads.append(var)
    return _results(hint, var, "")


def _data_test(values: Any) -> bool:
    """:func:`ember_import.onnx.rules.from_data` under a trace: ``values`` hold a value read from the data."""
    gen = active()
    return gen is not None and not gen.depth and has_data(values)


set_trace_hook(record_rule, _data_test)
