"""Compiled training steps against eager ones on the models of ``bench/models.py`` (issue 32), at small sizes.

The backends' tests (``backend-torch/tests/test_compile_models.py``, ``backend-jax/tests/test_jit_models.py``)
run :func:`compare` on each model of :data:`SMALL`: the networks of ``_models_ember.py`` (the same layers and ops
as the benchmark's) with fewer channels, tokens and images, so that twenty eager steps take seconds. The step is
the benchmark's (``_models_ember.train_step``: forward, cross-entropy, ``backward()``, Adam at lr 1e-4), in
float32.

What "equal" means here: the twenty losses within 1e-5 relative, and every parameter and running state
(BatchNorm's statistics) after the twenty steps within 1e-5 relative with an absolute floor of 1e-5, a tenth of
one Adam step at lr 1e-4. The floor is needed because the two programs round differently (the compiled one
fuses or decomposes ops), and Adam divides each gradient by its own running size: where a gradient is a sum that
cancels to nearly zero (BatchNorm's shifts ahead of another BatchNorm), a rounding difference can flip its
sign and move that weight by up to one step. A missing or wrong update (a tenth of a step, in any of the twenty
steps) is still caught.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from _models_ember import Spec, build, inputs, train_step

__all__ = ["LR", "SMALL", "STEPS", "compare"]

#: the models of ``SPECS`` at test sizes: ResNet-18 with 8 stem channels (8-16-32-64 in the four stages) on
#: 64x64 images, batch 4 (2x2 after the last stage, so BatchNorm sees 16 values a channel there; with batch 2 the
#: last BatchNorms amplify rounding differences 20-fold over the twenty steps)
SMALL: dict[str, Spec] = {
    "resnet18": Spec(4, {"classes": 10, "size": 64, "width": 8}),
    "transformer": Spec(2, {"vocab": 50, "seq": 8, "d_model": 16, "heads": 2, "d_ff": 32, "layers": 2, "classes": 5}),
    "lstm": Spec(2, {"vocab": 50, "seq": 6, "d_model": 16, "hidden": 16, "layers": 2}),
    "guide": Spec(4, {"classes": 10, "hidden": 32}),
}
STEPS = 20
LR = 1e-4
RTOL = 1e-5
ATOL = 1e-5


def _states(model: Any) -> list[tuple[str, np.ndarray]]:
    """Every parameter and running state of ``model`` as ``(path, float64 array)``."""
    out = [(name, np.asarray(p.val().to_numpy(), np.float64)) for name, p in model.named_params()]
    out += [(name, np.asarray(s.value().to_numpy(), np.float64)) for name, s in model.running_states()]
    return out


def compare(
    name: str, device: Any, seed: Callable[[int], None], compiled: Callable[..., Any], lr: Any
) -> tuple[list[float], list[float]]:
    """Train model ``name`` of :data:`SMALL` for :data:`STEPS` steps twice from the same weights, once with
    ``compiled`` (a compiled ``_models_ember.train_step``, called with ``lr``, the learning rate as the step
    expects it, e.g. a ``[1]`` tensor) and once eagerly with ``train_step`` at the float :data:`LR`, ``seed(k)``
    called before each run (Dropout draws the same masks); assert that they agree (module docstring) and that
    the loss went down.

    Returns:
        ``(compiled losses, eager losses)``.
    """
    from ember.optim import AdamConfig

    spec = SMALL[name]
    seed(0)
    start = build(name, device, spec)
    batch = inputs(name, device, spec)
    runs = []
    for fn, rate in ((compiled, lr), (train_step, LR)):
        model, optim = start, AdamConfig().init()
        optim.init_states(model)
        seed(1)
        losses = []
        for _ in range(STEPS):
            model, loss = fn(model, optim, batch, rate)
            losses.append(float(loss.into_scalar()))
        runs.append((model, losses))
    (m_c, l_c), (m_e, l_e) = runs
    np.testing.assert_allclose(l_c, l_e, rtol=RTOL, err_msg=f"{name}: losses of the compiled and eager steps")
    assert l_e[-1] < l_e[0], f"{name}: the eager loss did not go down ({l_e[0]} -> {l_e[-1]})"
    got, want = _states(m_c), _states(m_e)
    assert [k for k, _ in got] == [k for k, _ in want]
    for (path, a), (_, b) in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=f"{name}: {path} after {STEPS} steps")
    return l_c, l_e
