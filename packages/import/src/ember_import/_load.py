"""``load_tensors``: read a file and apply ``LoadArgs`` (top-level key, remaps, indices, filter, adapter, debug
print)."""

from __future__ import annotations

import logging
import os
from typing import Any

from ember import TensorData

from ._adapter import TensorEntry
from ._debug import print_keys
from ._errors import ModelImportError
from ._filter import ApplyResult
from ._imported import ImportedFile
from ._keys import compile_remap, map_indices_contiguous, remap_key
from ._limits import summary
from ._load_args import LoadArgs
from ._pt_tar import is_tar
from ._safetensors_read import read_safetensors

__all__ = ["LoadResult", "load_tensors", "read_file", "detect_format", "unflatten"]

logger = logging.getLogger("ember_import")


def detect_format(path: str | os.PathLike[str]) -> str:
    """``"pytorch"`` or ``"safetensors"`` from the file's first bytes (not its extension).

    Raises:
        FileNotFoundError: no such file.
        ModelImportError: neither format.
    """
    with open(path, "rb") as f:
        head = f.read(512)
    pickled = head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")) or pickled or is_tar(head):
        return "pytorch"
    if len(head) >= 9 and head[8:9] == b"{":
        return "safetensors"
    raise ModelImportError(
        f"'{path}': neither a PyTorch file (zip, pickle or tar) nor a safetensors file (starts with {head[:8]!r})."
    )


def read_file(path: str | os.PathLike[str], *, mmap: bool = False, max_tensor_bytes: int | None = None,
              max_bytes: int | None = None) -> ImportedFile:
    """Read a ``.pt``/``.pth`` or ``.safetensors`` file (format detected from its bytes)."""
    if detect_format(path) == "pytorch":
        from ._pt import read_pytorch

        return read_pytorch(path, mmap=mmap, max_tensor_bytes=max_tensor_bytes, max_bytes=max_bytes)
    return read_safetensors(path, mmap=mmap)


class LoadResult:
    """Tensors loaded with ``LoadArgs``.

    Attributes:
        tensors: final dotted key -> ``TensorData``, in file order.
        original_keys: final key -> the key in the file.
        values: non-tensor leaves under the top-level key (epoch, config entries), by dotted key.
        file: the :class:`ImportedFile` read.
        apply_result: an :class:`~ember_import.ApplyResult`: ``applied`` (the final keys), ``skipped`` (keys the
            ``LoadArgs`` filter left out, after remapping); ``missing``/``unused`` are for loads into a module.
    """

    __slots__ = ("tensors", "original_keys", "values", "file", "apply_result")

    def __init__(self, tensors: dict[str, TensorData], original_keys: dict[str, str], values: dict[str, Any],
                 file: ImportedFile, apply_result: ApplyResult | None = None) -> None:
        self.tensors = tensors
        self.original_keys = original_keys
        self.values = values
        self.file = file
        self.apply_result = apply_result if apply_result is not None else ApplyResult(applied=list(tensors))

    def nested(self) -> dict[str, Any]:
        """The tensors as nested dicts split on dots (``{"fc": {"weight": t}}``); see :func:`unflatten`."""
        return unflatten(self.tensors)

    def __repr__(self) -> str:
        return f"LoadResult({len(self.tensors)} tensors from {str(self.file.path)!r})"


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    """Nest dotted keys: ``{"a.b": x, "a.c": y}`` -> ``{"a": {"b": x, "c": y}}`` (numeric parts stay strings).

    Raises:
        ModelImportError: a key is both a leaf and a prefix of another (``"a"`` and ``"a.b"``).
    """
    out: dict[str, Any] = {}
    for key, value in flat.items():
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            nxt = node.setdefault(part, {})
            if not isinstance(nxt, dict):
                raise ModelImportError(f"key {key!r} nests under {part!r}, which is already a tensor.")
            node = nxt
        if parts[-1] in node:
            raise ModelImportError(f"key {key!r} is both a tensor and a prefix of other keys.")
        node[parts[-1]] = value
    return out


def _select(file: ImportedFile, key: str | None) -> tuple[dict[str, TensorData], dict[str, Any]]:
    if key is None:
        return dict(file.tensors), dict(file.values)
    prefix = key + "."
    tensors = {k[len(prefix):]: v for k, v in file.tensors.items() if k.startswith(prefix)}
    values = {k[len(prefix):]: v for k, v in file.values.items() if k.startswith(prefix)}
    if not tensors and not values:
        tops = sorted({k.split(".", 1)[0] for k in [*file.tensors, *file.values]})
        shown = ", ".join(summary(t, 60) for t in tops[:20]) + (" ..." if len(tops) > 20 else "")
        raise ModelImportError(
            f"'{file.path}': no top-level key {key!r}; the file's top-level keys are {shown or '(none)'}. "
            "Fix LoadArgs.with_top_level_key."
        )
    return tensors, values


def load_tensors(args: LoadArgs) -> LoadResult:
    """Read ``args.path`` and apply ``args``: top-level key, key remaps in order, contiguous indices, adapter.

    Raises:
        FileNotFoundError: no such file.
        ModelImportError: reading fails (see :func:`read_pytorch`, :func:`read_safetensors`), the top-level
            key is missing (the available keys are listed), two tensors end up with the same key (both
            original keys are named), or the adapter returns something other than a ``TensorEntry``/None.
    """
    file = read_file(args.path, mmap=args.mmap, max_tensor_bytes=args.max_tensor_bytes, max_bytes=args.max_bytes)
    tensors, values = _select(file, args.top_level_key)
    rules = [compile_remap(p, r) for p, r in args.key_remap]
    renamed = [(remap_key(k, rules), k, v) for k, v in tensors.items()]
    contiguous = args.map_indices_contiguous
    if contiguous is None:
        contiguous = file.format != "safetensors"
    if contiguous:
        mapping = map_indices_contiguous(k for k, _, _ in renamed)
        renamed = [(mapping[k], orig, v) for k, orig, v in renamed]
    out: dict[str, TensorData] = {}
    origins: dict[str, str] = {}
    rows = []
    skipped: list[str] = []
    for key, orig, data in renamed:
        if args.filter is not None and not args.filter.matches(key):
            skipped.append(key)
            rows.append((orig, "(skipped)", data.shape, str(data.dtype)))
            continue
        entry = args.adapter.adapt(TensorEntry(key, data, orig))
        if entry is None:
            rows.append((orig, "(dropped)", data.shape, str(data.dtype)))
            continue
        if not isinstance(entry, TensorEntry):
            raise ModelImportError(
                f"'{file.path}': adapter {args.adapter!r} returned {type(entry).__name__} for {summary(orig)}."
            )
        if entry.key in out:
            raise ModelImportError(
                f"'{file.path}': {summary(orig)} and {summary(origins[entry.key])} both map to {summary(entry.key)}; "
                "fix the key remaps."
            )
        out[entry.key] = entry.data
        origins[entry.key] = orig
        rows.append((orig, entry.key, entry.data.shape, str(entry.data.dtype)))
    if args.debug_print:
        print_keys(rows, f"{args.path} ({file.format}): {len(out)} tensors")
    report = ApplyResult(applied=list(out), skipped=skipped)
    if args.filter is not None:
        logger.info("%s: %s kept %d tensors, skipped %d: %s", args.path, args.filter, len(out), len(skipped),
                    ", ".join(skipped[:20]) + (" ..." if len(skipped) > 20 else ""))
    return LoadResult(out, origins, values, file, report)
