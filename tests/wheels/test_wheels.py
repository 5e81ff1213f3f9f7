"""The wheel route: every package builds a wheel, and ``pip install 'ember[numpy,train]'`` from those wheels, in a
fresh virtual environment, runs the README's tour.

Slow (a minute or more: seven wheel builds, a venv, the installs), so it is not in ``nox``'s default run: ``nox -s
wheels`` runs it (or ``python -m pytest tests/wheels`` with ``pip`` able to reach an index). The Ember wheels come
from the wheelhouse alone (``--no-index --find-links``), so a same-named project on an index can never stand in for
them; their third-party requirements (numpy, pluggy, msgpack, safetensors, threadpoolctl, rich, uniplot), read from
the wheels' metadata, are installed first from wherever pip finds packages (PyPI, or the machine's pip
configuration).
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: the distribution that picks the parts, and the extras this test installs
META, EXTRAS = "ember", ("numpy", "train")

requirements = pytest.importorskip("packaging.requirements", reason="needs packaging (pip install packaging)")
tomllib = pytest.importorskip("tomllib", reason="needs Python 3.11 (tomllib)")


def _packages() -> dict[str, Path]:
    """distribution name -> package folder, for every ``packages/*/pyproject.toml``."""
    out = {}
    for pyproject in sorted(ROOT.glob("packages/*/pyproject.toml")):
        with open(pyproject, "rb") as f:
            out[tomllib.load(f)["project"]["name"]] = pyproject.parent
    return out


def _metadata(wheel: Path) -> tuple[str, str, list[str]]:
    """(name, version, Requires-Dist lines) of a wheel."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        msg = Parser().parsestr(z.read(meta).decode())
    return msg["Name"], msg["Version"], msg.get_all("Requires-Dist") or []


def _closure(wheels: dict[str, tuple[str, list[str]]], name: str, extras: tuple[str, ...]) -> set[str]:
    """The third-party requirements (as strings) of ``name[extras]``, following the Ember wheels among them."""
    third: set[str] = set()
    todo, seen = [(name, extras)], set()
    while todo:
        dist, want = todo.pop()
        if (dist, want) in seen:
            continue
        seen.add((dist, want))
        for line in wheels[dist][1]:
            req = requirements.Requirement(line)
            if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in ("", *want)):
                continue
            if req.name in wheels:
                todo.append((req.name, tuple(sorted(req.extras))))
            else:
                third.add(str(req).split(";")[0].strip())
    return third


def _run(args: list[str], cwd: Path, timeout: float = 900) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "EMBER_BACKEND")}
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done.stdout


def _tour() -> tuple[str, str]:
    """The README tour's first Python block with its continuations (those that need no fixture), and the printed
    output its ``text title="Output"`` blocks show."""
    code: list[str] = []
    output: list[str] = []
    kind: str | None = None
    for block in re.finditer(r"^```([^\n]*)\n(.*?)^```$", (ROOT / "README.md").read_text(), re.M | re.S):
        info, body = block.group(1).split(), block.group(2)
        if info[:1] == ["python"]:
            if kind is not None and "continuation" not in info or any(w.startswith("fixture:") for w in info):
                if code:
                    break
                continue
            code.append(body)
            kind = "python"
        elif info[:1] == ["text"] and 'title="Output"' in block.group(1) and code:
            output.append(body)
    assert code and output, "README.md has no tour (a ```python block followed by its Output)"
    return "\n".join(code), "".join(output)


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One wheel per package (``pip wheel --no-deps``); without build isolation when hatchling is here (faster)."""
    house = tmp_path_factory.mktemp("wheelhouse")
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("hatchling") else []
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-w", str(house),
          *map(str, _packages().values())], cwd=ROOT)
    return house


def test_every_package_builds_one_wheel_pinning_its_siblings_to_one_version(wheelhouse: Path) -> None:
    built = {_metadata(w)[0]: _metadata(w) for w in wheelhouse.glob("*.whl")}
    assert sorted(built) == sorted(_packages()), "a package did not build, or built twice"
    versions = {version for _, version, _ in built.values()}
    assert len(versions) == 1, f"the packages are released together, under one version; found {versions}"
    (version,) = versions
    for name, (_, _, requires) in built.items():
        for line in requires:
            req = requirements.Requirement(line)
            if req.name in built:
                assert str(req.specifier) == f"=={version}", f"{name} requires {line!r}: siblings pin =={version}"
    with zipfile.ZipFile(next(wheelhouse.glob(f"{META}-*.whl"))) as z:
        code = [n for n in z.namelist() if ".dist-info/" not in n]
    assert not code, f"the `ember` wheel must hold no code (ember-core owns the import name `ember`): {code}"


def test_ember_numpy_train_from_the_wheels_runs_the_readme_tour(wheelhouse: Path, tmp_path: Path) -> None:
    wheels = {name: (version, req) for name, version, req in map(_metadata, wheelhouse.glob("*.whl"))}
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    scripts = venv / ("Scripts" if os.name == "nt" else "bin")
    python = str(scripts / "python")
    pip = [python, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    _run([*pip, *sorted(_closure(wheels, META, EXTRAS))], cwd=tmp_path)  # third-party, from the index
    _run([*pip, "--no-index", "--find-links", str(wheelhouse), f"{META}[{','.join(EXTRAS)}]"], cwd=tmp_path)

    listed = _run([python, "-m", "pip", "list", "--format=freeze"], cwd=tmp_path)
    ember_dists = {line.split("==")[0] for line in listed.splitlines() if line.startswith("ember")}
    assert ember_dists == {"ember", "ember-core", "ember-backend-numpy", "ember-train"}, listed
    where = _run([python, "-c", "import ember, ember_train; print(ember.__file__)"], cwd=tmp_path)
    assert where.strip().startswith(str(venv)), f"ember imported from {where.strip()}, not from the venv"

    code, expected = _tour()
    (tmp_path / "tour.py").write_text(code)
    assert _run([python, "tour.py"], cwd=tmp_path) == expected
    backends = _run([str(scripts / "ember"), "backends"], cwd=tmp_path)  # ember-core's console script
    assert re.search(r"^numpy\s+ember-backend-numpy\s+0\.1\.0\s+numpy \S+\s+ok$", backends, re.M), backends
