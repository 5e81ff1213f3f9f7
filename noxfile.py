"""Ember's sessions: ``nox`` runs them all; ``nox -l`` lists them; ``nox -s NAME`` runs one.

- ``conformance(<backend>)``: the conformance suite (``python -m ember.testing --backend NAME``) on
  numpy, torch and jax; a backend whose package is not in ``packages/`` yet is skipped. One backend:
  ``nox -s conformance -k numpy``.
- ``tests``: each package's own ``packages/*/tests``, ``examples/tests`` and the fault suite's fast subset
  (``tests/fault``).
- ``slow``: the tests the default run skips (``EMBER_SLOW_TESTS=1``): whole steps compiled by inductor,
  compiled-vs-eager jax steps of the benchmark models, ModelGen's dynamo exports and mypy on generated code.
- ``fault``: the whole fault suite (``python -m tests.fault --full``): every hostile file of the corpus
  (``tests/fault/corpus_*.py``) loaded in a child process under a memory and a time limit; each must end in a clean
  error naming the file or load exactly.
- ``lint``: ruff, then the import-linter contracts of the layers (``lint-imports``). ``typecheck``: mypy on every
  distribution's package.
- ``docs``: The Ember Book and the API reference (``mkdocs build --strict`` into ``site/``), then every Python
  block of the book and of the READMEs (pytest-markdown-docs), the API-reference coverage and the headless-browser
  checks.
- ``wheels``: every package's wheel built (``pip wheel --no-deps``), then ``ember[numpy,train]`` installed from those
  wheels alone into a fresh virtual environment (third-party requirements from the index), where the README's tour
  runs and its printed output is checked (about a minute).
- ``onnx(<backend>)``: ONNX's node test suite through ``ember_import.onnx`` (the runtime module, then the code
  ModelGen writes); the default run has numpy only, ``nox -s onnx`` runs all three.

Every session builds its own virtualenv and installs the repository's packages editable with
``-c constraints.txt`` (torch is always 2.13.0, the CPU wheel pip finds on disk), so
``python -m pip install nox && nox`` works on a fresh machine. Environments are reused when
they exist (``reuse_venv = "yes"``); ``nox -R`` also skips the installs, ``nox --reuse-venv=no``
rebuilds from scratch. Arguments after ``--`` go to pytest / ruff / mypy
(``nox -s conformance -k numpy -- -k sort -x``).
"""

from __future__ import annotations

from pathlib import Path

import nox
from nox.command import CommandFailed

ROOT = Path(__file__).resolve().parent
PYTHON = "3.11"
CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))

# pip, not uv: pip reads the machine's find-links (the torch 2.13.0 CPU wheel on disk); uv does not.
nox.options.default_venv_backend = "virtualenv"
nox.options.reuse_venv = "yes"
nox.options.error_on_missing_interpreters = True

#: pytest-xdist workers per backend's conformance run: jax spends its time compiling each op once per
#: shape on one core, so two workers halve its wall time; numpy and torch are faster without
XDIST_WORKERS = {"jax": 2}

#: pytest-xdist workers of the ``tests`` session per suite: core's and import's tests are CPU-bound and independent,
#: so two workers nearly halve their wall time on CI's two cores; train's multi-process runs (DDP, the kill tests)
#: start their own processes and keep one worker, so their timeouts hold on a busy machine
TEST_WORKERS = {"core": 2, "import": 2}

#: what a plain ``nox`` runs: everything but the ONNX node suite on torch and jax (``nox -s onnx`` runs those)
DEFAULT_SESSIONS = ["conformance", "tests", "lint", "typecheck", "onnx(numpy)", "docs", "wheels"]
nox.options.sessions = DEFAULT_SESSIONS

#: backend name -> its package directory (the torch and jax issues add theirs)
BACKENDS = {
    "numpy": "packages/backend-numpy",
    "torch": "packages/backend-torch",
    "jax": "packages/backend-jax",
}
#: packages a backend's conformance session installs besides the backend: the numpy backend's collectives run on
#: gloo through ember-backend-torch (ember-backend-numpy[collectives]), so its collective cases run instead of skipping
CONFORMANCE_EXTRAS = {"numpy": ("packages/backend-torch",)}


#: the source trees mypy checks: every distribution's package
def _typechecked() -> list[str]:
    return [str(src.relative_to(ROOT)) for p in _packages() for src in sorted((p / "src").iterdir()) if src.is_dir()]


def _packages() -> list[Path]:
    """Every distribution in ``packages/`` that holds code (a ``src/`` folder), ember-core first. ``packages/ember``,
    the distribution ``ember`` whose extras pick the parts (no code), is the ``wheels`` session's."""
    found = sorted(p for p in (ROOT / "packages").iterdir()
                   if (p / "pyproject.toml").is_file() and (p / "src").is_dir())
    return sorted(found, key=lambda p: p.name != "core")


def _has_test_extra(package: Path) -> bool:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10 running nox: install without extras
        return False
    with open(package / "pyproject.toml", "rb") as f:
        meta = tomllib.load(f)
    return "test" in meta.get("project", {}).get("optional-dependencies", {})


