"""Fixtures and the output check for the Python blocks of the Book (``docs/``) and of the READMEs (``README.md``,
``packages/*/README.md``, ``examples/*/README.md``), one set for both: a pytest plugin loaded with ``-p``, as the
docs session runs them (``nox -s docs``)::

    python -m pytest -p tests.docs.markdown_blocks --markdown-docs --markdown-docs-syntax=superfences \
        docs README.md packages/*/README.md examples/*/README.md

A block names what it needs in its fence: in the Book ```` ``` {.python fixture:mnist} ```` (PyMdown Superfences'
syntax, which Material renders), in a README ```` ```python fixture:mnist ```` (the default syntax, which the
superfences mode also reads and GitHub renders as Python: it takes the info string's first word). A fixture's
value is the block's global of the same name (``device``, ``config``...). A missing need skips the block with the
reason (never silently). Every block runs in a fresh temporary directory (``tmp_path``: a fixture that writes a file
for the block writes it there), so files it writes are thrown away. A
block followed by a ``text title="Output"`` block must print that text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pytest_markdown_docs.plugin import MarkdownInlinePythonItem

from ember._install import install_command

_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
ROOT = Path(__file__).resolve().parents[2]
#: how to install torch's CPU build (README, "Install"); PyPI's default Linux wheel is the CUDA build
_TORCH_CPU = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


def _complete(d: Path) -> bool:
    return all((d / s).is_file() or (d / (s + ".gz")).is_file() for s in _STEMS)


@pytest.fixture(autouse=True)
def _in_tmp(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A markdown block runs in its own temporary directory (the other tests of the run keep theirs)."""
    if isinstance(request.node, MarkdownInlinePythonItem):
        monkeypatch.chdir(request.getfixturevalue("tmp_path"))


@pytest.fixture
def mnist(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The MNIST files, found where ``MnistDataset`` looks (``$EMBER_DATA_DIR/mnist``, the cache) or in the
    machine's shared copy; ``EMBER_DATA_DIR`` is pointed at them so the block's ``MnistDataset.train()`` reads
    them without downloading."""
    from ember.data.vision import mnist_dir

    for d in (mnist_dir(), *(base / "shared" / "data" / "mnist" for base in ROOT.parents)):
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
    pytest.importorskip("ember_torch", reason=f"needs ember-backend-torch ({install_command('ember-backend-torch')})")


@pytest.fixture
def jax_backend() -> None:
    pytest.importorskip("ember_jax", reason=f"needs ember-backend-jax ({install_command('ember-backend-jax')})")


@pytest.fixture
def trackers() -> None:
    """TensorBoard's and MLflow's client libraries (ember-train's ``tensorboard`` and ``mlflow`` extras)."""
    for module, extra in (("tensorboardX", "tensorboard"), ("mlflow", "mlflow")):
        pytest.importorskip(module, reason=f"needs {module} ({install_command('ember-train', extra)})")


@pytest.fixture
def torch() -> None:
    _needs_torch()


@pytest.fixture
def onnx_tools() -> None:
    pytest.importorskip("onnx", reason=f"needs onnx ({install_command('ember-import', 'onnx')})")
    _needs_torch()


def _needs_torch() -> Any:
    return pytest.importorskip("torch", reason=f"needs torch==2.13.0 to write the example files ({_TORCH_CPU})")


@pytest.fixture
def mlp_pt(tmp_path: Path) -> Path:
    """``model.pt``: a checkpoint ``{"model_state_dict": ..., "epoch": 3, "config": {...}}`` of
    ``torch.nn.Sequential(Linear(2, 16), ReLU(), Linear(16, 2))`` (keys ``0.weight, 0.bias, 2.weight, 2.bias``),
    the README tour's ``MlpConfig(2, 2)`` in PyTorch; written by torch (skipped without it)."""
    torch = _needs_torch()
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
    torch.save({"model_state_dict": net.state_dict(), "epoch": 3, "config": {"d_input": 2, "d_output": 2}},
               tmp_path / "model.pt")
    return tmp_path / "model.pt"


@pytest.fixture
def checkpoint_pt(tmp_path: Path) -> Path:
    """``checkpoint.pt``: ``{"model_state_dict": ..., "epoch": 3, "config": {"channels": 4, "classes": 10}}`` of a
    PyTorch module with ``conv = nn.Conv2d(1, 4, 3)`` and ``fc = nn.Linear(4, 10)``; written by torch (skipped
    without it)."""
    torch = _needs_torch()
    torch.manual_seed(0)
    net = torch.nn.Module()
    net.conv = torch.nn.Conv2d(1, 4, 3)
    net.fc = torch.nn.Linear(4, 10)
    torch.save({"model_state_dict": net.state_dict(), "epoch": 3, "config": {"channels": 4, "classes": 10}},
               tmp_path / "checkpoint.pt")
    return tmp_path / "checkpoint.pt"


@pytest.fixture
def guide_cnn_onnx(examples: Path, tmp_path: Path) -> Path:
    """``guide_cnn.onnx``: the guide's CNN in PyTorch (``examples/onnx_finetune``), untrained, exported in eval mode
    (opset 17, input ``[batch, 28, 28]``); skipped without torch and onnx."""
    _needs_torch()
    pytest.importorskip("onnx", reason=f"needs onnx ({install_command('ember-import', 'onnx')})")
    import torch

    from onnx_finetune import export_onnx
    from onnx_finetune._torch import GuideCnn

    torch.manual_seed(0)
    return export_onnx(GuideCnn().eval(), tmp_path / "guide_cnn.onnx")


# ---- the guide's training set-up (examples/guide/training.py), small: what the Learner fragments use
@pytest.fixture
def artifact_dir(tmp_path: Path) -> str:
    """A fresh run folder. Not named ``artifacts``: MLflow's file store refuses runs below a folder of that name
    (its check against path traversal), so ``MlflowLogger``'s default store would fail there."""
    return str(tmp_path / "run")


@pytest.fixture
def config(examples: Path) -> Any:
    """The guide's ``TrainingConfig`` for one epoch, one data-loading thread."""
    from ember.optim import AdamConfig
    from guide.model import ModelConfig
    from guide.training import TrainingConfig

    return TrainingConfig(ModelConfig(10, 512), AdamConfig(), num_epochs=1, num_workers=1)


@pytest.fixture
def device() -> Any:
    """``Autodiff(ember.backend("numpy")).device()``, seeded (42)."""
    import ember
    from ember.autodiff import Autodiff

    dev = Autodiff(ember.backend("numpy")).device()
    dev.backend.seed(42)
    return dev


@pytest.fixture
def model(config: Any, device: Any) -> Any:
    """The guide's model on ``device``."""
    return config.model.init(device)


def _mnist_loader(split: str, items: int, config: Any) -> Any:
    from ember.data import DataLoaderBuilder, PartialDataset
    from ember.data.vision import MnistDataset
    from guide.data import MnistBatcher

    dataset = PartialDataset(getattr(MnistDataset, split)(), 0, items)
    return DataLoaderBuilder(MnistBatcher()).batch_size(config.batch_size).shuffle(config.seed).build(dataset)


@pytest.fixture
def dataloader_train(mnist: Path, config: Any) -> Any:
    """The guide's training loader over the first 256 MNIST training images."""
    return _mnist_loader("train", 256, config)


@pytest.fixture
def dataloader_valid(mnist: Path, config: Any) -> Any:
    """The guide's validation loader over the first 128 MNIST test images."""
    return _mnist_loader("test", 128, config)


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
