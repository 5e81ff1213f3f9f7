"""``read_pytorch``: read a ``.pt`` / ``.pth`` file written by ``torch.save`` without importing torch.

Detects the format by its first bytes (zip archive, a legacy pickle stream, or the tar archive of PyTorch < 0.4),
unpickles it through the safe unpickler, checks every storage and tensor declaration against the file, then
reads the storages and builds :class:`~ember.TensorData` leaves.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ember import DType

from ._errors import ModelImportError
from ._imported import ImportedFile, map_tree
from ._limits import Budget, default_max_bytes
from ._pt_legacy import read_legacy
from ._pt_tar import is_tar, read_tar
from ._pt_zip import read_zip
from ._storage import Storage, fill_storages
from ._views import PendingTensor, make_view, materialize

__all__ = ["read_pytorch", "default_max_tensor_bytes", "default_max_bytes"]


def default_max_tensor_bytes(file_size: int) -> int:
    """The default limit on one materialized tensor: ``max(file size, 1 GiB)``.

    A tensor that views its storage without repeating elements is never larger than the file; only zero or
    overlapping strides (``expand``, ``unfold``) can exceed it, and 1 GiB bounds what a tiny hostile file
    can make Ember allocate.
    """
    return max(file_size, 1 << 30)


def read_pytorch(
    path: str | os.PathLike[str], *, mmap: bool = False, max_tensor_bytes: int | None = None,
    max_bytes: int | None = None,
) -> ImportedFile:
    """Read a PyTorch checkpoint (``torch.save`` output: zip, legacy or PyTorch < 0.4 tar format) into Ember values.

    Torch is never imported and no code from the file runs: the pickle may name only the globals a
    ``state_dict`` needs (see :mod:`ember_import._unpickler`).

    Args:
        path: the ``.pt`` / ``.pth`` / ``.bin`` file.
        mmap: map the file (copy-on-write) instead of reading it; contiguous tensors then share the mapped
            pages, read from disk on first touch. Default False: one read per storage.
        max_tensor_bytes: refuse any tensor whose elements would take more bytes than this (default
            :func:`default_max_tensor_bytes`).
        max_bytes: the budget of the whole load: the bytes of every distinct tensor plus decompressed storages
            (default :func:`~ember_import._limits.default_max_bytes`: ``$EMBER_IMPORT_MAX_BYTES``, else
            ``max(4 x file size, 256 MiB)``). Checked while the pickle declares tensors, before anything is read.

    Returns:
        an :class:`ImportedFile`; ``tensors`` maps dotted keys (``"model.fc.weight"``) to ``TensorData`` in
        the file's dtypes (float16/bfloat16/float32/float64, int8-int64, uint8, bool; bfloat16 as bits).

    Raises:
        FileNotFoundError: no such file.
        ModelImportError: not a PyTorch file, a TorchScript archive, a refused global, a corrupted or
            truncated file, an unsupported element type, sizes/views outside their buffers, tensors beyond
            ``max_tensor_bytes`` or, together, beyond ``max_bytes``; memory running out is reported as this
            error too (never a bare ``MemoryError``). Every message names the file.
    """
    p = Path(path)
    origin = f"'{p}'"
    file_size = p.stat().st_size
    try:
        return _read(p, origin, file_size, mmap, max_tensor_bytes, max_bytes)
    except ModelImportError as exc:
        if origin in str(exc):
            raise
        raise ModelImportError(f"{origin}: {exc}") from None
    except (MemoryError, RecursionError) as exc:
        raise ModelImportError(
            f"{origin}: reading the file ran out of {'memory' if isinstance(exc, MemoryError) else 'stack'}; the "
            "file describes more than this process can hold. Lower what a load may materialise "
            "(LoadArgs.with_max_bytes, EMBER_IMPORT_MAX_BYTES) to be refused earlier, or use mmap=True."
        ) from None


def _read(p: Path, origin: str, file_size: int, mmap: bool, max_tensor_bytes: int | None,
          max_bytes: int | None) -> ImportedFile:
    limit = default_max_tensor_bytes(file_size) if max_tensor_bytes is None else int(max_tensor_bytes)
    budget = Budget(default_max_bytes(file_size) if max_bytes is None else int(max_bytes), origin)
    with open(p, "rb") as f:
        head = f.read(512)
        if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
            fmt = "pytorch-zip"
            root, storages, big = read_zip(f, origin=origin, file_size=file_size, max_tensor_bytes=limit,
                                         budget=budget)
        elif head[:1] == b"\x80" and len(head) > 1 and 2 <= head[1] <= 5:
            fmt = "pytorch-legacy"
            root, storages, big = read_legacy(f, origin=origin, file_size=file_size, max_tensor_bytes=limit,
                                         budget=budget)
        elif is_tar(head):
            fmt = "pytorch-tar"
            root, storages, big = read_tar(f, origin=origin, file_size=file_size, max_tensor_bytes=limit,
                                           budget=budget)
        else:
            raise ModelImportError(
                f"{origin}: not a PyTorch file (it starts with {head[:8]!r}); expected a torch.save zip archive, a "
                "legacy pickle or a PyTorch < 0.4 tar archive."
            )
    fill_storages(storages, str(p), mmap=mmap, file_size=file_size, origin=origin)

    def build(t: PendingTensor | Storage) -> Any:
        if isinstance(t, Storage):  # a storage saved on its own: its elements as a 1-d tensor
            t = make_view(t, 0, (t.nbytes // (t.dtype.itemsize if t.dtype else 1),), (1,), t.dtype or DType.UINT8,
                          origin=origin, max_bytes=limit)
            budget.take(t.nbytes, f"storage {t.storage.name!r}")
        return materialize(t, big_endian=big, share=mmap)

    tree = map_tree(root, build, origin=origin)
    return ImportedFile(p, fmt, tree, {"byteorder": "big" if big else "little", "mmap": mmap})
