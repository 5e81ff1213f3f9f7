"""Learning-rate schedulers: sequences against PyTorch's schedulers or the docstring formulas, records, errors."""

from __future__ import annotations

import math

import pytest

from ember import ConfigError, RecordError
from ember.optim.lr_scheduler import (
    ComposedLrSchedulerConfig,
    ConstantLr,
    CosineAnnealingLrSchedulerConfig,
    ExponentialLrSchedulerConfig,
    LinearLrSchedulerConfig,
    LrScheduler,
    NoamLrSchedulerConfig,
    SchedulerReduction,
    SequentialLrSchedulerConfig,
    StepLrSchedulerConfig,
    as_lr_scheduler,
)
from ember.record import NamedMpkBytesRecorder


def seq(s: LrScheduler, n: int) -> list[float]:
    return [s.step() for _ in range(n)]


def torch_seq(make_sched, base_lr: float, n: int) -> list[float]:
    torch = pytest.importorskip("torch")
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=base_lr)
    sched = make_sched(opt)
    out = []
    for _ in range(n):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


def test_exponential_matches_torch():
    torch = pytest.importorskip("torch")
    ours = seq(ExponentialLrSchedulerConfig(0.8, 0.7).init(), 30)
    theirs = torch_seq(lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.7), 0.8, 30)
    assert ours == pytest.approx(theirs, rel=1e-12)
    assert seq(ExponentialLrSchedulerConfig(0.8, 0.1).init(), 3) == pytest.approx([0.8, 0.08, 0.008])  # Burn's test


def test_step_matches_torch():
    torch = pytest.importorskip("torch")
    ours = seq(StepLrSchedulerConfig(0.5, 3, gamma=0.1).init(), 12)
    theirs = torch_seq(lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.1), 0.5, 12)
    assert ours == pytest.approx(theirs, rel=1e-12)
    assert seq(StepLrSchedulerConfig(0.1, 2, gamma=2.0).init(), 6) == pytest.approx([0.1, 0.1, 0.2, 0.2, 0.4, 0.4])


def test_linear_matches_torch():
    torch = pytest.importorskip("torch")
    ours = seq(LinearLrSchedulerConfig(0.9, 0.5, 4).init(), 8)
    # LinearLR on a base rate of 1.0 with start/end factors equal to the rates
    theirs = torch_seq(
        lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.9, end_factor=0.5, total_iters=4), 1.0, 8
    )
    assert ours == pytest.approx(theirs, rel=1e-9)
    assert ours == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.5, 0.5, 0.5, 0.5])  # Burn's test
    assert seq(LinearLrSchedulerConfig(0.01, 0.04, 3).init(), 5) == pytest.approx([0.01, 0.02, 0.03, 0.04, 0.04])


def test_cosine_matches_torch_then_restarts():
    torch = pytest.importorskip("torch")
    n, lr0, lr_min = 10, 0.5, 0.1
    ours = seq(CosineAnnealingLrSchedulerConfig(lr0, n, min_lr=lr_min).init(), 3 * (n + 1))
    theirs = torch_seq(lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=n, eta_min=lr_min), lr0, n + 1)
    assert ours[: n + 1] == pytest.approx(theirs, rel=1e-9)
    formula = [lr_min + 0.5 * (lr0 - lr_min) * (1 + math.cos(math.pi * (i % (n + 1)) / n)) for i in range(3 * (n + 1))]
    assert ours == pytest.approx(formula, rel=1e-12)
    assert ours[n + 1] == lr0  # restart
    assert seq(CosineAnnealingLrSchedulerConfig(0.5, 2, min_lr=0.1).init(), 4) == pytest.approx([0.5, 0.3, 0.1, 0.5])


def test_noam_follows_the_paper_formula():
    factor, warmup, d = 2.0, 10, 64
    ours = seq(NoamLrSchedulerConfig(factor, warmup_steps=warmup, model_size=d).init(), 40)
    formula = [factor * d**-0.5 * min(t**-0.5, t * warmup**-1.5) for t in range(1, 41)]
    assert ours == pytest.approx(formula, rel=1e-12)
    assert max(range(40), key=lambda i: ours[i]) == warmup - 1  # peak at t = warmup_steps
    assert NoamLrSchedulerConfig(1.0).warmup_steps == 4000 and NoamLrSchedulerConfig(1.0).model_size == 512


def test_sequential_warmup_then_decay():
    cfg = SequentialLrSchedulerConfig(
        [
            LinearLrSchedulerConfig(0.1, 0.3, 2),
            ExponentialLrSchedulerConfig(0.5, 0.5),
            CosineAnnealingLrSchedulerConfig(0.8, 2),
        ],
        [2, 5],
    )
    assert seq(cfg.init(), 8) == pytest.approx([0.1, 0.2, 0.5, 0.25, 0.125, 0.8, 0.4, 0.0])  # Burn's test
    warm = SequentialLrSchedulerConfig(
        [LinearLrSchedulerConfig(1e-4, 1e-2, 100), CosineAnnealingLrSchedulerConfig(1e-2, 900)], [100]
    ).init()
    lrs = seq(warm, 1000)
    assert lrs[:101] == pytest.approx([1e-4 + (1e-2 - 1e-4) * i / 100 for i in range(100)] + [1e-2])
    assert lrs[100:] == pytest.approx([0.5e-2 * (1 + math.cos(math.pi * i / 900)) for i in range(900)])