def _editable(*packages: Path) -> list[str]:
    args: list[str] = []
    for p in packages:
        rel = p.relative_to(ROOT).as_posix()
        args += ["-e", f"{rel}[test]" if _has_test_extra(p) else rel]
    return args


def _install(session: nox.Session, *packages: Path, extra: tuple[str, ...] = ()) -> None:
    session.install(*CONSTRAINTS, *_editable(*packages), *extra)


@nox.session(python=PYTHON)
@nox.parametrize("backend", list(BACKENDS), ids=list(BACKENDS))
def conformance(session: nox.Session, backend: str) -> None:
    """The conformance suite on one backend."""
    package = ROOT / BACKENDS[backend]
    if not (package / "pyproject.toml").is_file():
        session.skip(f"{BACKENDS[backend]} is not in the repository yet (its backend issue adds it)")
    _install(session, ROOT / "packages/core", package, *(ROOT / p for p in CONFORMANCE_EXTRAS.get(backend, ())))
    session.run("python", "-m", "ember", "backends", "--devices")
    workers = XDIST_WORKERS.get(backend, 0)
    parallel = ["-n", str(workers)] if workers else []
    session.run("python", "-m", "ember.testing", "--backend", backend, "-q", *parallel, *session.posargs)


@nox.session(python=PYTHON)
@nox.parametrize("backend", list(BACKENDS), ids=list(BACKENDS))
def onnx(session: nox.Session, backend: str) -> None:
    """ONNX's node test suite imported with ember_import.onnx on one backend (strict known-failures list).

    The default ``nox`` run includes numpy only (``DEFAULT_SESSIONS``); ``nox -s onnx`` runs every backend
    (jax compiles each op per shape: the slowest). Arguments go to the runner (``nox -s onnx -k numpy -- -k conv
    --per-op``).
    """
    package = ROOT / BACKENDS[backend]
    if not (package / "pyproject.toml").is_file():
        session.skip(f"{BACKENDS[backend]} is not in the repository")
    session.install(*CONSTRAINTS, "-e", "packages/core", "-e", BACKENDS[backend], "-e", "packages/import[onnx]")
    session.run("python", "-m", "ember_import.onnx.conformance", "--backend", backend, *session.posargs)
    # the same cases through ModelGen's generated source: each passes or is refused, none is wrong
    session.run("python", "-m", "ember_import.onnx.conformance", "--backend", backend, "--codegen", *session.posargs)


#: what the docs session installs besides the packages: the site builder, its theme and API plugin, the runner of
#: the book's code blocks and the browser driver (the browser itself is Debian's chromium, when installed)
DOCS_TOOLS = ("mkdocs>=1.6", "mkdocs-material>=9.5", "mkdocstrings[python]>=0.26", "pytest-markdown-docs>=0.9",
              "selenium>=4.20", "nox")


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Build The Ember Book (``site/``; open ``site/index.html``, or ``mkdocs serve`` to edit live) and test it.

    ``mkdocs build --strict`` fails on a broken link, a missing API object or any warning. Then pytest runs
    every Python block of ``docs/`` and of the READMEs (``README.md``, ``packages/*/README.md``,
    ``examples/*/README.md``; blocks that need MNIST, torch, onnx or a missing backend are skipped with the reason,
    printed outputs shown in a ``text title="Output"`` block are checked),
    checks that every name in each package's ``__all__`` is in the API reference, and opens the site in headless
    Chromium (skipped with the reason where it is not installed).
    """
    _install(session, *_packages(), extra=DOCS_TOOLS)
    env = {"NO_MKDOCS_2_WARNING": "1", "EMBER_DOCS_SITE": str(ROOT / "site")}
    session.run("mkdocs", "build", "--strict", "--site-dir", str(ROOT / "site"), env=env)
    # one set of fixtures for the Book and the READMEs: the plugin tests/docs/markdown_blocks.py (``-p``, so
    # ``python -m pytest`` from the root, which puts the root on sys.path)
    session.run("python", "-m", "pytest", "-p", "tests.docs.markdown_blocks", "--markdown-docs",
                "--markdown-docs-syntax=superfences", "docs", *_readmes(), "tests/docs", *session.posargs, env=env)


def _readmes() -> list[str]:
    """The READMEs whose Python blocks the docs session runs: the root one, each package's and each example's."""
    found = [ROOT / "README.md", *sorted(ROOT.glob("packages/*/README.md")), *sorted(ROOT.glob("examples/*/README.md"))]
    return [p.relative_to(ROOT).as_posix() for p in found]


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Each package's own tests (``packages/*/tests``), then ``examples/tests``, then the fault suite's fast subset
    (``tests/fault``); one pytest run each."""
    packages = _packages()
    _install(session, *packages)
    failed: list[str] = []
    suites = [(package.name, package / "tests") for package in packages] + [("examples", ROOT / "examples/tests"),
                                                                          ("fault", ROOT / "tests/fault")]
    for name, tests_dir in suites:
        if not any(tests_dir.glob("**/test_*.py")):
            session.log(f"{name}: no tests in {tests_dir.relative_to(ROOT)}")
            continue
        try:  # run every package's tests, then fail naming the packages that failed
            # with a selection (`nox -s tests -- -k name`) a package may have no test left: exit 5 is fine
            ok = [0, 5] if session.posargs else [0]
            workers = TEST_WORKERS.get(name, 0)
            # one file per worker (--dist loadfile): a file's module fixtures and temporary folders stay in one process
            parallel = ["-n", str(workers), "--dist", "loadfile"] if workers else []
            session.run("python", "-m", "pytest", tests_dir.relative_to(ROOT).as_posix(), *parallel, *session.posargs,
                        success_codes=ok)
        except CommandFailed:
            failed.append(name)
    if failed:
        session.error(f"tests failed in: {', '.join(failed)}")


