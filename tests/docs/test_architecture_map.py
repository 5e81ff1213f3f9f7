"""ARCHITECTURE.md stays true: every file it names exists, and every ``ARCHITECTURE.md, "Section"`` cited by the
sources, tests, benchmarks and contributor docs is one of its headings (issue 31)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAP = ROOT / "ARCHITECTURE.md"

#: the prefixes a relative name in the map is resolved against, in order
_BASES = ("", "packages/core/src/", "packages/core/src/ember/", "packages/train/src/", "packages/import/src/",
          "packages/backend-numpy/src/", "packages/backend-torch/src/", "packages/backend-jax/src/")
#: files the map names that Ember writes for the user (ModelGen's output), not files of the repository
GENERATED = {"model.py"}
_PACKAGE_DIRS = {
    "ember": "packages/core/src/ember", "ember_numpy": "packages/backend-numpy/src/ember_numpy",
    "ember_torch": "packages/backend-torch/src/ember_torch", "ember_jax": "packages/backend-jax/src/ember_jax",
    "ember_train": "packages/train/src/ember_train", "ember_import": "packages/import/src/ember_import",
}


def _headings() -> set[str]:
    out = set()
    for line in MAP.read_text(encoding="utf-8").splitlines():
        m = re.match(r"#+ (.+)", line)
        if m:
            out.add(m.group(1).split(":")[0].strip())
    return out


def _named_paths() -> list[str]:
    """The path-like names in backticks: ``a/b.py``, ``_x.py``, ``dir/`` (placeholders with ``<`` skipped)."""
    names = re.findall(r"`([\w./-]+(?:\.py|\.md|\.toml|/))`", MAP.read_text(encoding="utf-8"))
    return sorted({n for n in names if "<" not in n})


def _exists(name: str) -> bool:
    first, _, rest = name.partition("/")
    if first in _PACKAGE_DIRS and rest:
        return (ROOT / _PACKAGE_DIRS[first] / rest).exists()
    if any((ROOT / base / name).exists() for base in _BASES):
        return True
    # a name relative to its paragraph's package (``_linear.py``, ``onnx/ops/``): it must exist somewhere
    return name in GENERATED or any(ROOT.glob(f"packages/**/{name.rstrip('/')}")) or any(
        ROOT.glob(f"tests/**/{name.rstrip('/')}"))


def test_every_file_the_map_names_exists() -> None:
    missing = [n for n in _named_paths() if not _exists(n)]
    assert not missing, f"ARCHITECTURE.md names files that do not exist: {missing}"


def test_cited_sections_exist() -> None:
    headings = _headings()
    files = [*ROOT.glob("packages/*/src/**/*.py"), *ROOT.glob("packages/*/tests/*.py"), *ROOT.glob("tests/**/*.py"),
             *ROOT.glob("bench/*.py"), *ROOT.glob("packages/*/README.md"), ROOT / "CONTRIBUTING.md",
             ROOT / "pyproject.toml"]
    bad = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        if f.resolve() == Path(__file__).resolve():
            continue
        assert "DESIGN" + ".md" not in text, f"{f} cites a design file that is not in the repository"
        for section in re.findall(r'ARCHITECTURE\.md, "([^"]+)"', text):
            if section not in headings:
                bad.append(f"{f.relative_to(ROOT)}: {section!r}")
    assert not bad, f"sections cited but not in ARCHITECTURE.md (headings: {sorted(headings)}): {bad}"


def test_readme_and_contributing_link_the_map() -> None:
    for name in ("README.md", "CONTRIBUTING.md"):
        assert "](ARCHITECTURE.md" in (ROOT / name).read_text(encoding="utf-8"), name
