"""Writing ``model.py``: the module class, its config and ``forward`` as straight-line code."""

from __future__ import annotations

import ast
import builtins
import re
import textwrap

from .._ir import ValueInfo
from ._errors import ModelGenError
from ._expr import literal
from ._gen import Gen
from ._io import input_annotation
from ._names import check_class_name, doc_text
from ._rules import RULE_MODULES

__all__ = ["RECORDERS", "check_record_type", "render"]

#: record type (file extension) -> Ember recorder class (``ember.record``)
RECORDERS = {
    "mpk": "NamedMpkFileRecorder", "mpk.gz": "NamedMpkGzFileRecorder", "bin": "BinFileRecorder",
    "bin.gz": "BinGzFileRecorder", "json": "PrettyJsonFileRecorder", "json.gz": "JsonGzFileRecorder",
    "safetensors": "SafetensorsFileRecorder",
}


def check_record_type(kind: str) -> None:
    """Check that ``kind`` is a record type (a key of :data:`RECORDERS`).

    Raises:
        ModelGenError: an unknown type (the message lists the known ones).
    """
    if kind not in RECORDERS:
        raise ModelGenError(f"record_type: unknown type {kind!r:.40}; expected one of {', '.join(RECORDERS)}.")


#: the most characters of a model's name shown in a docstring
_SHOWN = 80


def _describe(info: ValueInfo, known: set[str] | None = None) -> str:
    """``float32[batch, 3]``: a dim named other than the inputs' dims (``known``; an exporter's or shape
    inference's name for a computed size) is shown as ``?``."""
    dt = str(info.dtype) if info.dtype is not None else "?"
    if info.kind in ("sequence", "optional") and info.elem is not None:  # list[float32[n]], float32[4] | None
        inner = _describe(info.elem, known)
        return f"list[{inner}]" if info.kind == "sequence" else f"{inner} | None"
    if info.kind != "tensor":
        return f"{info.kind}<{dt}>"
    if info.shape is None:
        return dt

    def dim(d: object) -> str:
        if d is None or (known is not None and isinstance(d, str) and d not in known):
            return "?"
        return doc_text(str(d), _SHOWN)

    return f"{dt}[{', '.join(dim(d) for d in info.shape)}]"


def _doc(text: str, indent: str, width: int = 120) -> list[str]:
    """A one-line docstring ``\"\"\"text\"\"\"`` at ``indent``, or its words over lines of at most ``width``."""
    one = f'{indent}"""{text}"""'
    if len(one) <= width:
        return [one]
    lines = textwrap.wrap(text, width - len(indent) - 3, break_long_words=False, break_on_hyphens=False)
    return [f'{indent}"""{lines[0]}', *(indent + ln for ln in lines[1:]), f'{indent}"""']


def _wrap(items: list[str], indent: str, width: int = 120) -> list[str]:
    """``items`` joined by ``", "`` over as few lines of at most ``width`` characters as fit."""
    lines: list[str] = []
    cur = indent
    for it in items:
        piece = it + ","
        if cur != indent and len(cur) + 1 + len(piece) > width:
            lines.append(cur)
            cur = indent
        cur = cur + ("" if cur == indent else " ") + piece
    if cur != indent:
        lines.append(cur)
    return lines


def _mask(text: str) -> str:
    """``text`` with the inside of its string literals (quotes included) blanked to ``_``: brackets and commas
    of the result are the code's own."""
    out, quote, escaped = [], "", False
    for ch in text:
        if quote:
            out.append("_")
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            out.append("_")
        else:
            out.append(ch)
    return "".join(out)


def _split_args(text: str) -> list[str]:
    """``text`` split at its top-level commas (outside brackets and strings)."""
    parts, depth, last = [], 0, 0
    for i, ch in enumerate(_mask(text)):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[last:i].strip())
            last = i + 1
    if text[last:].strip():
        parts.append(text[last:].strip())
    return parts


def _same_code(a: str, b: str) -> bool:
    try:
        return ast.dump(ast.parse(a.strip())) == ast.dump(ast.parse(textwrap.dedent(b)))
    except SyntaxError:
        return False


