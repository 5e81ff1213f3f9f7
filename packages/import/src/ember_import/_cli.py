"""The ``ember-import`` command line: ``ember-import inspect FILE`` lists a model file's tensors;
``ember-import onnx-info MODEL.onnx`` describes an ONNX model (opsets, inputs and outputs with shapes, op
histogram, which ops Ember supports; exit status 3 when some are not); ``ember-import onnx2ember MODEL.onnx --out
DIR`` writes the model as Ember source (``DIR/model.py``) and its weights record (:class:`~.onnx.ModelGen`).

Output: one row per tensor (key, shape, dtype, element count), then the totals (tensors, parameters, bytes)
and the non-tensor values (epoch numbers, config entries). ``--json`` prints the same as JSON. The file is
memory-mapped, so inspecting a large checkpoint reads only its pickle/header.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from ._errors import ModelImportError
from ._limits import summary as bounded
from ._load import read_file

__all__ = ["main"]


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


def _inspect(path: str, top_level_key: str | None, as_json: bool) -> int:
    file = read_file(path, mmap=True)
    tensors, values = file.tensors, file.values
    if top_level_key is not None:
        pre = top_level_key + "."
        tensors = {k[len(pre):]: v for k, v in tensors.items() if k.startswith(pre)}
        values = {k[len(pre):]: v for k, v in values.items() if k.startswith(pre)}
        if not tensors and not values:
            raise ModelImportError(f"'{path}': no top-level key {top_level_key!r}.")
    params = sum(t.num_elements for t in tensors.values())
    nbytes = sum(t.num_elements * t.dtype.itemsize for t in tensors.values())
    if as_json:
        out = {
            "file": str(file.path), "format": file.format,
            "tensors": [{"key": k, "shape": list(t.shape), "dtype": str(t.dtype)} for k, t in tensors.items()],
            "num_tensors": len(tensors), "num_params": params, "num_bytes": nbytes,
            "values": {k: bounded(v, 10_000) for k, v in values.items()},
        }
        print(json.dumps(out, indent=2))
        return 0
    rows = [(k, str(list(t.shape)), str(t.dtype), f"{t.num_elements:,}") for k, t in tensors.items()]
    title = f"{file.path} ({file.format})"
    summary = f"{len(tensors)} tensors, {params:,} parameters, {nbytes:,} bytes ({_human(nbytes)})"
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # pragma: no cover - rich is optional
        print(title)
        w = max((len(r[0]) for r in rows), default=3)
        for r in rows:
            print(f"  {r[0]:<{w}}  {r[1]:<24} {r[2]:<9} {r[3]:>14}")
        print(summary)
        for k, v in values.items():
            print(f"  {k} = {bounded(v, 120)}")
        return 0
    table = Table(title=title)
    for col, justify in (("key", "left"), ("shape", "left"), ("dtype", "left"), ("elements", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for r in rows:
        table.add_row(*r)
    console = Console()
    console.print(table)
    console.print(summary)
    if values:
        vt = Table(title="non-tensor values")
        vt.add_column("key")
        vt.add_column("value")
        for k, v in values.items():
            vt.add_row(k, bounded(v, 120))
        console.print(vt)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ember-import``.

    Returns the exit status: 0 ok, 1 import error, 2 usage, 3 unsupported ONNX operators.
    """
    parser = argparse.ArgumentParser(
        prog="ember-import", description="Inspect PyTorch, safetensors and ONNX model files."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    ins = sub.add_parser("inspect", help="list the keys, shapes and dtypes of a .pt/.pth or .safetensors file")
    ins.add_argument("file")
    ins.add_argument("--top-level-key", default=None, help="only the entries under this top-level key")
    ins.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info = sub.add_parser("onnx-info", help="an ONNX model's opsets, inputs, outputs, op histogram and support")
    info.add_argument("file")
    info.add_argument("--json", action="store_true", help="print JSON instead of text")
    gen = sub.add_parser("onnx2ember", help="write an ONNX model as an Ember module (model.py) and its weights")
    gen.add_argument("file")
    gen.add_argument("--out", required=True, help="output folder (created if missing)")
    gen.add_argument("--name", default="Model", help="class name of the generated module (default: Model)")
    gen.add_argument("--record-type", default="mpk", help="weights format: mpk (default), mpk.gz, bin, bin.gz, "
                     "json, json.gz or safetensors")
    gen.add_argument("--half", action="store_true", help="store float weights as float16")
    gen.add_argument("--development", action="store_true", help="also write the IR as model.ir.txt")
    args = parser.parse_args(argv)
    try:
        if args.command == "onnx2ember":
            from .onnx import ModelGen

            py = (ModelGen().input(args.file).out_dir(args.out).class_name(args.name).record_type(args.record_type)
                  .half_precision(args.half).development(args.development).run())
            print(f"wrote {py} and {py.parent / ('model.' + args.record_type)}")
            return 0
        if args.command == "onnx-info":
            from .onnx._info import print_info

            return print_info(args.file, args.json)
        return _inspect(args.file, args.top_level_key, args.json)
    except (ModelImportError, OSError) as exc:
        print(f"ember-import: error: {exc}", file=sys.stderr)
        return 1
