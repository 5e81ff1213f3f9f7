"""How to install an Ember distribution from where the user is: the one place every "install X" hint is built.

In a checkout (ember-core installed editable, ``pip install -e packages/core``, which pip records in
``direct_url.json`` of the dist-info, PEP 610) the command installs the sibling package from its folder
(``pip install -e 'packages/train[plot]'``, relative to the working directory when the checkout is under it,
else the absolute path). Elsewhere it names the distribution (``pip install 'ember-train[plot]'``).
"""

from __future__ import annotations

import json
import os
import shlex
from importlib import metadata
from pathlib import Path
from urllib.parse import unquote, urlparse

__all__ = ["checkout_root", "install_command"]

_CORE = "ember-core"


def checkout_root(core_distribution: str | None = None) -> Path | None:
    """The repository root when ember-core (or ``core_distribution``) is an editable install from a checkout
    (``<root>/packages/core``), else ``None`` (installed from a wheel or an index, or not installed as a
    distribution at all)."""
    try:
        raw = metadata.distribution(core_distribution or _CORE).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return None
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    url = info.get("url", "")
    if not info.get("dir_info", {}).get("editable") or not url.startswith("file:"):
        return None
    core = Path(unquote(urlparse(url).path))
    if core.parent.name != "packages" or not core.is_dir():  # not a checkout's layout, or the checkout is gone
        return None
    return core.parent.parent


def _folder(distribution: str) -> str:
    """``ember-backend-torch`` -> ``backend-torch``: the package folder under ``packages/``."""
    return distribution.removeprefix("ember-")


def install_command(distribution: str, extra: str | None = None, *, root: Path | None = None,
                    cwd: Path | None = None) -> str:
    """The ``pip install`` command that installs ``distribution`` (with ``extra``) from where the user is.

    Args:
        distribution: an Ember distribution name, e.g. ``"ember-backend-torch"``.
        extra: an optional extra of it, e.g. ``"plot"`` (quoted in the command, as shells expand ``[...]``).
        root: the checkout's root; by default :func:`checkout_root` (``None`` outside a checkout).
        cwd: the user's working directory (default: the process's), to write the path relative to it.

    Returns:
        ``pip install -e 'packages/train[plot]'`` in a checkout whose ``packages/`` holds the package, else
        ``pip install 'ember-train[plot]'``.
    """
    if root is None:
        root = checkout_root()
    suffix = f"[{extra}]" if extra else ""
    if root is not None and (root / "packages" / _folder(distribution) / "pyproject.toml").is_file():
        path = root / "packages" / _folder(distribution)
        here = Path(os.getcwd() if cwd is None else cwd).resolve()
        try:
            shown = path.resolve().relative_to(here).as_posix()
        except ValueError:
            shown = path.as_posix()
        return f"pip install -e {shlex.quote(shown + suffix)}"
    return f"pip install {shlex.quote(distribution + suffix)}"
