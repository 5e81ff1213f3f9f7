"""Every README's Python blocks are in the docs session's run, none opts out, and GitHub renders them as Python."""

from __future__ import annotations

import importlib.util
import inspect
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

import tests.docs.markdown_blocks as blocks

ROOT = Path(__file__).resolve().parents[2]
READMES = [ROOT / "README.md", *sorted(ROOT.glob("packages/*/README.md")), *sorted(ROOT.glob("examples/*/README.md"))]


def _python_fences(path: Path) -> list[tuple[int, list[str]]]:
    """(line, info words) of each Python fence of ``path``."""
    out = []
    for token in MarkdownIt("commonmark").parse(path.read_text()):
        if token.type == "fence" and token.map:
            words = token.info.split()
            if words and words[0] in ("python", "py", "python3", "{.python"):
                out.append((token.map[0] + 1, words))
    return out


def test_the_docs_session_runs_every_readme():
    pytest.importorskip("nox", reason="needs nox (pip install nox) to read the sessions")
    spec = importlib.util.spec_from_file_location("ember_noxfile", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    noxfile = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(noxfile)
    assert sorted(noxfile._readmes()) == sorted(p.relative_to(ROOT).as_posix() for p in READMES)
    source = inspect.getsource(noxfile.docs)
    assert "_readmes()" in source and "tests.docs.markdown_blocks" in source


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_readme_blocks_run_render_and_name_real_fixtures(readme):
    fixtures = {name for name, value in vars(blocks).items() if hasattr(value, "_fixture_function_marker")
                or type(value).__name__ == "FixtureFunctionDefinition"}
    assert {"mnist", "torch_backend", "mlp_pt", "device"} <= fixtures, "the fixtures could not be listed"
    for line, words in _python_fences(readme):
        where = f"{readme.relative_to(ROOT)}:{line}"
        assert words[0] == "python", f"{where}: write ```python (GitHub highlights the first word of the info string)"
        assert "notest" not in words, f"{where}: every README block runs; give it the fixtures it needs instead"
        for word in words[1:]:
            if word.startswith("fixture:"):
                name = word[len("fixture:"):]
                assert name in fixtures, f"{where}: no fixture {name!r} in tests/docs/markdown_blocks.py"
            else:
                assert word == "continuation", f"{where}: unknown option {word!r}"
