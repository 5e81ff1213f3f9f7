"""``PyTorchFileRecorder`` / ``SafetensorsFileRecorder``: files in PyTorch's layout -> Ember records.

Burn's ``burn_import::pytorch::PyTorchFileRecorder`` and ``burn_import::safetensors::SafetensorsFileRecorder``::

    record = PyTorchFileRecorder(FullPrecisionSettings()).load(args, device)
    model = NetConfig().init(device).load_record(record)

``load`` reads the file and applies ``LoadArgs`` (top-level key, key remaps, contiguous indices, debug print).
The :class:`ImportedRecord` it returns is a nested dict of the file's tensors still in PyTorch's layout; when
``Module.load_record`` receives it, the record adapts itself to that module first
(``__ember_load_prepare__``): the module tree says which Ember layer holds each key, so the right
conversion (transposed Linear weights, norm names, LSTM/GRU gates, attention projections) is applied;
keys the module has no place for are dropped and reported (a partial model is not an error, as in Burn);
union fields take the variant the keys and shapes fit.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ember import TensorData
from ember.module import Module
from ember.record import FullPrecisionSettings, PrecisionSettings

from ._adapt import AdaptResult, adapt_to_module
from ._adapter import Adapter, IdentityAdapter
from ._debug import print_keys
from ._errors import ModelImportError
from ._filter import ApplyResult
from ._load import load_tensors, unflatten
from ._load_args import LoadArgs

__all__ = ["ImportedRecord", "PyTorchFileRecorder", "SafetensorsFileRecorder"]

logger = logging.getLogger("ember_import")


class ImportedRecord(dict):  # type: ignore[type-arg]
    """A record read from a PyTorch or safetensors file, in the file's layout until it meets a module.

    As a dict it is the nested tree of the file's tensors after ``LoadArgs`` (``record["fc"]["weight"]``).
    ``module.load_record(record)`` calls :meth:`adapt` with the module and loads the result.

    Attributes:
        tensors: flat dotted key -> ``TensorData`` (after remapping, before adaptation).
        origins: flat key -> the key in the file.
        file_values: non-tensor leaves under the top-level key (epoch, config entries).
        last: the :class:`~ember_import._adapt.AdaptResult` of the latest load (``unused`` keys, chosen
            ``variants``), None before.
        skipped: keys the ``LoadArgs`` filter left out (after remapping).
        apply_result: Burn's report of the latest load into a module, an :class:`~ember_import.ApplyResult`:
            ``applied`` (Ember keys loaded), ``skipped``, ``missing`` (the module's parameters and states the
            file, once filtered, does not give: they keep their values under ``load_record(record,
            strict=False)``), ``unused`` (file keys with no place in the module). Before a load: what the file
            gave (``applied``) and ``skipped``.
    """

    def __init__(self, tensors: dict[str, TensorData], *, origins: Mapping[str, str], values: Mapping[str, Any],
                 pytorch: bool, adapter: Adapter | None, device: Any = None, debug_print: bool = False,
                 source: str = "", variants: Mapping[str, Sequence[Any]] | None = None,
                 skipped: Sequence[str] = ()) -> None:
        super().__init__(unflatten(tensors))
        self.skipped = list(skipped)
        self.apply_result = ApplyResult(applied=list(tensors), skipped=list(skipped))
        self.tensors = tensors
        self.origins = dict(origins)
        self.file_values = dict(values)
        self.pytorch = pytorch
        self.adapter = adapter
        self.device = device
        self.debug_print = debug_print
        self.source = source
        self.variants: dict[str, list[Any]] = {k: list(v) for k, v in (variants or {}).items()}
        self.last: AdaptResult | None = None

    def with_variants(self, variants: Mapping[str, Sequence[Any]]) -> ImportedRecord:
        """A copy that may swap union ("enum") fields: ``{dotted path: [candidate, ...]}``.

        Each candidate is a module or a config (``.init(device)`` is called with the recorder's device).
        When loading, the first of (the module's current variant, the candidates) whose parameter keys and
        shapes match the file's exactly is used, as Burn picks an enum variant from the keys present.

        Raises:
            TypeError: a candidate is neither a module nor a config.
        """
        for path, options in variants.items():
            for c in options:
                if not isinstance(c, Module) and not callable(getattr(c, "init", None)):
                    raise TypeError(f"with_variants: candidate {c!r} for {path!r} is neither a Module nor a config "
                                    "with init(device).")
        merged = {**self.variants, **{k: list(v) for k, v in variants.items()}}
        return ImportedRecord(self.tensors, origins=self.origins, values=self.file_values, pytorch=self.pytorch,
                              adapter=self.adapter, device=self.device, debug_print=self.debug_print,
                              source=self.source, variants=merged, skipped=self.skipped)

    def adapt(self, module: Any) -> AdaptResult:
        """The file's tensors converted to ``module``'s layout (what ``load_record`` will load).

        Raises:
            ModelImportError: a packed tensor of the wrong size, or no union variant fitting.
        """
        result = adapt_to_module(self.tensors, module, pytorch=self.pytorch, adapter=self.adapter,
                                 candidates=self.variants, device=self.device, origins=self.origins)
        self.last = result
        target = result.module
        wanted = [p for p, _ in (*target.named_params(), *target.running_states())] \
            if isinstance(target, Module) else []
        self.apply_result = ApplyResult(applied=list(result.tensors), skipped=list(self.skipped),
                                        missing=[p for p in wanted if p not in result.tensors],
                                        unused=list(result.unused))
        if result.unused:
            logger.warning("%s: %d tensors have no place in %s and were not loaded: %s", self.source,
                           len(result.unused), type(module).__name__, ", ".join(result.unused[:20]))
        if self.debug_print:
            rows = [(result.origins.get(k, k), k, t.shape, str(t.dtype)) for k, t in result.tensors.items()]
            rows += [(result.origins.get(k, self.origins.get(k, k)), "(unused)", t.shape, str(t.dtype))
                     for k, t in result.unused_tensors.items()]
            print_keys(rows, f"{self.source} -> {type(module).__name__}: {len(result.tensors)} tensors")
        return result

    def __ember_load_prepare__(self, module: Any) -> tuple[Any, dict[str, Any]]:
        result = self.adapt(module)
        return result.module, unflatten(result.tensors)

    def __repr__(self) -> str:
        return f"ImportedRecord({len(self.tensors)} tensors from {self.source!r})"


def _as_args(args: LoadArgs | str | os.PathLike[str]) -> LoadArgs:
    return args if isinstance(args, LoadArgs) else LoadArgs(args)


class _FileRecorder:
    kind = ""

    def __init__(self, settings: PrecisionSettings | None = None) -> None:
        self.settings = settings if settings is not None else FullPrecisionSettings()

    def load(self, args: LoadArgs | str | os.PathLike[str], device: Any = None) -> ImportedRecord:
        """Read ``args.path`` into an :class:`ImportedRecord` for ``module.load_record``.

        Args:
            args: a :class:`LoadArgs` (or a path): top-level key, key remaps, debug print, adapter type.
            device: where config candidates of union fields are initialized (tensors go to the module's
                device when loaded).

        Returns:
            the record; floats are stored at ``settings``' precision (float32 for ``FullPrecisionSettings``).

        Raises:
            FileNotFoundError: no such file.
            ModelImportError: unreadable or unsafe file, missing top-level key, key collisions.
        """
        args = _as_args(args)
        entry_adapter = None if isinstance(args.adapter, IdentityAdapter) else args.adapter
        result = load_tensors(args.with_adapter(IdentityAdapter()))
        converted: dict[int, TensorData] = {}  # one conversion per distinct tensor, however many keys share it
        tensors = {}
        try:
            for k, t in result.tensors.items():
                done = converted.get(id(t))
                if done is None:
                    done = converted[id(t)] = self.settings.convert(t, k)
                tensors[k] = done
        except MemoryError:
            raise ModelImportError(
                f"'{args.path}': converting its tensors to {self.settings!r} ran out of memory; load with a "
                "smaller precision setting or on a machine with more memory."
            ) from None
        return ImportedRecord(tensors, origins=result.original_keys, values=result.values,
                              pytorch=args.adapter_type == "pytorch", adapter=entry_adapter, device=device,
                              debug_print=args.debug_print, source=f"{args.path} ({result.file.format})",
                              skipped=result.apply_result.skipped)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings!r})"


class PyTorchFileRecorder(_FileRecorder):
    """Loads ``.pt`` / ``.pth`` files written by ``torch.save`` (a ``state_dict`` or a checkpoint dict) as
    Ember records, without torch (Burn's ``PyTorchFileRecorder``).

    ::

        args = LoadArgs("model.pt").with_key_remap(r"conv\\.(.*)", r"\\1").with_top_level_key("model_state_dict")
        record = PyTorchFileRecorder(FullPrecisionSettings()).load(args, device)
        model = NetConfig().init(device).load_record(record)      # strict: every parameter must be found
        model, report = net.load_record(record, strict=False)     # partial: report.missing lists the rest

    PyTorch's layouts are converted to Ember's by default (``LoadArgs.with_adapter_type("none")`` turns it
    off); a custom :class:`~ember_import.Adapter` given with ``LoadArgs.with_adapter`` runs first, with
    ``entry.container`` naming the Ember layer.
    """


class SafetensorsFileRecorder(_FileRecorder):
    """Loads ``.safetensors`` files as Ember records (Burn's ``burn_import::safetensors::SafetensorsFileRecorder``).

    Same ``LoadArgs`` as :class:`PyTorchFileRecorder`; ``with_adapter_type("pytorch")`` (default, files
    saved from PyTorch / Hugging Face) or ``"none"`` (already Ember's layout). bfloat16 tensors are read
    losslessly and converted to the settings' float type.
    """