def _fit(line: str, indent: str, width: int = 120) -> list[str]:
    """``indent + line``, wrapped at the arguments of its first call when longer than ``width`` (black's style:
    the arguments on one line of their own, else one per line); kept whole unless the wrapped text parses to
    the same code."""
    if len(indent) + len(line) <= width:
        return [indent + line]
    text = line.lstrip(" ")
    if text != line:  # a line of a block (``raise`` under an ``if``): its own indent is the block's
        return _fit(text, indent + " " * (len(line) - len(text)), width)
    code = _mask(line)
    # the top-level call (or list) with the longest arguments: ``self.c.val().slice([...])`` wraps at ``slice``
    best, depth, open_at = (-1, -1), 0, -1
    for i, ch in enumerate(code):
        if ch in "([{":
            if depth == 0 and (ch == "[" or (i and (code[i - 1].isalnum() or code[i - 1] in "_])"))):
                open_at = i
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0 and open_at >= 0:
                if i - open_at > best[1] - best[0]:
                    best = (open_at, i)
                open_at = -1
    start, end = best
    if start < 0 or end - start < 2:
        return [indent + line]
    head, args, tail = line[: start + 1], line[start + 1: end], line[end:]
    inner = indent + "    "
    if len(inner) + len(args) <= width:
        wrapped = [indent + head, inner + args, indent + tail]
    else:
        wrapped = [indent + head, *(w for a in _split_args(args) for w in _fit(a + ",", inner, width)), indent + tail]
    return wrapped if _same_code(line, "\n".join(wrapped)) else [indent + line]


def _fit_def(line: str, indent: str) -> list[str]:
    """A ``def ...:`` line wrapped as :func:`_fit` wraps a call (checked with a ``...`` body, which it drops)."""
    if len(indent) + len(line) <= 120:
        return [indent + line]
    out = _fit(line + " ...", indent)
    out[-1] = out[-1].removesuffix(" ...")
    return out


