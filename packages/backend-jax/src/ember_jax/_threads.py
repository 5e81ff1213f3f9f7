"""The ``threads`` option on jax: XLA's one CPU threading switch, which it reads once.

XLA has no thread-count setting for its CPU kernels: the flag ``--xla_cpu_multi_thread_eigen=false`` (in the
``XLA_FLAGS`` environment variable) makes its Eigen matmul and convolution kernels single-threaded, and XLA reads
``XLA_FLAGS`` once, when jax starts its backends (the first device or array of the process). So ``threads=1`` is
accepted before that moment, or when the flag is already set; ``threads=N`` for another N is refused (jax's
open issue https://github.com/jax-ml/jax/issues/1539 tracks a real setting).
"""

from __future__ import annotations

import os

from ember import ConfigError

_FLAG = "--xla_cpu_multi_thread_eigen"


def _single_threaded(flags: str) -> bool:
    """Whether ``flags`` (``XLA_FLAGS``) turns XLA's multi-threaded Eigen kernels off (the last mention counts)."""
    values = [tok.partition("=")[2].lower() for tok in flags.split() if tok.partition("=")[0] == _FLAG]
    return bool(values) and values[-1] in ("false", "0")


def _started() -> bool:
    """Whether jax has started its backends (and so read ``XLA_FLAGS``); ``True`` when this jax cannot say."""
    try:
        from jax._src import xla_bridge

        return bool(xla_bridge.backends_are_initialized())
    except (ImportError, AttributeError):  # pragma: no cover - another jax: assume the worst
        return True


def apply_threads(n: int) -> None:
    """Make XLA's CPU kernels single-threaded (``n == 1``) before jax starts, or raise ``ConfigError``."""
    if n != 1:
        raise ConfigError(
            f"jax backend: threads={n} cannot be set: XLA's CPU kernels run on one thread "
            f"(threads=1, the flag {_FLAG}=false) or on all cores (threads=None, the default), nothing between. "
            "Give threads=1 or leave it out; to share the cores between processes, pin each one to some "
            "(taskset, or the launcher's CPU binding)."
        )
    flags = os.environ.get("XLA_FLAGS", "")
    if _single_threaded(flags):
        return
    if _started():
        raise ConfigError(
            "jax backend: threads=1 came after jax started its backends in this process (a jax device or array was "
            "used), and XLA reads its flags only then. Create ember.backend('jax', threads=1) before any jax work, "
            f"or start Python with XLA_FLAGS={_FLAG}=false in the environment."
        )
    kept = [tok for tok in flags.split() if tok.partition("=")[0] != _FLAG]
    os.environ["XLA_FLAGS"] = " ".join([*kept, f"{_FLAG}=false"])