@nox.session(python=PYTHON)
def slow(session: nox.Session) -> None:
    """The slow tests the default run skips (``EMBER_SLOW_TESTS=1``): whole training steps compiled by inductor
    (``ember_torch.compile``, 20-60 s of compilation each on a small CPU; kernels cached in one
    ``TORCHINDUCTOR_CACHE_DIR`` per test module), the compiled-vs-eager jax steps of three of ``bench/models.py``'s
    models (eager jax compiles every op), ModelGen's dynamo BERT export and mypy on its generated recurrent layers.
    Not in the default sessions."""
    _install(session, *_packages())
    session.run("python", "-m", "pytest", "packages/backend-torch/tests/test_compile.py",
                "packages/backend-torch/tests/test_compile_models.py", "packages/backend-jax/tests/test_jit_models.py",
                "packages/import/tests/test_onnx_codegen_real.py",
                "packages/import/tests/test_onnx_codegen_recurrent.py", *session.posargs, env={"EMBER_SLOW_TESTS": "1"})
    # ModelGen of torch exports with control flow (the dynamo export alone takes ~40 s)
    session.run("python", "-m", "pytest", "packages/import/tests/test_onnx_codegen_control.py",
                "-k", "torch_cond or scripted_loop", env={"EMBER_SLOW_TESTS": "1"})


@nox.session(python=PYTHON)
def wheels(session: nox.Session) -> None:
    """The wheel route (``tests/wheels``): one wheel per package, then ``pip install 'ember[numpy,train]'`` from them
    into a fresh venv that runs the README's tour. hatchling is installed here so the builds skip pip's isolated
    build environments; the venv's third-party requirements come from the index (about a minute in all)."""
    session.install(*CONSTRAINTS, "pytest", "packaging", "hatchling>=1.24")
    session.run("python", "-m", "pytest", "tests/wheels", *session.posargs)


@nox.session(python=PYTHON)
def fault(session: nox.Session) -> None:
    """The whole fault suite: ``python -m tests.fault --full`` (arguments go to the runner: ``nox -s fault -- -k dag
    -v``), then the kill -9 soak (``python -m tests.fault.soak 100``: a small Learner run killed with SIGKILL at 100
    seeded points and resumed, which must end bitwise equal to an uninterrupted run). Hostile files are loaded in
    children under ``RLIMIT_AS`` and a time limit; torch (from the constraints) only writes the benign files in the
    parent."""
    session.install(*CONSTRAINTS, "-e", "packages/core", "-e", "packages/backend-numpy", "-e", "packages/import[onnx]",
                    "-e", "packages/train", "torch", "pytest")
    session.run("python", "-m", "tests.fault", "--full", *session.posargs)
    if not session.posargs:  # a selection (-k) is about the corpus
        session.run("python", "-m", "tests.fault.soak", "100")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    """ruff check over the whole repository, then the layers' import contracts (``lint-imports``; both configured in
    the root pyproject.toml, ``[tool.ruff]`` and ``[tool.importlinter]``), then the import graph's cycles
    (``tools/import_cycles.py``: none but its ``ALLOWED`` ones; function-local and ``TYPE_CHECKING`` imports
    count)."""
    session.install(*CONSTRAINTS, "ruff", "import-linter")
    # import-linter parses the sources (it imports nothing), but finds the packages through the import system:
    # every distribution editable, without its dependencies (no numpy, torch or jax needed)
    session.install("--no-deps", *(arg for p in _packages() for arg in ("-e", p.relative_to(ROOT).as_posix())))
    session.run("ruff", "check", *(session.posargs or ["."]))
    session.run("lint-imports")
    # no import cycles, function-local and TYPE_CHECKING imports included (issue 31; grimp comes with import-linter)
    session.run("python", "tools/import_cycles.py")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy on the public packages (settings in the root pyproject.toml)."""
    # ember-core with its dependencies; the other distributions without theirs (torch and jax are
    # not needed to type-check: the root pyproject tells mypy to skip them)
    session.install(*CONSTRAINTS, "-e", "packages/core[test]", "mypy")
    others = [arg for p in _packages() if p.name != "core" for arg in ("-e", p.relative_to(ROOT).as_posix())]
    session.install("--no-deps", *others)
    session.run("mypy", *(session.posargs or _typechecked()))
