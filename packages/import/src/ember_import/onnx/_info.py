"""``python -m ember_import onnx-info MODEL.onnx``: what a model holds and whether Ember supports it."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ._parse import read_model
from ._registry import lookup

__all__ = ["describe", "print_info"]


def describe(model: Any) -> dict[str, Any]:
    """A JSON-ready description of ``model`` (path, bytes or ``ModelProto``).

    Keys: ``source``, ``producer``, ``ir_version``, ``opsets`` (domain -> version), ``inputs``/``outputs``
    (name, dtype, shape), ``initializers`` (count), ``parameters`` (float elements), ``ops`` (one entry per
    ``(domain, op_type)``: ``count``, ``supported``), ``unsupported`` (op names), ``supported`` (bool).

    Raises:
        OnnxImportError: the file cannot be parsed or checked.
    """
    parsed = read_model(model)
    g = parsed.graph
    hist: Counter[tuple[str, str]] = Counter((n.domain or "ai.onnx", n.op_type) for n in g.walk())
    ops = []
    for (domain, op), count in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])):
        supported = lookup(op, domain, parsed.opsets.get(domain, 0)) is not None
        ops.append({"domain": domain, "op_type": op, "count": count, "supported": supported})

    def io(v: Any) -> dict[str, Any]:
        shape = None if v.shape is None else [d for d in v.shape]
        return {"name": v.name, "kind": v.kind, "dtype": None if v.dtype is None else str(v.dtype), "shape": shape}

    floats = [d for d in g.initializers.values() if d.dtype.is_float]
    return {
        "source": parsed.source,
        "producer": parsed.producer,
        "ir_version": parsed.ir_version,
        "opsets": parsed.opsets,
        "inputs": [io(v) for v in g.inputs],
        "outputs": [io(v) for v in g.outputs],
        "initializers": len(g.initializers),
        "parameters": sum(d.num_elements for d in floats),
        "nodes": sum(hist.values()),
        "ops": ops,
        "unsupported": [o["op_type"] for o in ops if not o["supported"]],
        "supported": all(o["supported"] for o in ops),
    }


def print_info(model: Any, as_json: bool = False) -> int:
    """Print :func:`describe` as text (or JSON); returns 0 when every op is supported, else 3."""
    info = describe(model)
    if as_json:
        print(json.dumps(info, indent=2))
        return 0 if info["supported"] else 3
    opsets = ", ".join(f"{d} {v}" for d, v in sorted(info["opsets"].items()))
    print(f"{info['source']}  (producer {info['producer'] or '?'}, IR version {info['ir_version']}, opsets: {opsets})")

    def shape(v: dict[str, Any]) -> str:
        if v["kind"] != "tensor":
            return f"{v['kind']}<{v['dtype'] or '?'}>"
        dims = "?" if v["shape"] is None else "[" + ", ".join("?" if d is None else str(d) for d in v["shape"]) + "]"
        return f"{v['dtype'] or '?'}{dims}"

    for title, key in (("inputs", "inputs"), ("outputs", "outputs")):
        print(f"{title}:")
        for v in info[key]:
            print(f"  {v['name']}: {shape(v)}")
    print(f"initializers: {info['initializers']} ({info['parameters']:,} float parameters); nodes: {info['nodes']}")
    print(f"{'operator':<32} {'count':>6}  supported")
    for o in info["ops"]:
        name = o["op_type"] if o["domain"] == "ai.onnx" else f"{o['domain']}.{o['op_type']}"
        print(f"{name:<32} {o['count']:>6}  {'yes' if o['supported'] else 'NO'}")
    if info["supported"]:
        print("every operator is supported")
        return 0
    print(f"unsupported: {', '.join(info['unsupported'])}")
    return 3
