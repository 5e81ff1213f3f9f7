"""README excerpts of generated files are what the generator writes today (a block that runs can still be stale)."""

from __future__ import annotations

from pathlib import Path

import pytest
from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]


def _block_after(markdown: Path, sentence: str) -> str:
    """The first fenced block after the paragraph that contains ``sentence``."""
    text = markdown.read_text()
    assert sentence in text, f"{markdown.name} no longer says {sentence!r}; update this test with the README"
    line = text[: text.index(sentence)].count("\n")
    fences = [t for t in MarkdownIt("commonmark").parse(text) if t.type == "fence" and t.map and t.map[0] > line]
    assert fences, f"no code block after {sentence!r} in {markdown.name}"
    return fences[0].content


def test_import_readme_shows_the_generated_guide_cnn(tmp_path, monkeypatch):
    """packages/import/README.md shows ModelGen's ``model.py`` for the guide's CNN, docstring left out: it must be
    the file ModelGen writes for that model now."""
    torch = pytest.importorskip("torch", reason="needs torch==2.13.0 to export the guide's CNN")
    pytest.importorskip("onnx", reason="needs onnx (pip install -e 'packages/import[onnx]')")
    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from ember_import.onnx import ModelGen
    from onnx_finetune import export_onnx
    from onnx_finetune._torch import GuideCnn

    torch.manual_seed(0)
    onnx_file = export_onnx(GuideCnn().eval(), tmp_path / "guide_cnn.onnx")
    ModelGen().input(str(onnx_file)).out_dir(str(tmp_path / "guide_cnn")).run()
    generated = (tmp_path / "guide_cnn" / "model.py").read_text()
    shown = _block_after(ROOT / "packages/import/README.md", "this is the generated `guide_cnn/model.py`")
    assert generated.endswith(shown), (
        "the README's generated module differs from ModelGen's output; paste the new model.py (without its module "
        f"docstring) into packages/import/README.md:\n{generated}")
