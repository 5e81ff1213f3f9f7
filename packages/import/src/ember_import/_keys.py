"""Key transformations applied when loading: regex remapping and contiguous ``Sequential`` indices.

Both follow Burn (``burn-store``'s ``KeyRemapper`` and ``map_indices_contiguous``; ``burn-import``'s
``LoadArgs::with_key_remap``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ._errors import ModelImportError

__all__ = ["compile_remap", "remap_key", "map_indices_contiguous"]

_DOLLAR = re.compile(r"\$(\d+|\{\w+\})")


def compile_remap(pattern: str, replacement: str) -> tuple[re.Pattern[str], str]:
    """Compile one ``(pattern, replacement)`` rule.

    The replacement uses Python's syntax (``\\1``, ``\\g<name>``); Burn's ``$1`` / ``${name}`` are accepted too.

    Raises:
        ModelImportError: the pattern is not a valid regular expression (named with the reason).
    """
    try:
        rx = re.compile(pattern)
    except re.error as exc:
        raise ModelImportError(f"key remap pattern {pattern!r} is not a valid regular expression: {exc}.") from None
    repl = _DOLLAR.sub(lambda m: "\\g<" + m.group(1).strip("{}") + ">", replacement)
    try:
        rx.sub(repl, "")  # validates group references against the pattern where the engine can
    except (re.error, IndexError) as exc:
        raise ModelImportError(f"key remap replacement {replacement!r} for {pattern!r} is invalid: {exc}.") from None
    return rx, repl


def remap_key(key: str, rules: Sequence[tuple[re.Pattern[str], str]]) -> str:
    """Apply every rule in order, each replacing all its matches (Burn's ``replace_all``)."""
    for rx, repl in rules:
        try:
            key = rx.sub(repl, key)
        except (re.error, IndexError) as exc:
            raise ModelImportError(f"key remap {rx.pattern!r} -> {repl!r} fails on {key!r}: {exc}.") from None
    return key


def _is_index(part: str) -> bool:
    """A key part that is a list index: ASCII digits, at most 18 (a longer run is a name, and Python refuses to
    convert more than 4300 digits to an int)."""
    return part.isdigit() and part.isascii() and len(part) <= 18


def map_indices_contiguous(keys: Iterable[str]) -> dict[str, str]:
    """Renumber numeric path components to ``0, 1, 2, ...`` per position, keeping their order.

    A PyTorch ``nn.Sequential(Conv2d, ReLU, Conv2d, ReLU, Conv2d)`` has parameters at ``fc.0``, ``fc.2``,
    ``fc.4`` only; an Ember list of three layers expects ``fc.0``, ``fc.1``, ``fc.2``. Indices are grouped by
    the (original) path before them, so nested sequences are renumbered independently::

        feature.layers.0.block.0.weight -> feature.layers.0.block.0.weight
        feature.layers.0.block.2.weight -> feature.layers.0.block.1.weight
        feature.layers.2.block.0.weight -> feature.layers.1.block.0.weight

    Source: Burn, ``burn_store::map_indices_contiguous`` (on by default for PyTorch files, off for safetensors).

    Returns:
        ``{original_key: new_key}`` for every key.
    """
    keys = list(keys)
    positions: dict[str, set[int]] = {}
    split = [k.split(".") for k in keys]
    for parts in split:
        for i, part in enumerate(parts):
            if _is_index(part):
                positions.setdefault(".".join(parts[:i]), set()).add(int(part))
    renumber = {prefix: {old: new for new, old in enumerate(sorted(idx))} for prefix, idx in positions.items()}
    out: dict[str, str] = {}
    for key, parts in zip(keys, split):
        new = list(parts)
        for i, part in enumerate(parts):
            if _is_index(part):
                new[i] = str(renumber[".".join(parts[:i])][int(part)])
        out[key] = ".".join(new)
    return out
