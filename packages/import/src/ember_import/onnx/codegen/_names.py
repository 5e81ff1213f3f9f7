"""Python identifiers from ONNX names: module paths of the exporter's scopes, valid and unique.

A name from a model file reaches generated source only through :func:`identifier` (ASCII letters, digits and
``_``, never a keyword, a builtin or module the generated file uses, or longer than :data:`MAX_LENGTH`) and a
:class:`Namer` (unique), or as a ``repr`` literal; docstrings show it through :func:`doc_text`.
"""

from __future__ import annotations

import keyword
import re
import unicodedata
from collections.abc import Iterable

from ember.module import Module

__all__ = ["FIELD_RESERVED", "MAX_LENGTH", "Namer", "check_class_name", "doc_text", "identifier", "scope_path"]

#: names a generated variable must not shadow: builtins the generated code calls (``list``, ``float``, ``int``,
#: ``bool``, ``abs``) or ruff's A rules would flag, and the modules and names it imports or binds
_RESERVED = frozenset({"input", "id", "type", "len", "max", "min", "sum", "abs", "pow", "round", "list", "dict",
                       "tuple", "map", "filter", "range", "slice", "any", "all", "zip", "enumerate", "sorted",
                       "format", "hash", "iter", "next", "object", "self",
                       "float", "int", "bool", "str", "bytes", "print", "super", "cls", "ember", "annotations",
                       "math", "nn", "activation", "functional", "module", "Tensor", "Module", "Param", "config",
                       "device", "rules"})

#: field names a generated module must not use: its own methods and ``Module``'s attributes (a field named
#: ``forward`` or ``map`` would replace the method)
FIELD_RESERVED = frozenset({n for n in dir(Module) if not n.startswith("_")} | {"forward", "from_record"})

#: the longest identifier made from a model's name (longer ones are cut; :class:`Namer` keeps them unique)
MAX_LENGTH = 64


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
    s = s.lower()[:MAX_LENGTH].rstrip("_")
    if keyword.iskeyword(s) or keyword.issoftkeyword(s) or s in _RESERVED:
        s += "_"
    return s


#: module-level names of a generated file (its imports and constants) that its class must not take
_MODULE_NAMES = frozenset({
    "Bool", "Int", "Tensor", "Device", "Module", "Param", "HalfPrecisionSettings", "SOURCE_NAMES",
    "NamedMpkFileRecorder", "NamedMpkGzFileRecorder", "BinFileRecorder", "BinGzFileRecorder", "PrettyJsonFileRecorder",
    "JsonGzFileRecorder", "SafetensorsFileRecorder",
})


def check_class_name(name: str) -> None:
    """Check that ``name`` can be the generated module's class (and ``<name>Config`` its config).

    Raises:
        ModelGenError: ``name`` is not a Python identifier in normal form (NFKC), is a keyword, starts with
            ``_``, or names something the generated file imports or defines (``Tensor``, ``SOURCE_NAMES`` ...).
    """
    from ._errors import ModelGenError

    norm = unicodedata.normalize("NFKC", name) if isinstance(name, str) else ""
    taken = _RESERVED | _MODULE_NAMES
    if (norm != name or not norm.isidentifier() or keyword.iskeyword(norm) or norm.startswith("_") or norm in taken
            or f"{norm}Config" in taken or norm.startswith("PADDING_")):
        raise ModelGenError(f"class_name: {name!r} cannot name the generated class: expected a Python identifier "
                            "that is not a keyword, does not start with '_' and is not a name the generated file "
                            "imports or defines (Tensor, Module, Param, SOURCE_NAMES, ...); pick another, e.g. "
                            "'Model'.")


def doc_text(text: str, limit: int = 0) -> str:
    """``text`` as it may stand in a generated triple-quoted docstring or a ``#`` comment: backslashes and
    double quotes escaped, every character that is not printable (newlines, carriage returns, NUL, U+2028/U+2029
    and the other line separators) written as the text of its escape (``\\x0a``); cut to ``limit`` characters
    (plus ``...``) when ``limit`` is set."""
    if limit and len(text) > limit:
        text = text[:limit] + "..."
    out = []
    for ch in text:
        code = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append("\\\\" + (f"x{code:02x}" if code < 0x100 else f"u{code:04x}" if code < 0x10000
                                 else f"U{code:08x}"))
    return "".join(out)


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

    def __init__(self, taken: Iterable[str] | None = None) -> None:
        self._taken: set[str] = set(taken or ())

    def take(self, base: str) -> str:
        name, k = base, 1
        while name in self._taken:
            name = f"{base}_{k}"
            k += 1
        self._taken.add(name)
        return name

    def release(self, name: str) -> None:
        """Give ``name`` back (a variable renamed before the source is written)."""
        self._taken.discard(name)
