"""pytest plugin of the conformance suite: backend selection, fixtures, known failures.

Loaded by ``python -m ember.testing`` (``-p ember.testing.plugin``). Fixtures:

- ``backend_name``: the backend under test (``--ember-backend``, else ``EMBER_BACKEND``, else numpy);
- ``B`` / ``device``: that backend with its default dtypes and its default device;
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


def _name(config: Any) -> str:
    return config.getoption("--ember-backend") or os.environ.get("EMBER_BACKEND") or "numpy"


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "ember_dtypes: restrict a test to some float dtypes")


def pytest_report_header(config: Any) -> str:
    name = _name(config)
    b = ember.backend(name)
    return f"ember conformance: backend {name!r} ({type(b).__module__}.{type(b).__name__})"


@pytest.fixture(scope="session")
def backend_name(request: Any) -> str:
    return _name(request.config)


@pytest.fixture(scope="session")
def B(backend_name: str) -> Any:  # noqa: N802 - Burn's name for a backend
    return ember.backend(backend_name)


@pytest.fixture(scope="session")
def device(B: Any) -> Any:  # noqa: N803
    return B.device()


def _dtype_device(name: str, kind: str, dtype: DType) -> Any:
    cls = type(ember.backend(name))
    if dtype not in cls.supported_dtypes:
        pytest.skip(f"{name} does not support {dtype}")
    return ember.backend(name, **{kind: dtype.value}).device()


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


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    known = _known(config)
    used: set[str] = set()
    for item in items:
        for pattern, reason in known.items():
            if fnmatch.fnmatch(item.nodeid, pattern) or fnmatch.fnmatch(item.name, pattern):
                used.add(pattern)
                item.add_marker(pytest.mark.xfail(reason=f"known failure: {reason}", strict=True))
    config._ember_unused_known = sorted(set(known) - used)  # noqa: SLF001


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    unused = getattr(session.config, "_ember_unused_known", [])
    # only meaningful when the whole suite was collected (no -k / node selection)
    if unused and not session.config.getoption("keyword") and session.testscollected:
        tr = session.config.pluginmanager.get_plugin("terminalreporter")
        msg = "known-failure entries that match no test (remove them): " + ", ".join(unused)
        if tr is not None:
            tr.write_line(msg, red=True)
        session.exitstatus = 1


@pytest.fixture
def ad_device(f64_device: Any) -> Any:
    from ember.autodiff import Autodiff

    if f64_device.backend.is_autodiff:  # the backend under test is an autodiff backend itself
        return f64_device
    return Autodiff(f64_device.backend).device(f64_device.name)
