"""Fixtures for the Book's code blocks (run by pytest-markdown-docs:
``pytest --markdown-docs --markdown-docs-syntax=superfences docs``).

A block names what it needs in its fence, ```` ``` {.python fixture:mnist} ```` (PyMdown Superfences' syntax,
which Material renders); a missing need skips the block with the reason (never silently). Every block runs in a
fresh temporary directory, so files it writes are thrown away. A block followed by a ``text title="Output"``
block must print that text.
"""

from __future__ import annotations

from pathlib import Path

import pytest

_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
ROOT = Path(__file__).resolve().parents[1]


def _complete(d: Path) -> bool:
    return all((d / s).is_file() or (d / (s + ".gz")).is_file() for s in _STEMS)


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def mnist(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The MNIST files, found where ``MnistDataset`` looks (``$EMBER_DATA_DIR/mnist``, the cache) or in the
    machine's shared copy; ``EMBER_DATA_DIR`` is pointed at them so the block's ``MnistDataset.train()`` reads
    them without downloading."""
    from ember.data.vision import mnist_dir

    for d in (mnist_dir(), ROOT.parent / "shared" / "data" / "mnist"):
        if _complete(d):
            monkeypatch.setenv("EMBER_DATA_DIR", str(d.parent))
            return d
    pytest.skip("needs the MNIST files: set EMBER_DATA_DIR to a folder whose mnist/ holds the four IDX files")


@pytest.fixture
def examples(monkeypatch: pytest.MonkeyPatch) -> Path:
    """``examples/`` importable (the guide's package)."""
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    return ROOT / "examples"


@pytest.fixture
def torch_backend() -> None:
    pytest.importorskip("ember_torch", reason="needs ember-backend-torch (pip install -e packages/backend-torch)")


@pytest.fixture
def jax_backend() -> None:
    pytest.importorskip("ember_jax", reason="needs ember-backend-jax (pip install -e packages/backend-jax)")


@pytest.fixture
def torch() -> None:
    pytest.importorskip("torch", reason="needs torch==2.13.0 (pip install torch==2.13.0) to write the example files")


@pytest.fixture
def onnx_tools() -> None:
    pytest.importorskip("onnx", reason="needs onnx (pip install -e 'packages/import[onnx]')")
    pytest.importorskip("torch", reason="needs torch==2.13.0 to export the example model")


# ---------------------------------------------------------------- printed outputs
from contextlib import redirect_stdout  # noqa: E402
from functools import cache  # noqa: E402
from io import StringIO  # noqa: E402

from markdown_it import MarkdownIt  # noqa: E402
from pytest_markdown_docs._runners import DefaultRunner, register_runner  # noqa: E402
from pytest_markdown_docs.plugin import parse_superfences_block_info  # noqa: E402


@cache
def _expected_outputs(path: str) -> dict[int, str]:
    """First code line of each Python block -> the text of the ``text title="Output"`` block right after it."""
    tokens = [t for t in MarkdownIt("commonmark").parse(Path(path).read_text()) if t.type == "fence" and t.map]
    out = {}
    for block, after in zip(tokens, tokens[1:]):
        info = parse_superfences_block_info(block.info)
        lang = info[0] if info else ""
        if lang in ("python", "py") and after.info.startswith("text") and 'title="Output"' in after.info:
            out[block.map[0] + 1] = after.content
    return out


@register_runner(default=True)
class OutputCheckingRunner(DefaultRunner):
    """pytest-markdown-docs' runner, plus: a block followed by a ``text title="Output"`` block must print that
    text (its stdout ends with it, after trailing spaces are stripped)."""

    def runtest(self, test, args, *, asyncio_runner=None):  # type: ignore[no-untyped-def]
        want = _expected_outputs(str(test.source_path)).get(test.start_line)
        buf = StringIO()
        with redirect_stdout(buf):
            super().runtest(test, args, asyncio_runner=asyncio_runner)
        printed = buf.getvalue()
        print(printed, end="")
        if want is not None:
            got_lines = [line.rstrip() for line in printed.rstrip().splitlines()]
            want_lines = [line.rstrip() for line in want.rstrip().splitlines()]
            assert got_lines[-len(want_lines):] == want_lines, (
                f"the block printed:\n{printed}\nthe book shows:\n{want}")
