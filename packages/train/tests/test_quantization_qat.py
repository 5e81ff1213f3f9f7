"""Quantization-aware training with the Learner: ``Quantizer.prepare_qat`` -> ``Learner.fit`` -> ``convert``."""

from __future__ import annotations

import numpy as np
import pytest

import helpers as h
from ember.optim import AdamConfig
from ember.quantization import (
    Calibration,
    FakeQuantized,
    QuantizedLinear,
    Quantizer,
    QuantLevel,
    QuantScheme,
    QuantValue,
    calibrate,
)
from ember.record import NamedMpkFileRecorder
from ember_train import LearnerBuilder
from ember_train.metric import AccuracyMetric, LossMetric


@pytest.mark.parametrize("backend", ["numpy", "torch", "jax"])
def test_qat_with_the_learner_then_convert(tmp_path, backend) -> None:  # type: ignore[no-untyped-def]
    if backend != "numpy":
        pytest.importorskip(backend)
    dev = h.devices(backend)
    model = h.Mlp.init(dev, dropout=0.0)
    quantizer = Quantizer(Calibration.moving_average(0.1), QuantScheme(QuantValue.Q8S, QuantLevel.axis(0)))
    qat = quantizer.prepare_qat(model)
    assert isinstance(qat.l1, FakeQuantized) and isinstance(qat.l2, FakeQuantized)
    train, valid = h.loaders()
    compiled = dev.backend.capabilities.compiles_steps  # torch and jax: the Learner compiles the step
    if compiled:  # observers learn only eagerly, so calibrate first
        data = h.dataset(32, 1)
        calibrate(qat, [h.batcher([data.get(i) for i in range(32)], dev)], lambda m, b: m.forward_classification(b))
    result = (LearnerBuilder(tmp_path)
              .metric_train_numeric(AccuracyMetric()).metric_valid_numeric(AccuracyMetric())
              .metric_train_numeric(LossMetric()).metric_valid_numeric(LossMetric())
              .with_file_checkpointer(NamedMpkFileRecorder())
              .devices([dev]).num_epochs(3)
              .build(qat, AdamConfig().init(), 2e-2).fit(train, valid))
    trained = result.model
    steps = 1 if compiled else 3 * 6  # 96 / 16 steps per epoch, eager; the one calibration batch when compiled
    assert isinstance(trained.l1, FakeQuantized) and trained.l1.observer.count == steps
    w0, w1 = model.l1.weight.val().to_numpy(), trained.l1.layer.weight.val().to_numpy()
    assert np.abs(w1 - w0).max() > 1e-3  # the optimizer updated the float weights through fake quantization
    q = quantizer.convert(trained)
    assert isinstance(q.l1, QuantizedLinear) and q.l1.input.static
    # the converted model predicts what the trained QAT model predicts in validation (the same quantized numbers)
    hits, agree, n = 0, 0, 0
    frozen, q_inner = trained.valid(), q.valid()  # the converted layers keep the QAT model's (Autodiff) device
    data = h.dataset(48, 2)
    for start in range(0, 48, 16):
        b = h.batcher([data.get(i) for i in range(start, start + 16)], dev.inner)
        logits_q = q_inner.forward_classification(b).output.to_numpy()
        logits_f = frozen.forward_classification(b).output.to_numpy()
        np.testing.assert_allclose(logits_q, logits_f, rtol=1e-4, atol=1e-4)
        pred = logits_q.argmax(1)
        hits += int((pred == b.targets.to_numpy()).sum())
        agree += int((pred == logits_f.argmax(1)).sum())
        n += len(pred)
    assert agree == n and hits / n > 0.65  # chance is 1/3; the float model reaches about 0.8 on this noisy data
