"""The plugin registry and ``ember backends``, against throwaway distributions.

Each test builds tiny installed distributions in a temporary directory (a ``*.dist-info`` folder
with ``METADATA`` and ``entry_points.txt``, plus the plugin module beside it) and puts that
directory on ``sys.path``, exactly as pip would lay them out in site-packages. The registry under
test is a fresh one, so the real installed backends are listed too but never disturbed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import ember
from ember import BackendError
from ember.__main__ import format_plain, main
from ember.backend import BackendSpec, _registry

FAKE_MODULES = (
    "fakeok_plugin",
    "fakeok_backend",
    "fakebroken_plugin",
    "fakelazy_plugin",
    "fakegarbage_plugin",
    "fakedup_a_plugin",
    "fakedup_b_plugin",
    "fakenolib_plugin",
)

_HEALTHY_BACKEND = '''
from ember import DType
from ember.backend import Backend, Device


class FakeBackend(Backend):
    name = "fakeok"
    supported_dtypes = frozenset({DType.FLOAT32, DType.FLOAT64, DType.INT64, DType.BOOL})

    def _device_names(self):
        return ["cpu", "fake:1"]

    def _make_device(self, name):
        return Device(self, name, name)
'''


_LOAD_HEALTHY = "from fakeok_backend import FakeBackend; return FakeBackend"


def _plugin(name: str, backend_name: str, load_body: str = _LOAD_HEALTHY, libraries: tuple[str, ...] = ()) -> str:
    return (
        "from ember.backend import BackendSpec, hookimpl\n\n\n"
        f"def _load():\n    {load_body}\n\n\n"
        "@hookimpl\n"
        "def ember_backends():\n"
        f"    return [BackendSpec({backend_name!r}, _load, 'fake backend from {name}', libraries={libraries!r})]\n"
    )


def _dist(site: Path, dist: str, version: str, entry_points: dict[str, str]) -> None:
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[ember]\n{lines}")


_NO_LIB = 'raise ModuleNotFoundError("No module named \'fake_absentlib\'")'


def make_site(site: Path) -> Path:
    """Six fake distributions: healthy (on the installed array library fake-arraylib 4.5.6), broken on import, broken
    on load, garbage, a duplicate pair, and one whose array library is not installed."""
    site.mkdir(exist_ok=True)
    (site / "fakeok_backend.py").write_text(_HEALTHY_BACKEND)
    (site / "fakeok_plugin.py").write_text(_plugin("fake-ok", "fakeok", libraries=("fake-arraylib",)))
    _dist(site, "fake-ok", "1.2.3", {"fakeok": "fakeok_plugin"})
    _dist(site, "fake-arraylib", "4.5.6", {})

    nolib = _plugin("fake-nolib", "fakenolib", _NO_LIB, libraries=("fake-absentlib",))
    (site / "fakenolib_plugin.py").write_text(nolib)
    _dist(site, "fake-nolib", "0.2", {"fakenolib": "fakenolib_plugin"})

    (site / "fakebroken_plugin.py").write_text('raise ImportError("fakebroken needs libfakebroken.so")\n')
    _dist(site, "fake-broken", "0.0.1", {"fakebroken": "fakebroken_plugin"})

    lazy = _plugin("fake-lazy", "fakelazy", 'raise ModuleNotFoundError("No module named \'fakearraylib\'")')
    (site / "fakelazy_plugin.py").write_text(lazy)
    _dist(site, "fake-lazy", "0.3", {"fakelazy": "fakelazy_plugin"})

    (site / "fakegarbage_plugin.py").write_text("def ember_backends():\n    return ['not a spec']\n")
    _dist(site, "fake-garbage", "9.9", {"fakegarbage": "fakegarbage_plugin"})

    (site / "fakedup_a_plugin.py").write_text(_plugin("fake-dup-a", "fakedup"))
    (site / "fakedup_b_plugin.py").write_text(_plugin("fake-dup-b", "fakedup"))
    _dist(site, "fake-dup-a", "1.0", {"fakedup": "fakedup_a_plugin"})
    _dist(site, "fake-dup-b", "2.0", {"fakedup": "fakedup_b_plugin"})
    return site


@pytest.fixture
def fake_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Fake distributions on sys.path and a fresh registry as ``ember``'s global one."""
    site = make_site(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(_registry, "_REGISTRY", _registry._Registry())
    monkeypatch.delenv("EMBER_BACKEND", raising=False)
    yield site
    for mod in FAKE_MODULES:
        sys.modules.pop(mod, None)


def _rows() -> dict[str, ember.backend.BackendInfo]:
    return {i.name: i for i in ember.backends()}


# ---------------------------------------------------------------- ember.backends()
def test_healthy_plugin_is_listed_with_distribution_version_devices_dtypes(fake_site: Path) -> None:
    row = _rows()["fakeok"]
    assert (row.distribution, row.version, row.status, row.error) == ("fake-ok", "1.2.3", "ok", "")
    assert row.devices == ["cpu", "fake:1"]
    assert row.dtypes == ["bool", "float32", "float64", "int64"]
    assert row.description == "fake backend from fake-ok"
    assert (row.library, row.probed) == ("fake-arraylib 4.5.6", True)


def test_listing_without_devices_reads_metadata_and_loads_no_backend(fake_site: Path) -> None:
    rows = {i.name: i for i in ember.backends(devices=False)}
    ok = rows["fakeok"]
    assert (ok.status, ok.library, ok.probed, ok.devices, ok.dtypes) == ("ok", "fake-arraylib 4.5.6", False, [], [])
    assert "fakeok_backend" not in sys.modules  # the backend's module (its "array library") was never imported
    assert rows["fakelazy"].status == "ok"  # its load() would fail: only --devices finds out
    assert rows["fakebroken"].status == "broken"  # the plugin module itself fails: found without loading
    assert rows["fakedup"].status == "error"


def test_a_backend_whose_library_is_not_installed_is_broken_with_the_install_command(fake_site: Path) -> None:
    row = {i.name: i for i in ember.backends(devices=False)}["fakenolib"]
    assert (row.status, row.library) == ("broken", "fake-absentlib (not installed)")
    assert "fake-absentlib is not installed" in row.error and "`pip install fake-absentlib`" in row.error


def test_progress_names_each_backend_before_it_is_loaded(fake_site: Path) -> None:
    seen: list[tuple[str, str, bool]] = []
    ember.backends(progress=lambda info: seen.append((info.name, info.library, "fakeok_backend" in sys.modules)))
    assert ("fakeok", "fake-arraylib 4.5.6", False) in seen
    assert "fakebroken" not in [name for name, _, _ in seen]  # a plugin that failed to import has nothing to load


def test_plugin_failing_on_import_is_listed_with_its_error(fake_site: Path) -> None:
    row = _rows()["fakebroken"]
    assert (row.distribution, row.version, row.status) == ("fake-broken", "0.0.1", "broken")
    assert row.error == "ImportError: fakebroken needs libfakebroken.so"
    assert row.devices == [] and row.dtypes == []


def test_backend_failing_on_load_is_listed_with_its_error(fake_site: Path) -> None:
    row = _rows()["fakelazy"]
    assert (row.distribution, row.status) == ("fake-lazy", "broken")
    assert "fakearraylib" in row.error and "ModuleNotFoundError" in row.error


def test_plugin_returning_something_else_than_specs_is_broken_not_fatal(fake_site: Path) -> None:
    row = _rows()["fakegarbage"]
    assert row.status == "broken"
    assert "BackendSpec" in row.error and "'not a spec'" in row.error


def test_broken_plugins_never_stop_the_others(fake_site: Path) -> None:
    rows = _rows()
    assert {"fakeok", "fakebroken", "fakelazy", "fakegarbage", "fakedup"} <= set(rows)
    assert rows["fakeok"].status == "ok"
    assert isinstance(ember.backend("fakeok"), ember.Backend)
    if "numpy" in rows:  # the real backend is still there beside the fakes
        assert rows["numpy"].status == "ok"


def test_duplicate_name_is_an_error_naming_both_distributions(fake_site: Path) -> None:
    row = _rows()["fakedup"]
    assert row.status == "error"
    assert "fake-dup-a" in row.error and "fake-dup-b" in row.error
    with pytest.raises(BackendError, match="fakedup") as exc:
        ember.backend("fakedup")
    assert "fake-dup-a" in str(exc.value) and "fake-dup-b" in str(exc.value)


# ---------------------------------------------------------------- ember.backend()
def test_backend_of_broken_plugin_raises_backend_error_with_the_cause(fake_site: Path) -> None:
    with pytest.raises(BackendError, match="fake-broken.*libfakebroken"):
        ember.backend("fakebroken")
    with pytest.raises(BackendError, match="fake-lazy.*fakearraylib"):
        ember.backend("fakelazy")


def test_unknown_backend_lists_the_installed_ones(fake_site: Path) -> None:
    with pytest.raises(BackendError, match="no backend named 'nope'") as exc:
        ember.backend("nope")
    assert "fakeok" in str(exc.value)


def test_instances_are_cached_per_name_and_options(fake_site: Path) -> None:
    a = ember.backend("fakeok")
    assert ember.backend("fakeok") is a
    b = ember.backend("fakeok", float_dtype="float64")
    assert b is not a and b.float_dtype is ember.DType.FLOAT64
    assert ember.backend("fakeok", float_dtype="float64") is b


def test_ember_backend_env_sets_the_default(fake_site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_BACKEND", "fakeok")
    assert type(ember.backend()).__name__ == "FakeBackend"
    assert ember.device().backend is ember.backend("fakeok")
    monkeypatch.setenv("EMBER_BACKEND", "nope")
    with pytest.raises(BackendError, match="no backend named 'nope'"):
        ember.backend()


def test_default_without_env_is_numpy(fake_site: Path) -> None:
    pytest.importorskip("ember_numpy")
    assert ember.backend().name == "numpy"


def test_register_adds_a_backend_and_refuses_a_taken_name(fake_site: Path) -> None:
    from fakeok_backend import FakeBackend  # type: ignore[import-not-found]

    ember.backend.register(BackendSpec("fakeregistered", lambda: FakeBackend, "registered by hand"))
    assert isinstance(ember.backend("fakeregistered"), FakeBackend)
    with pytest.raises(BackendError, match="already provided by fake-ok"):
        ember.backend.register(BackendSpec("fakeok", lambda: FakeBackend))


# ---------------------------------------------------------------- the command line
def test_plain_table_lists_every_backend_and_errors(fake_site: Path) -> None:
    text = format_plain(ember.backends())
    lines = text.splitlines()
    assert lines[0].split() == ["name", "distribution", "version", "library", "status", "devices", "dtypes"]
    ok = next(line for line in lines if line.startswith("fakeok "))
    assert ok.split()[:6] == ["fakeok", "fake-ok", "1.2.3", "fake-arraylib", "4.5.6", "ok"]
    assert "cpu, fake:1" in ok and "bool, float32, float64, int64" in ok
    broken = lines.index(next(line for line in lines if line.startswith("fakebroken ")))
    assert lines[broken + 1].strip() == "error: ImportError: fakebroken needs libfakebroken.so"
    assert "--devices" not in text


def test_plain_table_without_devices_has_no_device_columns_and_says_how(fake_site: Path) -> None:
    lines = format_plain(ember.backends(devices=False)).splitlines()
    assert lines[0].split() == ["name", "distribution", "version", "library", "status"]
    assert next(line for line in lines if line.startswith("fakeok ")).split() == [
        "fakeok", "fake-ok", "1.2.3", "fake-arraylib", "4.5.6", "ok"]
    assert lines[-1].startswith("devices and element types: `ember backends --devices`")


def test_main_backends_exit_status_and_json(fake_site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["backends", "--json"]) == 1  # broken plugins present
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["fakeok"]["devices"], rows["fakeok"]["probed"]) == ([], False)
    assert rows["fakeok"]["library"] == "fake-arraylib 4.5.6"
    assert rows["fakebroken"]["status"] == "broken"
    assert main(["backends", "--json", "--devices"]) == 1
    captured = capsys.readouterr()
    rows = {r["name"]: r for r in json.loads(captured.out)}
    assert (rows["fakeok"]["devices"], rows["fakeok"]["probed"]) == (["cpu", "fake:1"], True)
    assert rows["fakelazy"]["status"] == "broken"
    # the status line (plain: stderr is not a terminal here) names each backend as it is loaded
    assert "ember backends: loading fakeok (importing fake-arraylib 4.5.6)..." in captured.err.splitlines()


def test_main_without_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "ember backends" in capsys.readouterr().err


def _run(args: list[str], site: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("EMBER_BACKEND", None)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")])
    return subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)


def test_python_m_ember_backends_in_a_fresh_process(tmp_path: Path) -> None:
    site = make_site(tmp_path / "site")
    proc = _run([sys.executable, "-m", "ember", "backends"], site)
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert "fakeok" in out and "fake-ok" in out and "1.2.3" in out
    assert "ImportError: fakebroken needs libfakebroken.so" in out
    assert "fake-dup-a" in out and "fake-dup-b" in out
    assert "\x1b[" not in out  # plain text when stdout is not a terminal
    assert proc.stderr == ""  # nothing is loaded, so no status line


def test_listing_imports_no_array_library(tmp_path: Path) -> None:
    """``ember backends`` reads metadata only: torch and jax (and the fake backend module) are never imported."""
    code = ("import sys; from ember.__main__ import main; main(['backends']); "
            "print(sorted(m for m in ('torch', 'jax', 'fakeok_backend') if m in sys.modules))")
    proc = _run([sys.executable, "-c", code], make_site(tmp_path / "site"))
    assert proc.stdout.splitlines()[-1] == "[]", proc.stdout + proc.stderr
    assert "jax" in proc.stdout and "fakeok" in proc.stdout  # the listing itself is there


def test_healthy_install_exits_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "fakeok_backend.py").write_text(_HEALTHY_BACKEND)
    (site / "fakeok_plugin.py").write_text(_plugin("fake-ok", "fakeok"))
    _dist(site, "fake-ok", "1.2.3", {"fakeok": "fakeok_plugin"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(_registry, "_REGISTRY", _registry._Registry())
    try:
        status = main(["backends", "--json"])
    finally:
        for mod in FAKE_MODULES:
            sys.modules.pop(mod, None)
    rows = json.loads(capsys.readouterr().out)
    assert any(r["name"] == "fakeok" and r["status"] == "ok" for r in rows)
    # other real backends (torch, jax) may be installed; the command fails only if one is broken
    assert status == (0 if all(r["status"] == "ok" for r in rows) else 1)


def test_ember_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / ("ember.exe" if os.name == "nt" else "ember")
    if not script.exists():
        pytest.skip(f"no `ember` console script next to {sys.executable}")
    proc = _run([str(script), "backends", "--json"], make_site(tmp_path / "site"))
    assert proc.returncode == 1
    assert {r["name"] for r in json.loads(proc.stdout)} >= {"fakeok", "fakebroken"}


def test_defaults_spelled_out_give_the_same_instance_and_devices_unpickle_to_it() -> None:
    import pickle

    b = ember.backend("numpy")
    assert ember.backend("numpy", float_dtype="float32", int_dtype="int64") is b
    dev = b.device()
    assert pickle.loads(pickle.dumps(dev)) is dev
    b64 = ember.backend("numpy", float_dtype="float64")
    assert b64 is not b and pickle.loads(pickle.dumps(b64.device())) is b64.device()


def test_an_unknown_backend_option_is_a_backend_error_naming_it() -> None:
    with pytest.raises(ember.BackendError, match="no option 'flot_dtype'.*float_dtype"):
        ember.backend("numpy", flot_dtype="float64")
