"""Python identifiers from ONNX names: module paths of the exporter's scopes, valid and unique."""

from __future__ import annotations

import keyword
import re

__all__ = ["Namer", "identifier", "scope_path"]

#: builtins a generated name must not shadow (ruff's A rules would flag them; readers would trip on them)
_RESERVED = frozenset({"input", "id", "type", "len", "max", "min", "sum", "abs", "pow", "round", "list", "dict",
                       "tuple", "map", "filter", "range", "format", "hash", "iter", "next", "object", "self",
                       "math", "nn", "Tensor", "Module", "Param", "config", "device"})


def identifier(text: str, fallback: str = "value") -> str:
    """``text`` as a lower-case Python identifier: ``"/layer1/layer1.0/conv1"`` -> ``"layer1_0_conv1"``."""
    s = re.sub(r"[^0-9a-zA-Z_]+", "_", text).strip("_")
    s = re.sub(r"_+", "_", s)
    if not s:
        s = fallback
    if s[0].isdigit():
        s = f"{fallback}_{s}"
    if s != s.lower() and not s.isupper():
        s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s)
    s = s.lower()
    if keyword.iskeyword(s) or s in _RESERVED:
        s += "_"
    return s


def scope_path(node_name: str) -> str:
    """The module path of an exporter node name: ``"/layer1/layer1.0/conv1/Conv_3"`` -> ``"layer1.0.conv1"``.

    PyTorch's exporter names a node ``/<scope>/<scope>/.../<Op>[_k]``, each scope the attribute path of a
    submodule, a child repeating its parent's name (``layer1`` then ``layer1.0``; ``downsample`` then
    ``downsample.0``). The op part is dropped."""
    parts = [p for p in node_name.split("/") if p]
    if len(parts) <= 1:
        return ""
    path: list[str] = []
    for p in parts[:-1]:
        last = path[-1] if path else ""
        if last and (p == last or p.startswith(last + ".")):
            path[-1] = p  # a child's scope repeats its parent's name: /downsample/downsample.0
        elif path and p.startswith(".".join(path) + "."):
            path = [p]  # a scope that spells the whole path: /layer1/layer1.0
        else:
            path.append(p)
    return ".".join(path)


class Namer:
    """Hands out unique identifiers: the second ``conv`` is ``conv_1``."""

    def __init__(self, taken: set[str] | None = None) -> None:
        self._taken: set[str] = set(taken or ())

    def take(self, base: str) -> str:
        name, k = base, 1
        while name in self._taken:
            name = f"{base}_{k}"
            k += 1
        self._taken.add(name)
        return name
