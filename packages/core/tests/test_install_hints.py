"""Install hints (``ember._install``): every "install X" message gives a command that works from where the user
is: the package folder in a checkout (ember-core editable, PEP 610's ``direct_url.json``), else the distribution.

The checkout cases use throwaway distributions (a ``*.dist-info`` folder with ``METADATA`` and
``direct_url.json`` on ``sys.path``, as pip lays them out) and a fake checkout in a temporary directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ember
from ember import BackendError, _install
from ember._install import checkout_root, install_command
from ember.backend import _registry


def _checkout(root: Path, *packages: str) -> Path:
    for name in ("core", *packages):
        (root / "packages" / name).mkdir(parents=True)
        (root / "packages" / name / "pyproject.toml").write_text("[project]\n")
    return root


def _dist(site: Path, name: str, direct_url: dict | None) -> None:
    info = site / f"{name.replace('-', '_')}-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    return site


def test_editable_core_in_a_checkout_is_found(tmp_path, site):
    root = _checkout(tmp_path / "repo")
    _dist(site, "fake-core", {"url": (root / "packages" / "core").as_uri(), "dir_info": {"editable": True}})
    assert checkout_root("fake-core") == root


@pytest.mark.parametrize("direct_url", [
    None,                                                                    # a wheel from an index
    {"url": "file:///tmp/ember_core-0.1.0-py3-none-any.whl", "archive_info": {}},  # a local wheel
    {"url": "https://example.org/ember.git", "vcs_info": {"vcs": "git"}},     # from git, not editable
])
def test_a_non_editable_install_is_not_a_checkout(tmp_path, site, direct_url):
    _dist(site, "fake-core", direct_url)
    assert checkout_root("fake-core") is None


def test_an_editable_core_outside_packages_is_not_a_checkout(tmp_path, site):
    (tmp_path / "elsewhere" / "core").mkdir(parents=True)
    _dist(site, "fake-core", {"url": (tmp_path / "elsewhere" / "core").as_uri(), "dir_info": {"editable": True}})
    assert checkout_root("fake-core") is None


def test_an_editable_core_whose_checkout_is_gone_is_not_a_checkout(tmp_path, site):
    gone = tmp_path / "deleted-repo" / "packages" / "core"
    _dist(site, "fake-core", {"url": gone.as_uri(), "dir_info": {"editable": True}})
    assert checkout_root("fake-core") is None


def test_not_installed_is_not_a_checkout():
    assert checkout_root("ember-no-such-distribution") is None


def test_in_a_checkout_the_command_installs_the_folder(tmp_path):
    root = _checkout(tmp_path / "repo", "train", "backend-torch")
    assert install_command("ember-train", "plot", root=root, cwd=root) == "pip install -e 'packages/train[plot]'"
    assert install_command("ember-backend-torch", root=root, cwd=root) == "pip install -e packages/backend-torch"
    # from elsewhere (examples/, another project): the absolute path, which works from anywhere
    other = tmp_path / "other"
    other.mkdir()
    assert install_command("ember-train", "plot", root=root, cwd=other) == (
        f"pip install -e '{(root / 'packages' / 'train').as_posix()}[plot]'")
    assert install_command("ember-train", root=root, cwd=root / "packages") == "pip install -e train"


def test_a_distribution_the_checkout_lacks_is_named(tmp_path):
    root = _checkout(tmp_path / "repo")
    assert install_command("ember-extra-thing", root=root, cwd=root) == "pip install ember-extra-thing"


def test_outside_a_checkout_the_command_names_the_distribution(tmp_path, site, monkeypatch):
    _dist(site, "fake-core", None)
    monkeypatch.setattr(_install, "_CORE", "fake-core")
    assert install_command("ember-train", "plot", cwd=tmp_path) == "pip install 'ember-train[plot]'"
    assert install_command("ember-backend-jax", cwd=tmp_path) == "pip install ember-backend-jax"


def test_detection_follows_the_editable_core(tmp_path, site, monkeypatch):
    root = _checkout(tmp_path / "repo", "backend-jax")
    _dist(site, "fake-core", {"url": (root / "packages" / "core").as_uri(), "dir_info": {"editable": True}})
    monkeypatch.setattr(_install, "_CORE", "fake-core")
    assert install_command("ember-backend-jax", cwd=root) == "pip install -e packages/backend-jax"


def test_this_environment_gets_a_command_for_its_own_install():
    """The tests run from a checkout: if ember-core is editable, the hint is its sibling folder, else the name."""
    root = checkout_root()
    cmd = install_command("ember-backend-jax")
    if root is None:
        assert cmd == "pip install ember-backend-jax"
    else:
        assert cmd.startswith("pip install -e ") and cmd.endswith("packages/backend-jax")
        assert "ember-backend-jax" not in cmd


# ---------------------------------------------------------------- the messages that use it
@pytest.fixture
def registry(monkeypatch):
    fresh = _registry._Registry()
    monkeypatch.setattr(_registry, "_REGISTRY", fresh)
    return fresh


def test_an_unknown_first_party_backend_gets_the_install_command(registry, monkeypatch):
    monkeypatch.setitem(_registry._FIRST_PARTY, "fakejax", "ember-backend-jax")
    with pytest.raises(BackendError) as info:
        ember.backend("fakejax")
    assert f"`{install_command('ember-backend-jax')}`" in str(info.value)
    assert "no backend named 'fakejax'" in str(info.value)


def test_a_misspelt_backend_is_not_sent_to_a_made_up_distribution(registry):
    with pytest.raises(BackendError) as info:
        ember.backend("tourch")
    message = str(info.value)
    assert "pip install" not in message and "ember-backend-tourch" not in message
    assert "no backend named 'tourch'" in message and "Check the name" in message and "numpy" in message


# ---------------------------------------------------------------- python -m ember.testing without pytest
def test_the_conformance_runner_without_pytest_names_the_extra(tmp_path):
    """A child process in which ``import pytest`` fails (``sys.modules['pytest'] = None``, as a missing module)
    runs ``python -m ember.testing``: it exits 2 with the command that installs ember-core's test extra."""
    hide = ("import runpy, sys\n"
            "for name in [m for m in sys.modules if m == 'pytest' or m.startswith(('pytest.', '_pytest'))]:\n"
            "    del sys.modules[name]\n"
            "sys.modules['pytest'] = None\n"
            "sys.argv = ['ember.testing', '--backend', 'numpy']\n"
            "runpy.run_module('ember.testing', run_name='__main__', alter_sys=True)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=120)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "'pytest' is not installed" in done.stderr
    expected = install_command("ember-core", "test", cwd=tmp_path)
    assert expected in done.stderr, done.stderr
    assert "[test]" in expected
