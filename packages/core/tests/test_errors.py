"""Ember's error hierarchy: one base class, and each error is also the matching builtin."""

from __future__ import annotations

import builtins

import pytest

import ember
from ember import _errors

# error -> the builtin exception it also derives from (so `except ValueError` keeps working)
HIERARCHY = {
    "ShapeError": ValueError,
    "DTypeError": TypeError,
    "KindError": TypeError,
    "DeviceError": ValueError,
    "BackendError": RuntimeError,
    "IndexError": builtins.IndexError,
    "RecordError": ValueError,
    "ConfigError": ValueError,
    "CollectiveError": RuntimeError,
}


@pytest.mark.parametrize(("name", "builtin"), HIERARCHY.items(), ids=list(HIERARCHY))
def test_every_error_is_an_ember_error_and_its_builtin(name: str, builtin: type[Exception]) -> None:
    cls = getattr(ember, name)
    assert issubclass(cls, ember.EmberError) and issubclass(cls, builtin)
    assert name in ember.__all__
    with pytest.raises(builtin, match="what went wrong"):
        raise cls("what went wrong")


def test_ember_error_is_an_exception_not_a_base_exception_only() -> None:
    assert issubclass(ember.EmberError, Exception)


def test_ember_indexerror_is_the_private_class_and_does_not_shadow_builtins() -> None:
    assert ember.IndexError is _errors.IndexError_
    assert ember.IndexError is not builtins.IndexError
    assert builtins.IndexError.__module__ == "builtins"


def test_errors_module_exports_every_class_it_defines() -> None:
    defined = {n for n, v in vars(_errors).items() if isinstance(v, type) and issubclass(v, Exception)}
    assert defined == set(_errors.__all__)


def test_one_except_clause_catches_what_the_api_raises() -> None:
    raised = []
    for call in (lambda: ember.DType.parse("float128"), lambda: ember.backend("no-such-backend")):
        try:
            call()
        except ember.EmberError as exc:
            raised.append(type(exc))
    assert raised == [ember.DTypeError, ember.BackendError]
