"""What ``python -m guide`` checks before it writes anything: the backend and device, the optional loggers, the
MNIST files. Each check raises :class:`~guide.UsageError` in the command line's words."""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from ember import BackendError, install_command
from ember.data import DatasetError
from ember.data.vision import MnistDataset, mnist_dir, mnist_missing

from ._errors import UsageError

__all__ = ["check_loggers", "device_of", "load_mnist", "mnist_or_say_why", "one_line"]

#: optional logger flag -> (module it needs, the ember-train extra that installs it)
_LOGGERS = {"tensorboard": ("tensorboardX", "tensorboard"), "mlflow": ("mlflow", "mlflow")}


def one_line(exc: BaseException) -> str:
    """The message of ``exc`` on one line (library messages may span several)."""
    return " ".join(str(exc).split())


def check_loggers(args: Any) -> None:
    """``--tensorboard`` / ``--mlflow`` need their library installed."""
    for flag, (module, extra) in _LOGGERS.items():
        if getattr(args, flag, None) is not None and importlib.util.find_spec(module) is None:
            raise UsageError(f"--{flag} needs {module}, which is not installed: "
                             f"{install_command('ember-train', extra)}, or drop --{flag}.")


def device_of(backend_factory: Any, args: Any) -> Any:
    """``(backend, device)`` for ``--backend`` and ``--device``."""
    try:
        backend = backend_factory(args.backend)
    except BackendError as exc:
        raise UsageError(f"--backend {args.backend}: {one_line(exc)}") from exc
    try:
        return backend, backend.device(args.device)
    except BackendError as exc:
        raise UsageError(f"--device {args.device}: {one_line(exc)}") from exc


def load_mnist(data_dir: str | os.PathLike[str] | None, splits: tuple[str, ...]) -> list[MnistDataset]:
    """The MNIST ``splits`` from ``--data-dir`` (or the default directory, where missing files are downloaded).

    An explicit ``--data-dir`` that does not exist is refused (no download into a mistyped path); an existing one
    gets the missing files downloaded, like the default directory. Nothing is created unless a download succeeds.
    """
    directory = mnist_dir(data_dir)
    where = f"the default MNIST directory {directory}"
    if data_dir is not None:
        resolved = directory.resolve()
        where = f"--data-dir {data_dir}" + ("" if str(resolved) == str(data_dir) else f" (= {resolved})")
    if data_dir is not None and not directory.is_dir():
        raise UsageError(f"{where}: no such directory (looked there for "
                         f"{', '.join(mnist_missing(directory, splits))}): pass the directory that holds the MNIST "
                         "files, or create it to have them downloaded there.")
    try:
        return [MnistDataset.train(directory) if s == "train" else MnistDataset.test(directory) for s in splits]
    except DatasetError as exc:
        missing = mnist_missing(directory, splits)
        if not missing:  # present but unreadable
            raise UsageError(f"{where}: {one_line(exc)}") from exc
        raise UsageError(f"{where}: missing {', '.join(missing)} (looked in {directory}, gzipped or not) and the "
                         "download failed: put the files there or pass --data-dir DIR holding them (--debug shows "
                         "the download errors).") from exc


def mnist_or_say_why(prog: str, data_dir: str | os.PathLike[str] | None) -> list[MnistDataset] | None:
    """:func:`load_mnist` of both splits for another example's command line ``prog``: the datasets, or ``None``
    once the mistake is printed as ``prog``'s one-line error (the caller exits with status 2)."""
    try:
        return load_mnist(data_dir, ("train", "test"))
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return None
