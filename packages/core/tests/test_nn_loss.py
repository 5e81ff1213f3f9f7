"""The losses of ``ember.nn.loss`` against PyTorch's (forward and input gradients) on every installed
backend."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from _nn_support import (
    BACKENDS,
    ad_device,
    assert_close,
    check_grads,
    ints,
    tensor,
    torch_t,
)
from ember.nn import loss as L
from ember.tensor import activation as A

torch = pytest.importorskip("torch")
F = torch.nn.functional
rng = np.random.default_rng(17)

CE_CASES = {
    "plain": ({}, {}),
    "weights": ({"weights": [1.0, 2.0, 0.5, 3.0, 1.5]}, {"weight": [1.0, 2.0, 0.5, 3.0, 1.5]}),
    "smoothing": ({"smoothing": 0.1}, {"label_smoothing": 0.1}),
    "pad": ({"pad_tokens": [1]}, {"ignore_index": 1}),
    "all": ({"pad_tokens": [1], "weights": [1.0, 2.0, 0.5, 3.0, 1.5], "smoothing": 0.2},
            {"ignore_index": 1, "weight": [1.0, 2.0, 0.5, 3.0, 1.5], "label_smoothing": 0.2}),
}


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", list(CE_CASES))
def test_cross_entropy_matches_torch(backend_name: str, case: str) -> None:
    ours, theirs = CE_CASES[case]
    dev = ad_device(backend_name)
    loss = L.CrossEntropyLossConfig(**ours).init(dev)
    ln = rng.standard_normal((6, 5)) * 2
    y = np.array([0, 1, 4, 2, 1, 3])
    x = tensor(ln, dev).require_grad()
    xt = torch_t(ln, True)
    if "weight" in theirs:
        theirs = {**theirs, "weight": torch_t(theirs["weight"])}
    check_grads(loss(x, ints(y, dev)), F.cross_entropy(xt, torch.tensor(y), **theirs).reshape(1), [("logits", x)],
                [xt])


def test_cross_entropy_with_probabilities(backend_name: str) -> None:
    dev = ad_device(backend_name)
    p = rng.dirichlet(np.ones(4), 5)
    y = rng.integers(0, 4, 5)
    out = L.CrossEntropyLossConfig(logits=False).init(dev)(tensor(p, dev), ints(y, dev))
    assert_close(out, [-np.mean(np.log(p[np.arange(5), y]))])


@pytest.mark.parametrize("logits", [True, False])
@pytest.mark.parametrize("extras", ["plain", "weights", "smoothing"])
def test_binary_cross_entropy_matches_torch(backend_name: str, logits: bool, extras: str) -> None:
    dev = ad_device(backend_name)
    kw: dict = {"logits": logits}
    if extras == "weights":
        kw["weights"] = [1.0, 2.0, 0.5]
    if extras == "smoothing":
        kw["smoothing"] = 0.1
    loss = L.BinaryCrossEntropyLossConfig(**kw).init(dev)
    raw = rng.standard_normal((4, 3))
    inp = raw if logits else 1 / (1 + np.exp(-raw))
    y = rng.integers(0, 2, (4, 3))
    x = tensor(inp, dev).require_grad()
    xt = torch_t(inp, True)
    yt = torch_t(y * 0.9 + 0.05 if extras == "smoothing" else y)
    w = torch_t(kw["weights"]) if "weights" in kw else None
    fn = F.binary_cross_entropy_with_logits if logits else F.binary_cross_entropy
    check_grads(loss(x, ints(y, dev)), fn(xt, yt, weight=w).reshape(1), [("x", x)], [xt], rtol=1e-4)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_regression_losses_match_torch(backend_name: str, reduction: str) -> None:
    dev = ad_device(backend_name)
    pn, tn = rng.standard_normal((4, 5)) * 2, rng.standard_normal((4, 5))
    cases = [
        (L.MseLoss(), lambda p, t: F.mse_loss(p, t, reduction=reduction)),
        (L.HuberLossConfig(0.7).init(), lambda p, t: F.huber_loss(p, t, reduction=reduction, delta=0.7)),
        (L.SmoothL1LossConfig(0.5).init(), lambda p, t: F.smooth_l1_loss(p, t, reduction=reduction, beta=0.5)),
    ]
    for ours, theirs in cases:
        p = tensor(pn, dev).require_grad()
        pt = torch_t(pn, True)
        check_grads(ours(p, tensor(tn, dev), reduction), theirs(pt, torch_t(tn)).reshape(1), [("p", p)], [pt])


@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(backend_name: str, log_target: bool) -> None:
    dev = ad_device(backend_name)
    logq = np.log(rng.dirichlet(np.ones(5), 3))
    target = rng.dirichlet(np.ones(5), 3)
    target[0, 1] = 0.0  # a zero probability contributes 0
    tgt = np.log(target + 1e-12) if log_target else target
    x = tensor(logq, dev).require_grad()
    xt = torch_t(logq, True)
    expected = F.kl_div(xt, torch_t(tgt), reduction="batchmean", log_target=log_target).reshape(1)
    check_grads(L.KLDivLossConfig(log_target).init()(x, tensor(tgt, dev)), expected, [("input", x)], [xt])


def test_cosine_embedding_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
    y = np.array([1, -1, 1, -1, -1, 1])
    x1, x2 = tensor(a, dev).require_grad(), tensor(b, dev).require_grad()
    t1, t2 = torch_t(a, True), torch_t(b, True)
    out = L.CosineEmbeddingLossConfig(margin=0.1).init()(x1, x2, ints(y, dev))
    expected = F.cosine_embedding_loss(t1, t2, torch.tensor(y), margin=0.1).reshape(1)
    check_grads(out, expected, [("x1", x1), ("x2", x2)], [t1, t2])


@pytest.mark.parametrize("log_input,full", [(True, False), (False, False), (True, True)])
def test_poisson_nll_matches_torch(backend_name: str, log_input: bool, full: bool) -> None:
    dev = ad_device(backend_name)
    pn = rng.standard_normal((3, 4)) if log_input else rng.uniform(0.1, 3.0, (3, 4))
    tn = rng.integers(0, 5, (3, 4)).astype(np.float64)
    p = tensor(pn, dev).require_grad()
    pt = torch_t(pn, True)
    out = L.PoissonNllLossConfig(log_input=log_input, full=full).init()(p, tensor(tn, dev))
    expected = F.poisson_nll_loss(pt, torch_t(tn), log_input=log_input, full=full).reshape(1)
    check_grads(out, expected, [("p", p)], [pt])


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_ctc_matches_torch(backend_name: str, reduction: str) -> None:
    dev = ad_device(backend_name)
    steps, batch, classes = 12, 3, 5
    logits = rng.standard_normal((steps, batch, classes))
    targets = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 1, 2]])  # repeated labels need a blank between
    in_len, tg_len = np.array([12, 9, 10]), np.array([4, 2, 4])
    # gradients are compared with respect to the logits: PyTorch's CTC backward returns the logits'
    # gradient (it assumes a log_softmax in front), so through log_softmax both are the true gradient
    x = tensor(logits, dev).require_grad()
    xt = torch_t(logits, True)
    loss = L.CTCLossConfig(reduction=L.Reduction(reduction)).init()
    out = loss(A.log_softmax(x, 2), ints(targets, dev), ints(in_len, dev), ints(tg_len, dev))
    expected = F.ctc_loss(xt.log_softmax(2), torch.tensor(targets), torch.tensor(in_len), torch.tensor(tg_len),
                          reduction=reduction).reshape(1)
    check_grads(out, expected, [("logits", x)], [xt], rtol=1e-4)


def test_ctc_impossible_alignment() -> None:
    dev = ember.backend("numpy").device()
    logp = np.log(np.full((2, 1, 3), 1 / 3))
    args = (tensor(logp, dev), ints([[1, 1]], dev), ints([2], dev), ints([2], dev))  # needs 3 steps
    assert np.isinf(L.CTCLoss().forward_no_reduction(*args).to_numpy()[0])
    assert L.CTCLossConfig(zero_infinity=True).init().forward_no_reduction(*args).to_numpy()[0] == 0.0


def test_loss_errors() -> None:
    dev = ember.backend("numpy").device()
    with pytest.raises(ember.ShapeError, match=r"CrossEntropyLoss: expected logits \[batch, num_classes\] and "
                                                r"targets \[batch\], got \[3, 4\] and \[2\]"):
        L.CrossEntropyLossConfig().init(dev)(tensor(np.zeros((3, 4)), dev), ints([0, 1], dev))
    with pytest.raises(ember.ShapeError, match="MseLoss: predictions"):
        L.MseLoss()(tensor(np.zeros(3), dev), tensor(np.zeros(4), dev))
    with pytest.raises(ember.ConfigError, match="smoothing must be in"):
        L.CrossEntropyLossConfig(smoothing=1.5).init(dev)