def test_sequential_matches_torch_sequential_lr():
    torch = pytest.importorskip("torch")
    ours = seq(
        SequentialLrSchedulerConfig(
            [ExponentialLrSchedulerConfig(1.0, 0.5), StepLrSchedulerConfig(1.0, 2, gamma=0.1)], [3]
        ).init(),
        9,
    )
    lrs = torch.optim.lr_scheduler

    def make(o):
        return lrs.SequentialLR(o, [lrs.ExponentialLR(o, 0.5), lrs.StepLR(o, 2, 0.1)], milestones=[3])

    assert ours == pytest.approx(torch_seq(make, 1.0, 9), rel=1e-12)


@pytest.mark.parametrize(
    "reduction,combine",
    [(SchedulerReduction.Prod, lambda a, b: a * b), (SchedulerReduction.Sum, lambda a, b: a + b),
     (SchedulerReduction.Avg, lambda a, b: (a + b) / 2)],
)
def test_composed_reductions(reduction, combine):
    cfg = (
        ComposedLrSchedulerConfig(reduction=reduction)
        .linear(LinearLrSchedulerConfig(0.1, 1.0, 5))
        .exponential(ExponentialLrSchedulerConfig(0.9, 0.8))
    )
    a = seq(LinearLrSchedulerConfig(0.1, 1.0, 5).init(), 10)
    b = seq(ExponentialLrSchedulerConfig(0.9, 0.8).init(), 10)
    assert seq(cfg.init(), 10) == pytest.approx([combine(x, y) for x, y in zip(a, b)], rel=1e-12)
    assert ComposedLrSchedulerConfig.from_dict(cfg.to_dict()) == cfg


def test_composed_push_and_constant_factor():
    cfg = ComposedLrSchedulerConfig().push(StepLrSchedulerConfig(1.0, 2, gamma=0.5)).push(0.1)
    assert not hasattr(cfg, "step")  # a config is never mistaken for a scheduler (step() -> float)
    assert seq(cfg.init(), 5) == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.025])


def test_constant_and_plain_floats():
    assert seq(as_lr_scheduler(0.01), 3) == [0.01] * 3
    assert seq(ConstantLr(0.2), 2) == [0.2, 0.2]
    mixed = SequentialLrSchedulerConfig([0.5, ExponentialLrSchedulerConfig(0.4, 0.5)], [2])
    assert seq(mixed.init(), 4) == pytest.approx([0.5, 0.5, 0.4, 0.2])
    assert SequentialLrSchedulerConfig.from_dict(mixed.to_dict()) == mixed
    s = StepLrSchedulerConfig(0.1, 1).init()
    assert as_lr_scheduler(s) is s and isinstance(as_lr_scheduler(StepLrSchedulerConfig(0.1, 1)), LrScheduler)
    with pytest.raises(TypeError):
        as_lr_scheduler("fast")


CONFIGS = {
    "noam": NoamLrSchedulerConfig(1.0, warmup_steps=5, model_size=16),
    "exponential": ExponentialLrSchedulerConfig(0.5, 0.9),
    "cosine": CosineAnnealingLrSchedulerConfig(0.5, 4, min_lr=0.05),
    "linear": LinearLrSchedulerConfig(0.1, 0.5, 6),
    "step": StepLrSchedulerConfig(0.3, 3, gamma=0.5),
    "composed": ComposedLrSchedulerConfig().cosine(CosineAnnealingLrSchedulerConfig(1.0, 3)).noam(
        NoamLrSchedulerConfig(1.0, 4, 16)
    ),
    "sequential": SequentialLrSchedulerConfig(
        [LinearLrSchedulerConfig(0.01, 0.1, 4), StepLrSchedulerConfig(0.1, 2)], [4]
    ),
    "constant": ConstantLr(0.1),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("stop", [1, 4, 7])
def test_save_load_continues_the_sequence(name, stop):
    cfg = CONFIGS[name]
    straight = seq(cfg.init(), 15)
    s = cfg.init()
    seq(s, stop)
    rec = NamedMpkBytesRecorder()
    restored = cfg.init().load_record(rec.load(rec.record(s.to_record())))
    assert straight[:stop] + seq(restored, 15 - stop) == straight


def test_load_record_errors():
    with pytest.raises(RecordError, match="keys \\['iter_idx'\\]"):
        StepLrSchedulerConfig(0.1, 2).init().load_record({"step": 3})
    with pytest.raises(RecordError, match="2 child records"):
        CONFIGS["sequential"].init().load_record({"step": 1, "schedulers": [{}]})


@pytest.mark.parametrize(
    "cfg,match",
    [
        (ExponentialLrSchedulerConfig(0.0, 0.5), "initial_lr"),
        (ExponentialLrSchedulerConfig(0.5, 1.5), "gamma"),
        (CosineAnnealingLrSchedulerConfig(0.5, 0), "num_iters"),
        (CosineAnnealingLrSchedulerConfig(0.5, 10, min_lr=0.6), "min_lr"),
        (LinearLrSchedulerConfig(0.5, -0.1, 3), "final_lr"),
        (StepLrSchedulerConfig(0.5, 0), "step_size"),
        (NoamLrSchedulerConfig(1.0, warmup_steps=0), "warmup_steps"),
        (SequentialLrSchedulerConfig([0.1, 0.2], []), "expected 1 milestones"),
        (SequentialLrSchedulerConfig([0.1, 0.2, 0.3], [3, 2]), "strictly increasing"),
        (SequentialLrSchedulerConfig([], []), "at least one"),
        (SequentialLrSchedulerConfig([LinearLrSchedulerConfig(0.1, 0.2, 0)], []), "num_iters"),
    ],
)
def test_invalid_configs(cfg, match):
    with pytest.raises(ConfigError, match=match):
        cfg.init()
    with pytest.raises(ConfigError, match="lr"):
        ConstantLr(-1.0)
