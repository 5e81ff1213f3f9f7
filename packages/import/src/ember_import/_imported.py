"""``ImportedFile``: what a model file holds, as Ember values: ``TensorData`` leaves plus plain values.

The unpickled object of a ``.pt`` file is a tree (dicts, ``OrderedDict`` s, lists, tuples) whose tensor leaves
become :class:`~ember.TensorData`. :attr:`ImportedFile.tensors` flattens it to dotted keys, as
``state_dict`` keys are already written (``{"model": {"fc.weight": t}}`` gives ``"model.fc.weight"``; list
items get their index), and :attr:`ImportedFile.values` holds every non-tensor leaf (epoch numbers, config
dicts, strings) under the same kind of key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ember import TensorData

from ._errors import ModelImportError
from ._storage import Storage
from ._torch_types import StorageType, TorchDType
from ._views import PendingTensor

__all__ = ["ImportedFile", "flatten", "map_tree"]


#: deepest nesting of containers accepted (a state_dict is a few levels deep; hostile pickles can nest millions)
MAX_DEPTH = 200
#: most leaves ``flatten`` yields (shared references in a pickle can make a tiny file describe a huge tree)
MAX_LEAVES = 10_000_000
#: shared containers may multiply the leaves (and key characters) of the distinct objects by at most this, plus
#: :data:`SHARED_SLACK`: a checkpoint holding the same state_dict twice is fine, 2**40 paths are not
MAX_SHARING = 8
SHARED_SLACK = 100_000


def _is_container(v: Any) -> bool:
    return isinstance(v, (dict, list, tuple))


def map_tree(obj: Any, fn: Callable[[PendingTensor | Storage], TensorData], origin: str = "the file") -> Any:
    """``obj`` with every :class:`PendingTensor` (or bare :class:`Storage`) replaced by ``fn(t)``.

    Containers are rebuilt (``OrderedDict`` s as plain dicts, order kept); dtype markers become strings such
    as ``"torch.float32"``. An object referenced twice in the pickle is converted once and shared.

    Raises:
        ModelImportError: nesting deeper than :data:`MAX_DEPTH`.
    """
    memo: dict[int, Any] = {}

    def walk(v: Any, depth: int) -> Any:
        key = id(v)
        if key in memo:
            return memo[key]
        if isinstance(v, (PendingTensor, Storage)):
            out: Any = fn(v)
        elif isinstance(v, TorchDType):
            return str(v)
        elif isinstance(v, StorageType):
            return repr(v)
        elif not _is_container(v):
            return v
        elif depth >= MAX_DEPTH:
            raise ModelImportError(
                f"{origin}: the pickled object nests containers deeper than {MAX_DEPTH} levels; refused."
            )
        elif isinstance(v, dict):
            out = memo[key] = {}  # registered before the children: a cycle comes back to this dict
            for k, c in v.items():
                out[k] = walk(c, depth + 1)
        elif isinstance(v, list):
            out = memo[key] = []
            out.extend(walk(c, depth + 1) for c in v)
        else:
            out = tuple(walk(c, depth + 1) for c in v)
        memo[key] = out
        return out

    try:
        return walk(obj, 0)
    finally:
        memo.clear()  # `walk` is a closure cycle holding `memo`: never let it keep the tree alive


def _children(key: str, v: Any) -> Iterator[tuple[Any, Any]] | None:
    """The ``(label, child)`` pairs of a container flattened under ``key`` (labels as in the file: ``str(label)``
    is the key part); None for a leaf."""
    if isinstance(v, dict):
        return iter(v.items())
    if isinstance(v, (list, tuple)) and not (key and _is_value_tuple(v)):
        return enumerate(v)
    return None


def _label(raw: Any, origin: str) -> str:
    """A dict key or list index as a dotted-key part; refuses an integer too large to print (Python refuses to
    convert ints of more than 4300 digits to text, and a hostile pickle can hold one as a key)."""
    if isinstance(raw, int) and raw.bit_length() > 256:
        raise ModelImportError(
            f"{origin}: a key of the file's object is an integer of {raw.bit_length()} bits; a state_dict's keys are "
            "names. The file is corrupted or malicious."
        )
    return raw if isinstance(raw, str) else str(raw)


def _check_paths(obj: Any, prefix: str, origin: str) -> None:
    """Count the leaves and key characters :func:`flatten` would produce, memoised by object id (linear in the
    distinct objects however they are shared), and refuse a cycle or a sharing bomb before anything is yielded."""
    memo: dict[int, tuple[int, int]] = {}
    busy: set[int] = set()
    labels: set[int] = set()  # ids of the distinct label objects (a memoised key string counts once)
    distinct = [0, 0]  # distinct entries, characters of the distinct labels

    def count(key: str, v: Any) -> tuple[int, int]:
        kids = _children(key, v)
        if kids is None:
            return 1, 0
        ident = id(v)
        done = memo.get(ident)
        if done is not None:
            return done
        if ident in busy:
            raise ModelImportError(f"{origin}: the file's object contains itself (a cycle); refused.")
        busy.add(ident)
        leaves = chars = 0
        for raw, c in kids:
            label = _label(raw, origin)
            n, k = count(label, c)
            leaves += n
            chars += k + (len(label) + 1) * n
            distinct[0] += 1
            if not isinstance(raw, str) or id(raw) not in labels:  # (a str key stays alive in its dict)
                labels.add(id(raw))
                distinct[1] += len(label) + 1
        busy.discard(ident)
        memo[ident] = (leaves, chars)
        return leaves, chars

    try:
        leaves, chars = count(prefix, obj)
    finally:
        memo.clear()
        labels.clear()
    if leaves > MAX_LEAVES:
        raise ModelImportError(f"{origin}: the file's object has more than {MAX_LEAVES} leaves; refused.")
    if leaves > MAX_SHARING * distinct[0] + SHARED_SLACK or chars > MAX_SHARING * distinct[1] + 64 * SHARED_SLACK:
        raise ModelImportError(
            f"{origin}: the file's object shares containers or key strings so that its {distinct[0]} entries would "
            f"flatten to {leaves} dotted keys ({chars} characters); refused as a shared-reference bomb. A state_dict "
            "names each tensor once."
        )


def flatten(obj: Any, prefix: str = "", origin: str = "the file") -> Iterator[tuple[str, Any]]:
    """Yield ``(dotted_key, leaf)`` for every leaf of a tree of dicts, lists and tuples (depth-first, in order).

    Empty containers yield nothing; a non-container root yields ``(prefix, obj)``; a list or tuple of plain
    scalars is one leaf. A container shared under two keys yields its leaves under both.

    The leaves and key lengths are counted first with a walk memoised by object id, so a tiny pickle of
    containers shared 2**40 times is refused at once (not after yielding millions of keys).

    Raises:
        ModelImportError: a cycle (a container inside itself), more than :data:`MAX_LEAVES` leaves, or sharing
            that multiplies the distinct entries by more than :data:`MAX_SHARING`; messages name ``origin``.
    """
    _check_paths(obj, prefix, origin)
    path: set[int] = set()
    count = 0

    def walk(key: str, v: Any) -> Iterator[tuple[str, Any]]:
        nonlocal count
        if isinstance(v, dict):
            children: Any = ((f"{key}.{k}" if key else str(k), c) for k, c in v.items())
        elif isinstance(v, (list, tuple)) and not (key and _is_value_tuple(v)):
            children = ((f"{key}.{i}" if key else str(i), c) for i, c in enumerate(v))
        else:
            count += 1
            if count > MAX_LEAVES:
                raise ModelImportError(f"{origin}: the file's object has more than {MAX_LEAVES} leaves; refused.")
            yield key, v
            return
        if id(v) in path:
            raise ModelImportError(f"{origin}: the file's object contains itself (a cycle); refused.")
        path.add(id(v))
        for k, c in children:
            yield from walk(k, c)
        path.discard(id(v))

    yield from walk(prefix, obj)


def _is_value_tuple(v: Any) -> bool:
    """A list/tuple of plain scalars (e.g. a config's ``kernel_size=(3, 3)``) is one value, not a subtree."""
    return bool(v) and all(isinstance(x, (int, float, str, bool, type(None))) for x in v)


class ImportedFile:
    """The contents of a model file: its object tree with ``TensorData`` leaves, flattened views of it.

    Attributes:
        path: the file.
        format: ``"pytorch-zip"``, ``"pytorch-legacy"``, ``"pytorch-tar"`` (PyTorch < 0.4) or ``"safetensors"``.
        root: the file's object as Ember values (dicts, lists, tuples, ``TensorData``, plain values).
        tensors: every tensor leaf under its dotted key, in file order.
        values: every non-tensor leaf (epoch numbers, strings, config entries) under its dotted key.
        metadata: format details (``byteorder``, safetensors header ``__metadata__``, ...).
    """

    __slots__ = ("path", "format", "root", "tensors", "values", "metadata")

    def __init__(self, path: Path, format: str, root: Any, metadata: dict[str, Any] | None = None) -> None:
        self.path = path
        self.format = format
        self.root = root
        self.metadata = dict(metadata or {})
        self.tensors: dict[str, TensorData] = {}
        self.values: dict[str, Any] = {}
        for key, leaf in flatten(root, origin=f"'{path}'"):
            if isinstance(leaf, TensorData):
                self.tensors[key] = leaf
            else:
                self.values[key] = leaf

    @property
    def num_params(self) -> int:
        """Total number of tensor elements."""
        return sum(t.num_elements for t in self.tensors.values())

    @property
    def num_bytes(self) -> int:
        """Total bytes of the tensors' elements."""
        return sum(t.num_elements * t.dtype.itemsize for t in self.tensors.values())

    def __repr__(self) -> str:
        return (f"ImportedFile({str(self.path)!r}, format={self.format!r}, {len(self.tensors)} tensors, "
                f"{len(self.values)} values)")