def render(g: Gen, lines: list[str], *, class_name: str, source_file: str, record_file: str, record_type: str,
           half: bool, inputs: list[tuple[str, ValueInfo]], outputs: list[tuple[str, ValueInfo]], n_params: int) -> str:
    """The text of ``model.py``.

    Raises:
        ModelGenError: ``class_name`` is not an identifier the file can use, an unknown ``record_type``, or
            the text does not parse (a bug in ModelGen; nothing is written).
    """
    check_class_name(class_name)
    check_record_type(record_type)
    source_file, record_file = doc_text(source_file, _SHOWN), doc_text(record_file, _SHOWN)
    methods = [ln for m in g.methods for ln in ["", *m.lines()]]
    body = "\n".join([*lines, *methods]) + "\n" + "\n".join(e for e, _ in outputs)
    config_name = f"{class_name}Config"
    recorder = RECORDERS[record_type]
    settings = "HalfPrecisionSettings()" if half else ""
    used = "\n".join([body, *(f.init for f in g.fields), *g.constants_src])  # forward, init(device), constants
    from_ember = {name for mod, name in g.imports if mod == "ember"}
    ember_names = sorted({n for n in ("Bool", "Int", "Tensor") if re.search(rf"\b{n}\b", used)} | {"Tensor"}
                         | {n for n in from_ember if re.search(rf"\b{n}\b", used)})
    if any(f.annotation.startswith("nn.") or "nn." in f.init for f in g.fields):
        ember_names.append("nn")
    # isort's order by type, then case-insensitive (ruff's default: ``Distribution, DType``)
    ember_names.sort(key=lambda n: (0 if n.isupper() else 1 if n[:1].isupper() else 2, n.lower(), n))
    tensor_mods = [m for m in ("activation", "functional") if re.search(rf"\b{m}\.", body)]
    record_names = sorted({recorder} | ({"HalfPrecisionSettings"} if half else set()))
    uses_param = any(f.annotation == "Param" for f in g.fields)

    sig_in = ", ".join(f"{v}: {input_annotation(i)}" for v, i in inputs)
    types = g.output_types or ["Tensor"] * len(outputs)
    ret = types[0] if len(outputs) == 1 else f"tuple[{', '.join(types)}]"
    known = {d for _, i in inputs for d in (i.shape or ()) if isinstance(d, str)}
    shapes_in = ", ".join(f"``{v}`` {_describe(i, known)}" for v, i in inputs) or "(no input)"
    shapes_out = ", ".join(f"``{doc_text(i.name, _SHOWN)}`` {_describe(i, known)}" for _, i in outputs)

    out: list[str] = [
        f'"""{class_name}: generated from ``{source_file}`` by ``ember_import.onnx.ModelGen`` (ai.onnx opset '
        f"{g.opset}); edit freely.",
        "",
        f"{n_params:,} parameters; the weights are in ``{record_file}`` (``{class_name}.from_record(path, device)``),",
        f"``{config_name}().init(device)`` builds the same network with fresh weights.",
        *(line for note in g.doc_notes for line in ("", *textwrap.wrap(note, 116))),
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    out.append(f"from ember import {', '.join(ember_names)}")
    out.append("from ember.backend import Device")
    out.append("from ember.config import config")
    out.append(f"from ember.module import Module{', Param' if uses_param else ''}")
    out.append(f"from ember.record import {', '.join(record_names)}")
    if tensor_mods:
        out.append(f"from ember.tensor import {', '.join(tensor_mods)}")
    out += _rule_imports(g.imports, body)
    out += ["", f"__all__ = [{literal(class_name)}, {literal(config_name)}]", ""]
    renamed = [(f.name, f.source) for f in g.fields
               if f.source and f.layer != "Param" and f.source != f.name.replace("_", ".")]
    if renamed:
        out += ["#: field -> the module path its weights had in the source model, where it is not the field's name",
                "#: with '_' read as '.' (ember_import.onnx.source_key_remap uses it to export back to PyTorch)",
                "SOURCE_NAMES = {"]
        out += _wrap([f"{literal(a)}: {literal(b)}" for a, b in renamed], "    ")
        out += ["}", ""]
    if g.constants_src:
        out += ["#: layer settings used more than once", *g.constants_src, ""]
    out += ["", f"class {class_name}(Module):", f'    """The network of ``{source_file}``.', "",
            *textwrap.wrap(f"Shapes: {shapes_in} -> {shapes_out}.", 120, initial_indent="    ",
                           subsequent_indent="    ", break_long_words=False, break_on_hyphens=False),
            '    """', ""]
    out += [f"    {f.name}: {f.annotation}" for f in g.fields]
    out += ["", *_fit_def(f"def forward(self{', ' if sig_in else ''}{sig_in}) -> {ret}:", "    "),
            *_doc(f"Shapes: {shapes_in} -> {shapes_out}.", "        ")]
    for line in lines:
        out += _fit(line, "        ")
    rets = [e for e, _ in outputs]
    out.append(f"        return {rets[0] if len(rets) == 1 else '(' + ', '.join(rets) + ')'}")
    for line in methods:  # control flow (:mod:`._control`)
        text = line.lstrip(" ")
        out += _fit(text, " " * (4 + len(line) - len(text))) if text else [""]
    out += ["", "    @classmethod",
            f"    def from_record(cls, path: str, device: Device) -> {class_name}:",
            f'        """The network with the weights saved at ``path`` (``{record_file}``), on ``device``."""',
            f"        model = {config_name}().init(device)",
            f"        return model.load_file(path, {recorder}({settings}), device)",
            "", "", "@config", f"class {config_name}:",
            f'    """Configuration of :class:`{class_name}` (the architecture is fixed by the source model)."""',
            "", f"    def init(self, device: Device) -> {class_name}:",
            '        """The network on ``device`` with fresh weights (each layer\'s default initializer)."""',
            f"        return {class_name}("]
    for f in g.fields:
        out += _fit(f"{f.name}={f.init},", "            ")
    out += ["        )", ""]
    text = "\n".join(out)
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise ModelGenError(f"the generated source does not parse ({exc}); nothing was written. This is a bug in "
                            "ModelGen, please report it with the model.") from exc
    undefined = _undefined_names(tree)
    if undefined:
        raise ModelGenError(f"the generated source uses names it never defines or imports: {', '.join(undefined)}; "
                            "nothing was written. This is a bug in ModelGen, please report it with the model.")
    return text


def _rule_imports(imports: set[tuple[str, str]], body: str) -> list[str]:
    """``from ember_import.onnx import rules`` when ``body`` calls a host rule (:mod:`._rules`), else nothing."""
    mods = sorted((mod, name) for mod, name in imports if (f"{mod}.{name}") in RULE_MODULES)
    return [f"from {mod} import {name}" for mod, name in mods if re.search(rf"\b{name}\.", body)]


def _undefined_names(tree: ast.Module) -> list[str]:
    """Names read somewhere in ``tree`` but bound nowhere in it (imports, assignments, definitions, arguments)
    and not builtins: what importing the file would fail on (generation never imports it to find out)."""
    bound = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
    return sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound)
