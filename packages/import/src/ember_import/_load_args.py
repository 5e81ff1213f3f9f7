"""``LoadArgs``: what to load from a model file and how to rename it (Burn's ``burn_import::pytorch::LoadArgs``)."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ._adapter import Adapter, IdentityAdapter
from ._errors import ModelImportError
from ._filter import PathFilter, Predicate, as_filter
from ._keys import compile_remap

__all__ = ["LoadArgs"]


@dataclasses.dataclass(frozen=True, init=False)
class LoadArgs:
    """Arguments for loading a ``.pt`` or ``.safetensors`` file; immutable, built with ``with_*`` methods.

    ::

        args = (LoadArgs("model.pt")
                .with_key_remap(r"conv\\.(.*)", r"\\1")        # regex, replacement; in order; repeatable
                .with_top_level_key("model_state_dict")     # for checkpoints nesting the state_dict
                .with_filter(r"^encoder\\.")                 # keep only these keys (regexes, paths, predicates)
                .with_debug_print())                        # original key, remapped key, shape, dtype

    Order of the steps (as in Burn): select ``top_level_key``, flatten to dotted keys, apply the key remaps in
    order, renumber ``Sequential`` indices contiguously (on by default for PyTorch files, off for
    safetensors, Burn's defaults), keep what the filter matches, then the adapter; the debug print shows the
    result.

    Attributes:
        path: the file.
        key_remap: ``(pattern, replacement)`` rules, applied in order to every key (all matches).
        top_level_key: the entry of the file's top-level dict holding the state_dict, or None.
        debug_print: print every tensor's original key, new key, shape and dtype while loading.
        adapter: converts PyTorch conventions to Ember's (default :class:`IdentityAdapter`).
        map_indices_contiguous: renumber numeric key components; None picks the format's default.
        mmap: memory-map the file instead of reading it (PyTorch and safetensors files).
        max_tensor_bytes: refuse larger tensors (default ``max(file size, 1 GiB)``).
        max_bytes: the budget of the whole load, the bytes of every distinct tensor plus decompressed storages
            (default ``$EMBER_IMPORT_MAX_BYTES``, else ``max(4 x file size, 256 MiB)``; see docs/import.md).
        filter: a :class:`~ember_import.PathFilter` on the remapped keys (Burn's store filters), or None to keep
            every tensor; what it leaves out is reported as ``skipped`` (``LoadResult.apply_result``).
        adapter_type: ``"pytorch"`` (default) or ``"none"``: whether the recorders
            (``PyTorchFileRecorder``, ``SafetensorsFileRecorder``) convert PyTorch layouts to Ember's
            (Burn's ``AdapterType``); ``load_tensors`` ignores it.
    """

    path: Path
    key_remap: tuple[tuple[str, str], ...] = ()
    top_level_key: str | None = None
    debug_print: bool = False
    adapter: Adapter = dataclasses.field(default_factory=IdentityAdapter)
    map_indices_contiguous: bool | None = None
    mmap: bool = False
    max_tensor_bytes: int | None = None
    max_bytes: int | None = None
    adapter_type: str = "pytorch"
    filter: PathFilter | None = None

    def __init__(self, path: str | os.PathLike[str], **kwargs: object) -> None:
        object.__setattr__(self, "path", Path(path))
        for f in dataclasses.fields(self):
            if f.name == "path":
                continue
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            object.__setattr__(self, f.name, kwargs.pop(f.name, default))
        if kwargs:
            raise TypeError(f"LoadArgs: unknown arguments {sorted(kwargs)}")

    def _replace(self, **changes: object) -> LoadArgs:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "path"}
        values.update(changes)
        return LoadArgs(self.path, **values)

    def with_key_remap(self, pattern: str, replacement: str) -> LoadArgs:
        """Add a rule renaming keys: every match of the regex ``pattern`` is replaced by ``replacement``
        (``\\1`` or Burn's ``$1`` for groups). Rules apply in the order added.

        Raises:
            ModelImportError: an invalid regular expression or group reference.
        """
        compile_remap(pattern, replacement)
        return self._replace(key_remap=(*self.key_remap, (pattern, replacement)))

    def with_top_level_key(self, key: str) -> LoadArgs:
        """Load only the entry ``key`` of the file's top-level dict (e.g. ``"model_state_dict"``)."""
        if not isinstance(key, str) or not key:
            raise ModelImportError(f"with_top_level_key: expected a non-empty string, got {key!r}.")
        return self._replace(top_level_key=key)

    def with_debug_print(self, enabled: bool = True) -> LoadArgs:
        """Print each tensor's original key, remapped key, shape and dtype while loading (``rich`` if installed)."""
        return self._replace(debug_print=bool(enabled))

    def with_adapter(self, adapter: Adapter) -> LoadArgs:
        """Convert tensors with ``adapter`` (an :class:`Adapter`) after remapping.

        Raises:
            TypeError: ``adapter`` has no ``adapt(entry)`` method.
        """
        if not isinstance(adapter, Adapter):
            raise TypeError(f"with_adapter: {adapter!r} has no adapt(entry) method; expected an ember_import.Adapter.")
        return self._replace(adapter=adapter)

    def with_map_indices_contiguous(self, enabled: bool = True) -> LoadArgs:
        """Renumber numeric key components contiguously (``layers.0/2/5`` -> ``layers.0/1/2``) or not."""
        return self._replace(map_indices_contiguous=bool(enabled))

    def with_mmap(self, enabled: bool = True) -> LoadArgs:
        """Memory-map the file (copy-on-write): tensors are read from disk when first touched."""
        return self._replace(mmap=bool(enabled))

    def with_max_tensor_bytes(self, limit: int) -> LoadArgs:
        """Refuse tensors larger than ``limit`` bytes (guards against hostile sizes)."""
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ModelImportError(f"with_max_tensor_bytes: expected an int >= 0, got {limit!r}.")
        return self._replace(max_tensor_bytes=limit)

    def with_max_bytes(self, limit: int) -> LoadArgs:
        """Refuse a file whose tensors (each distinct one once) and decompressed storages need more than ``limit``
        bytes in all; checked while the file declares them, before anything is read. The default
        (``$EMBER_IMPORT_MAX_BYTES``, else ``max(4 x file size, 256 MiB)``) bounds what a tiny hostile file can
        make Ember allocate.

        Raises:
            ModelImportError: not an int >= 0.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ModelImportError(f"with_max_bytes: expected an int >= 0, got {limit!r}.")
        return self._replace(max_bytes=limit)

    def with_adapter_type(self, adapter_type: str) -> LoadArgs:
        """``"pytorch"``: the recorders convert PyTorch's layouts to Ember's (transposed Linear weights, norm
        names, packed gates); ``"none"``: the file is already in Ember's layout (Burn's ``AdapterType``).

        Raises:
            ModelImportError: another value.
        """
        value = str(adapter_type).lower()
        if value not in ("pytorch", "none"):
            raise ModelImportError(f"with_adapter_type: expected 'pytorch' or 'none', got {adapter_type!r}.")
        return self._replace(adapter_type=value)

    def with_filter(self, *criteria: PathFilter | str | re.Pattern[str] | Predicate) -> LoadArgs:
        """Load only the tensors whose key (after the remaps) matches any of ``criteria``: a
        :class:`~ember_import.PathFilter`, a regex (``re.search``; anchor it with ``^``) or a predicate
        ``fn(key) -> bool``. Several criteria, or several calls, are OR-ed as in Burn. What is left out is
        reported (``LoadResult.apply_result.skipped``, the debug print and the ``ember_import`` logger).

        Raises:
            ModelImportError: an invalid regex or an unsupported criterion.
        """
        added = as_filter(*criteria)
        return self._replace(filter=added if self.filter is None else self.filter.or_(added))

    def with_regex(self, pattern: str) -> LoadArgs:
        """Burn's ``with_regex``: ``with_filter(PathFilter().with_regex(pattern))``."""
        return self.with_filter(PathFilter().with_regex(pattern))

    def with_regexes(self, patterns: Iterable[str]) -> LoadArgs:
        """Burn's ``with_regexes``: keep keys matching any of ``patterns``."""
        return self.with_filter(PathFilter().with_regexes(patterns))

    def with_full_path(self, path: str) -> LoadArgs:
        """Burn's ``with_full_path``: also keep exactly ``path``."""
        return self.with_filter(PathFilter().with_full_path(path))

    def with_full_paths(self, paths: Iterable[str]) -> LoadArgs:
        """Burn's ``with_full_paths``: also keep each of ``paths`` exactly."""
        return self.with_filter(PathFilter().with_full_paths(paths))

    def with_predicate(self, predicate: Predicate) -> LoadArgs:
        """Burn's ``with_predicate``: also keep keys for which ``predicate(key)`` is true."""
        return self.with_filter(PathFilter().with_predicate(predicate))

    def match_all(self) -> LoadArgs:
        """Burn's ``match_all``: keep every tensor (the default when no filter is given)."""
        return self.with_filter(PathFilter.all())
