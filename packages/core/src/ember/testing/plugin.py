"""pytest plugin of the conformance suite: backend selection, fixtures, known failures.

Loaded by ``python -m ember.testing`` (``-p ember.testing.plugin``). Fixtures:

- ``backend_name``: the backend under test (``--ember-backend``, else ``EMBER_BACKEND``, else numpy);
- ``device_name``: the device to test on (``--ember-device``, else ``EMBER_DEVICE``, else the backend's
  default device), e.g. ``cuda:0`` for the torch backend on a GPU, ``gpu:0`` for jax;
- ``B`` / ``device``: that backend with its default dtypes, on that device;
- ``float_device``: parametrized over every float dtype the backend supports (float32, float64,
  float16, bfloat16), a device of ``ember.backend(name, float_dtype=...)``;
- ``int_device``: parametrized over int64 and int32;
- ``f64_device``: float64 (skips when unsupported), for finite-difference gradient checks;
- ``ad_device``: a device of ``ember.autodiff.Autodiff`` over the backend in float64.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any

import pytest

import ember
from ember import DType

FLOAT_DTYPES = [DType.FLOAT32, DType.FLOAT64, DType.FLOAT16, DType.BFLOAT16]
INT_DTYPES = [DType.INT64, DType.INT32]


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("ember")
    group.addoption("--ember-backend", default=None, help="backend to run the conformance suite on")
    group.addoption("--ember-device", default=None,
                    help="device to run the conformance suite on (default: the backend's default device)")


def _name(config: Any) -> str:
    return config.getoption("--ember-backend") or os.environ.get("EMBER_BACKEND") or "numpy"


def _device_name(config: Any) -> str | None:
    return config.getoption("--ember-device") or os.environ.get("EMBER_DEVICE") or None


#: the ``--ember-device`` of this run (set by :func:`pytest_configure`, in each xdist worker too)
_SELECTED: dict[str, str | None] = {"device": None}


def pytest_configure(config: Any) -> None:
    _SELECTED["device"] = _device_name(config)
    config.addinivalue_line("markers", "ember_dtypes: restrict a test to some float dtypes")


def pytest_report_header(config: Any) -> str:
    name = _name(config)
    b = ember.backend(name)
    dev = b.device(_device_name(config))
    return f"ember conformance: backend {name!r} ({type(b).__module__}.{type(b).__name__}), device {dev.name!r}"


@pytest.fixture(scope="session")
def backend_name(request: Any) -> str:
    return _name(request.config)


@pytest.fixture(scope="session")
def device_name(request: Any) -> str | None:
    return _device_name(request.config)


@pytest.fixture(scope="session")
def B(backend_name: str) -> Any:  # noqa: N802 - Burn's name for a backend
    return ember.backend(backend_name)


@pytest.fixture(scope="session")
def device(B: Any, device_name: str | None) -> Any:  # noqa: N803
    return B.device(device_name)


def _dtype_device(name: str, kind: str, dtype: DType) -> Any:
    """The selected device (``--ember-device``) of backend ``name`` with element type ``dtype`` for ``kind``."""
    cls = type(ember.backend(name))
    if dtype not in cls.supported_dtypes:
        pytest.skip(f"{name} does not support {dtype}")
    return ember.backend(name, **{kind: dtype.value}).device(_SELECTED["device"])


@pytest.fixture(params=FLOAT_DTYPES, ids=lambda d: d.value)
def float_device(request: Any, backend_name: str) -> Any:
    return _dtype_device(backend_name, "float_dtype", request.param)


@pytest.fixture(params=INT_DTYPES, ids=lambda d: d.value)
def int_device(request: Any, backend_name: str) -> Any:
    return _dtype_device(backend_name, "int_dtype", request.param)


@pytest.fixture
def f64_device(backend_name: str) -> Any:
    return _dtype_device(backend_name, "float_dtype", DType.FLOAT64)


# ---------------------------------------------------------------- known failures
def _known(config: Any) -> dict[str, str]:
    b = ember.backend(_name(config))
    return dict(getattr(type(b), "conformance_known_failures", {}) or {})


def _whole_suite(config: Any) -> bool:
    """Whether this run collects the whole suite (no ``-k``/``-m`` and no narrower path or node id):
    only then can a known-failure entry that matches nothing be called stale."""
    if config.getoption("keyword") or config.getoption("markexpr"):
        return False
    return all(str(a).rstrip("/").split("/")[-1] in ("ember.testing.conformance", "conformance") for a in config.args)


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    """Mark the backend's known failures as strict xfails; a stale entry fails the run.

    The check runs at collection (in each xdist worker too), so it holds with ``-n``.

    Raises:
        pytest.UsageError: a known-failure pattern matches no test of the whole suite.
    """
    known = _known(config)
    used: set[str] = set()
    for item in items:
        for pattern, reason in known.items():
            if fnmatch.fnmatch(item.nodeid, pattern) or fnmatch.fnmatch(item.name, pattern):
                used.add(pattern)
                item.add_marker(pytest.mark.xfail(reason=f"known failure: {reason}", strict=True))
    unused = sorted(set(known) - used)
    if unused and _whole_suite(config):
        raise pytest.UsageError(
            f"{_name(config)}: conformance_known_failures entries that match no test (remove them, or fix "
            f"the pattern): {', '.join(unused)}"
        )


@pytest.fixture
def ad_device(f64_device: Any) -> Any:
    from ember.autodiff import Autodiff

    if f64_device.backend.is_autodiff:  # the backend under test is an autodiff backend itself
        return f64_device
    return Autodiff(f64_device.backend).device(f64_device.name)
