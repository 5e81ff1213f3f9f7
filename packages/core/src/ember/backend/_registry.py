"""The backend registry: discovers plugins through entry points, loads backends lazily.

One broken plugin is recorded with its error and never stops the others; two plugins declaring
the same backend name is an error naming both distributions.
"""

from __future__ import annotations

import copyreg
import importlib.metadata as md
import inspect
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pluggy

from .._errors import BackendError
from .._install import install_command
from ._base import Backend
from ._device import Device
from ._hookspec import BackendSpec, EmberSpec

__all__ = ["backend", "device", "backends", "register", "BackendInfo", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "ember"
DEFAULT_BACKEND = "numpy"


@dataclass
class BackendInfo:
    """A row of ``ember backends``: what is installed and whether it works.

    Attributes:
        name: the backend's name (``ember.backend(name)``).
        distribution: the distribution of its plugin (``ember-backend-torch``), and ``version`` its version.
        library: the array library's distributions and versions, from their metadata (``"torch 2.13.0"``,
            ``"jax 0.10.2, jaxlib 0.10.2"``; ``"torch (not installed)"``), as the plugin's
            :attr:`BackendSpec.libraries` name them; empty when the plugin names none.
        status: ``"ok"``, ``"broken"`` (with ``error``) or ``"error"`` (a name two distributions declare).
        probed: whether the backend was loaded to read ``devices`` and ``dtypes`` (``backends(devices=True)``);
            when not, they are empty and ``"ok"`` means that the plugin loaded and its library is installed.
    """

    name: str
    distribution: str
    version: str
    description: str = ""
    status: str = "ok"
    error: str = ""
    devices: list[str] = field(default_factory=list)
    dtypes: list[str] = field(default_factory=list)
    library: str = ""
    probed: bool = False


class _Registry:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._specs: dict[str, BackendSpec] | None = None
        self._broken: list[BackendInfo] = []
        self._duplicates: dict[str, list[str]] = {}
        self._instances: dict[tuple[str, tuple[tuple[str, Any], ...]], Backend] = {}
        self._extra: dict[str, BackendSpec] = {}

    def _discover(self) -> dict[str, BackendSpec]:
        with self._lock:
            if self._specs is not None:
                return self._specs
            pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
            pm.add_hookspecs(EmberSpec)
            specs: dict[str, BackendSpec] = {}
            broken: list[BackendInfo] = []
            dups: dict[str, list[str]] = {}
            for ep in md.entry_points(group=ENTRY_POINT_GROUP):
                dist = ep.dist.name if ep.dist is not None else "?"
                ver = ep.dist.version if ep.dist is not None else "?"
                try:
                    module = ep.load()
                    impl = getattr(module, "ember_backends", None)
                    if impl is None:
                        raise BackendError(f"plugin module {ep.value!r} has no ember_backends() hook")
                    if not pm.is_registered(module):  # two entry points may name one module
                        pm.register(module, name=f"{dist}:{ep.name}")
                    declared = list(impl())
                    for spec in declared:
                        if not isinstance(spec, BackendSpec):
                            raise BackendError(
                                f"plugin module {ep.value!r}: ember_backends() must return BackendSpec "
                                f"items, got {type(spec).__name__} {spec!r}"
                            )
                except Exception as exc:  # isolate every plugin failure
                    error = f"{type(exc).__name__}: {exc}"
                    broken.append(BackendInfo(ep.name, dist, ver, status="broken", error=error))
                    continue
                for spec in declared:
                    spec = replace(spec, distribution=dist, version=ver)
                    if spec.name in specs and specs[spec.name].distribution != dist:
                        dups.setdefault(spec.name, [specs[spec.name].distribution]).append(dist)
                        continue
                    specs[spec.name] = spec
            specs.update(self._extra)
            self._specs, self._broken, self._duplicates = specs, broken, dups
            return specs

    def register(self, spec: BackendSpec) -> None:
        with self._lock:
            existing = self._discover().get(spec.name)
            if existing is not None and existing.load is not spec.load:
                raise BackendError(
                    f"backend name {spec.name!r} is already provided by "
                    f"{existing.distribution or 'a registered spec'}; choose another name."
                )
            self._extra[spec.name] = spec
            self._specs[spec.name] = spec  # type: ignore[index]

    def get(self, name: str | None, options: dict[str, Any]) -> Backend:
        name = name or os.environ.get("EMBER_BACKEND") or DEFAULT_BACKEND
        key = (name, tuple(sorted((k, str(v)) for k, v in options.items())))
        inst = self._instances.get(key)
        if inst is not None:
            return inst
        with self._lock:
            inst = self._instances.get(key)
            if inst is not None:
                return inst
            specs = self._discover()
            if name in self._duplicates:
                raise BackendError(
                    f"backend {name!r} is provided by several distributions: "
                    f"{', '.join(self._duplicates[name])}. Uninstall all but one."
                )
            spec = specs.get(name)
            if spec is None:
                broken = [b for b in self._broken if b.name == name]
                if broken:
                    raise BackendError(
                        f"backend {name!r} ({broken[0].distribution}) failed to load: {broken[0].error}"
                    )
                known = ", ".join(sorted(specs)) or "none"
                raise BackendError(f"no backend named {name!r}; installed: {known}. {_install_hint(name)}")
            try:
                cls = spec.load()
            except Exception as exc:
                raise BackendError(
                    f"backend {name!r} ({spec.distribution}) failed to load: {type(exc).__name__}: {exc}"
                ) from exc
            _check_options(name, cls, options)
            inst = cls(**options)
            # the same backend asked for with its defaults spelled out (e.g. by an unpickled Device)
            # must be the same instance: key also by the backend's own normalized options
            norm = (name, tuple(sorted((k, str(v)) for k, v in inst.options.items())))
            inst = self._instances.setdefault(norm, inst)
            self._instances[key] = inst
            return inst

    def infos(self, devices: bool = True,
              progress: Callable[[BackendInfo], None] | None = None) -> list[BackendInfo]:
        specs = self._discover()
        rows: list[BackendInfo] = []
        for name, spec in sorted(specs.items()):
            library, missing = _libraries(spec.libraries)
            info = BackendInfo(name, spec.distribution, spec.version, spec.description, library=library)
            if name in self._duplicates:
                info.status, info.error = "error", "provided by " + ", ".join(self._duplicates[name])
            elif devices:
                if progress is not None:
                    progress(info)
                info.probed = True
                try:
                    b = self.get(name, {})
                    info.devices = [str(d.name) for d in b.devices()]
                    info.dtypes = sorted(d.value for d in b.supported_dtypes)
                except Exception as exc:
                    info.status, info.error = "broken", f"{type(exc).__name__}: {exc}"
            elif missing:
                hints = " ".join(f"`{install_command(m)}`" for m in missing)
                info.status = "broken"
                info.error = (f"its array library {', '.join(missing)} is not installed (no distribution of that name "
                              f"in this environment); install it with {hints}.")
            rows.append(info)
        rows.extend(self._broken)
        return rows

    def reset(self) -> None:
        with self._lock:
            self._specs = None
            self._instances.clear()


def _libraries(names: tuple[str, ...]) -> tuple[str, list[str]]:
    """``("torch 2.13.0", [])`` from the installed metadata of the distributions ``names``, and the missing ones."""
    shown, missing = [], []
    for dist in names:
        try:
            shown.append(f"{dist} {md.version(dist)}")
        except md.PackageNotFoundError:
            shown.append(f"{dist} (not installed)")
            missing.append(dist)
    return ", ".join(shown), missing


#: Ember's own backends: backend name -> the distribution that provides it
_FIRST_PARTY = {"numpy": "ember-backend-numpy", "torch": "ember-backend-torch", "jax": "ember-backend-jax"}


def _install_hint(name: str) -> str:
    """What to do about a backend name that no installed plugin provides."""
    if name in _FIRST_PARTY:
        return f"Install it with `{install_command(_FIRST_PARTY[name])}`."
    ours = ", ".join(sorted(_FIRST_PARTY))
    return (f"Check the name (Ember's own backends are {ours}), or install the distribution that provides it "
            "(a plugin registers itself under the `ember` entry-point group).")


def _check_options(name: str, cls: type[Backend], options: dict[str, Any]) -> None:
    """Raise a BackendError naming unknown options (instead of the constructor's TypeError)."""
    params = inspect.signature(cls).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    unknown = sorted(set(options) - set(params))
    if unknown:
        accepted = ", ".join(n for n in params if n != "self") or "none"
        raise BackendError(
            f"backend {name!r} has no option {', '.join(map(repr, unknown))}; its options are: {accepted}."
        )


_REGISTRY = _Registry()


def backend(name: str | None = None, **options: Any) -> Backend:
    """The backend called ``name`` with ``options`` (e.g. ``float_dtype="float64"``).

    Instances are cached: the same name and options give the same object. ``name`` defaults to
    the ``EMBER_BACKEND`` environment variable, else ``"numpy"``.

    Raises:
        BackendError: no such backend installed (lists the installed ones), its plugin failed to
            load (with the error), or two distributions declare it.
        DTypeError: an unsupported dtype option.
    """
    return _REGISTRY.get(name, options)


def device(name: str | None = None, device: str | None = None, **options: Any) -> Device:
    """Shortcut for ``ember.backend(name, **options).device(device)``."""
    return backend(name, **options).device(device)


def backends(devices: bool = True, *, progress: Callable[[BackendInfo], None] | None = None) -> list[BackendInfo]:
    """Every installed backend with its distribution, version, array library's version and status.

    Args:
        devices: load each backend (importing its array library: seconds for torch and jax) to list its devices
            and element types, and to check that it loads. ``False`` reads only the installed metadata: a backend
            is then ``"ok"`` when its plugin loads and its library's distributions are installed
            (:attr:`BackendSpec.libraries`), and ``devices`` / ``dtypes`` are empty.
        progress: called with each backend's row (name and library filled in) before the backend is loaded, one
            after the other in this process (``ember backends --devices`` shows it on a status line).
    """
    return _REGISTRY.infos(devices, progress)


def register(spec: BackendSpec) -> None:
    """Register a backend without an entry point (tests, notebooks).

    Raises:
        BackendError: the name is already taken by another backend.
    """
    _REGISTRY.register(spec)


def _reduce_device(dev: Device) -> tuple[Callable[..., Device], tuple[str, dict[str, Any], str]]:
    """Pickle a :class:`Device` by reference: devices are process-local, so unpickling re-resolves the device by
    its backend's name and options and its own name (a DataLoader worker, a spawned DDP process)."""
    return _restore_device, (dev.backend.name, dev.backend.options, dev.name)


def _restore_device(backend_name: str, options: dict[str, Any], name: str) -> Device:
    return backend(backend_name, **options).device(name)


# registered here, above both Device and the registry, so that the device module needs neither (copyreg looks the
# reducer up by exact type: AutodiffDevice keeps its own ``__reduce__``)
copyreg.pickle(Device, _reduce_device)
