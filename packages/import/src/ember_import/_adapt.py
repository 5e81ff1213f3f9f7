"""Adapting a flat PyTorch-convention tensor dict to an Ember module, driven by the module's structure.

:func:`adapt_to_module` walks the target module tree (Burn's adapters know the record type; here the module
instance plays that role): at each node it learns which Ember layer holds the keys under that dotted prefix,
applies the user's :class:`~ember_import.Adapter` with ``entry.container`` set to that layer's class name, then
the layer's PyTorch rule (:mod:`ember_import._layers`). Union ("enum") fields pick the variant whose keys and
shapes match the file (Burn's enum-module import).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from ember import TensorData
from ember.module import Module, Param, RunningState

from ._adapter import Adapter, TensorEntry
from ._errors import ModelImportError
from ._layers import STACKED, rule_for

__all__ = ["AdaptResult", "adapt_to_module", "module_leaves", "union_members"]

logger = logging.getLogger("ember_import")

Flat = dict[str, TensorData]


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def _under(key: str, prefix: str) -> bool:
    return not prefix or key == prefix or key.startswith(prefix + ".")


def module_leaves(node: Any, prefix: str = "") -> dict[str, tuple[int, ...]]:
    """``{dotted path: shape}`` of every Param and RunningState under ``node`` (a module, container or leaf)."""
    out: dict[str, tuple[int, ...]] = {}

    def walk(v: Any, p: str) -> None:
        if isinstance(v, (Param, RunningState)):
            out[p] = tuple(v.val().shape)
        elif isinstance(v, Module):
            for name in type(v).__ember_fields__:
                walk(getattr(v, name), _join(p, name))
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, _join(p, str(k)))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, _join(p, str(i)))

    walk(node, prefix)
    return out


@functools.lru_cache(maxsize=4096)
def union_members(cls: type, field: str) -> tuple[type, ...]:
    """The Module classes of a field annotated as a union of two or more of them (``Conv2d | DwsConv``).

    Only a field's own annotation counts (not unions inside ``list[...]``); annotations that cannot be
    resolved (classes local to a function) count as no union.
    """
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - unresolvable annotations: not a union we can read
        return ()
    tp = hints.get(field)
    origin = typing.get_origin(tp)
    if origin is not typing.Union and origin is not getattr(types, "UnionType", None):
        return ()
    members = tuple(a for a in typing.get_args(tp) if isinstance(a, type) and issubclass(a, Module))
    return members if len(members) >= 2 else ()


@dataclasses.dataclass
class AdaptResult:
    """What :func:`adapt_to_module` produced.

    Attributes:
        module: the module to load into (union fields may hold another variant than before).
        tensors: Ember-layout dotted key -> tensor, for keys the module has a place for.
        unused: the file's original keys that nothing in the module matched.
        unused_tensors: those tensors, by their (remapped) key.
        origins: Ember key -> the file's original key.
        variants: dotted path of each union field -> the class of the variant chosen.
    """

    module: Any
    tensors: Flat
    unused: list[str]
    origins: dict[str, str]
    variants: dict[str, str]
    unused_tensors: Flat = dataclasses.field(default_factory=dict)


class _Walker:
    def __init__(self, adapter: Adapter | None, pytorch: bool, candidates: Mapping[str, Sequence[Any]],
                 device: Any) -> None:
        self.adapter = adapter
        self.pytorch = pytorch
        self.candidates = candidates
        self.device = device
        self.variants: dict[str, str] = {}

    # the user's entry-level adapter, with the container known
    def user_adapt(self, src: Flat, prefix: str, node: Any, origins: dict[str, str]) -> None:
        """Run the entry adapter on the keys ``node`` owns directly (not through a sub-module field)."""
        if self.adapter is None:
            return
        container = type(node).__name__
        start = len(prefix) + 1 if prefix else 0
        owned = []
        for key in src:
            if not _under(key, prefix) or key == prefix:
                continue
            first, _, rest = key[start:].partition(".")
            child = getattr(node, first, None) if first in type(node).__ember_fields__ else None
            if rest and isinstance(child, (Module, list, tuple, dict)):
                continue
            owned.append(key)
        for key in owned:
            data = src.pop(key)
            orig = origins.get(key, key)
            entry = self.adapter.adapt(TensorEntry(key, data, orig, container))
            if entry is None:
                origins.pop(key, None)
                continue
            if not isinstance(entry, TensorEntry):
                raise ModelImportError(f"adapter {self.adapter!r} returned {type(entry).__name__} for {orig!r}.")
            src[entry.key] = entry.data
            if entry.key != key:
                origins.pop(key, None)
                origins[entry.key] = orig

    def walk(self, node: Any, prefix: str, src: Flat, out: Flat, origins: dict[str, str]) -> Any:
        if isinstance(node, (Param, RunningState)):
            if prefix in src:
                out[prefix] = src.pop(prefix)
            return node
        if isinstance(node, Module):
            cls = type(node)
            names = cls.__ember_fields__
            self.user_adapt(src, prefix, node, origins)
            rule = rule_for(node) if self.pytorch else None
            if rule is not None:
                rule.to_ember(node, prefix, src, out)
            changes = {}
            for name in names:
                value = getattr(node, name)
                p = _join(prefix, name)
                if union_members(cls, name) and isinstance(value, Module):  # type: ignore[arg-type]
                    value = self.choose(value, p, src, origins, cls, name)
                new = self.walk(value, p, src, out, origins)
                if new is not getattr(node, name):
                    changes[name] = new
            return node.replace(**changes) if changes else node
        if isinstance(node, (list, tuple)):
            if self.pytorch and node and all(isinstance(x, STACKED) for x in node):
                _unstack(prefix, len(node), src, origins)
            new_items = [self.walk(x, _join(prefix, str(i)), src, out, origins) for i, x in enumerate(node)]
            if all(a is b for a, b in zip(new_items, node)):
                return node
            return new_items if isinstance(node, list) else type(node)(new_items)
        if isinstance(node, dict):
            new_map = {k: self.walk(x, _join(prefix, str(k)), src, out, origins) for k, x in node.items()}
            if all(new_map[k] is x for k, x in node.items()):
                return node
            return type(node)(new_map.items())
        return node

    def fits(self, candidate: Any, prefix: str, src: Flat, origins: dict[str, str]) -> tuple[bool, str]:
        trial = {k: v for k, v in src.items() if _under(k, prefix)}
        out: Flat = {}
        self.walk(candidate, prefix, trial, out, dict(origins))
        want = module_leaves(candidate, prefix)
        missing = sorted(set(want) - set(out))
        wrong = [f"{k} {list(out[k].shape)} vs {list(s)}" for k, s in want.items()
                 if k in out and tuple(out[k].shape) != s]
        extra = sorted(trial)
        if not (missing or wrong or extra):
            return True, ""
        why = "; ".join(filter(None, [
            f"missing {missing[:4]}" if missing else "", f"shapes {wrong[:4]}" if wrong else "",
            f"unused {extra[:4]}" if extra else "",
        ]))
        return False, why

    def choose(self, current: Any, prefix: str, src: Flat, origins: dict[str, str], owner: type,
               field: str) -> Any:
        """The union variant at ``prefix`` whose keys and shapes the file matches."""
        if not any(_under(k, prefix) for k in src):
            return current  # nothing in the file for this field: keep it (reported missing by the loader)
        options = [current]
        for c in self.candidates.get(prefix, ()):
            inst = c if isinstance(c, Module) else c.init(self.device)
            options.append(inst)
        reasons = []
        for opt in options:
            ok, why = self.fits(opt, prefix, src, origins)
            if ok:
                self.variants[prefix] = type(opt).__name__
                return opt
            reasons.append(f"{type(opt).__name__}: {why}")
        if len(options) > 1:
            raise ModelImportError(
                f"union field {prefix!r}: no variant matches the file's keys and shapes ("
                + " | ".join(reasons) + "). Give a matching candidate with record.with_variants({prefix!r}: [...])."
            )
        start = len(prefix) + 1 if prefix else 0
        names = {k[start:].split(".", 1)[0] for k in src if _under(k, prefix) and k != prefix}
        guess = [m.__name__ for m in union_members(owner, field)
                 if m is not type(current) and names <= set(getattr(m, "__ember_fields__", ()))]
        logger.warning(
            "union field %r holds a %s, which the file's keys and shapes do not fit (%s)%s; build the model with the "
            "matching variant or pass candidates with record.with_variants({%r: [...]}).", prefix,
            type(current).__name__, reasons[0], f"; they look like a {' or '.join(guess)}" if guess else "", prefix)
        return current


def _unstack(prefix: str, n: int, src: Flat, origins: dict[str, str]) -> None:
    """``p.weight_ih_l{k}[_reverse]`` (``nn.LSTM(num_layers=n)``) -> ``p.{k}.weight_ih_l0[_reverse]``."""
    for k in range(n):
        for base in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            for rev in ("", "_reverse"):
                key = _join(prefix, f"{base}_l{k}{rev}")
                if key in src:
                    new = _join(prefix, f"{k}.{base}_l0{rev}")
                    src[new] = src.pop(key)
                    origins[new] = origins.pop(key, key)


def adapt_to_module(tensors: Mapping[str, TensorData], module: Any, *, pytorch: bool = True,
                    adapter: Adapter | None = None, candidates: Mapping[str, Sequence[Any]] | None = None,
                    device: Any = None, origins: Mapping[str, str] | None = None) -> AdaptResult:
    """Convert flat ``tensors`` (dotted keys, already remapped) to ``module``'s layout.

    Args:
        tensors: key -> tensor, in PyTorch's convention when ``pytorch`` (else already Ember's).
        module: the target Ember module; its tree says which layer owns each key.
        pytorch: apply the PyTorch -> Ember layer rules (:mod:`ember_import._layers`); False keeps names/layouts.
        adapter: an entry-level :class:`~ember_import.Adapter` applied first, with ``container`` set.
        candidates: for union fields, ``{dotted path: [module or config, ...]}`` variants to choose from.
        device: where config candidates are initialized.
        origins: key -> the file's original key (for reporting).

    Returns:
        an :class:`AdaptResult`.

    Raises:
        ModelImportError: a packed tensor of the wrong size, a non-2-D Linear weight, no union variant fitting.
    """
    src: Flat = dict(tensors)
    orig = {k: (origins or {}).get(k, k) for k in src}
    walker = _Walker(adapter, pytorch, candidates or {}, device)
    out: Flat = {}
    new_module = walker.walk(module, "", src, out, orig)
    return AdaptResult(new_module, out, [orig.get(k, k) for k in src], {k: orig.get(k, k) for k in out},
                       walker.variants, src)
