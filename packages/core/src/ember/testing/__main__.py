"""``python -m ember.testing --backend NAME [--device DEVICE] [pytest args...]``: run the conformance suite.

``--device`` picks the device the fixtures make (``cuda:0`` for torch on a GPU, ``gpu:0`` for jax); the
default is the backend's default device.
"""

from __future__ import annotations

import sys


def _pop(args: list[str], flag: str) -> str | None:
    if flag not in args:
        return None
    i = args.index(flag)
    value = args[i + 1]
    del args[i : i + 2]
    return value


def _missing_test_tools(exc: ImportError) -> str:
    """The message for a missing pytest (or another of ember-core's ``test`` extra): what to install."""
    from .._install import install_command

    missing = exc.name or str(exc)
    return (f"the conformance suite runs on pytest, and {missing!r} is not installed. Install ember-core's test "
            f"extra (pytest, hypothesis, pytest-xdist, pytest-randomly): {install_command('ember-core', 'test')}")


def main(argv: list[str] | None = None) -> int:
    try:
        import pytest
    except ImportError as exc:
        print(f"python -m ember.testing: {_missing_test_tools(exc)}", file=sys.stderr)
        return 2

    args = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    for flag, option in (("--backend", "--ember-backend"), ("--device", "--ember-device")):
        value = _pop(args, flag)
        if value is not None:
            extra += [option, value]
    return int(pytest.main(["-p", "ember.testing.plugin", "--pyargs", "ember.testing.conformance", *extra, *args]))


if __name__ == "__main__":
    sys.exit(main())
