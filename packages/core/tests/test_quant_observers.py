"""Calibration observers against ``torch.ao``'s observers and numpy float64 references, on every backend."""

from __future__ import annotations

import numpy as np
import pytest

from _nn_support import BACKENDS, plain_device, tensor
from ember import ConfigError
from ember.quantization import Calibration, QuantizationError

rng = np.random.default_rng(33)


@pytest.fixture(params=BACKENDS)
def dev(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    return plain_device(request.param)


def _batches(n: int = 5) -> list[np.ndarray]:
    return [(rng.standard_normal((4, 6, 3)) * (i + 1) + i).astype(np.float32) for i in range(n)]


def test_min_max_is_the_running_extremes(dev) -> None:  # type: ignore[no-untyped-def]
    obs = Calibration.min_max().observer()
    xs = _batches()
    for x in xs:
        obs.update(tensor(x, dev))
    lo, hi = obs.range()
    assert lo.shape == () and float(lo) == float(np.min([x.min() for x in xs]))
    assert float(hi) == float(np.max([x.max() for x in xs]))


def test_min_max_per_axis(dev) -> None:  # type: ignore[no-untyped-def]
    obs = Calibration.min_max().observer(axis=1)
    xs = _batches()
    for x in xs:
        obs.update(tensor(x, dev))
    lo, hi = obs.range()
    allx = np.concatenate(xs, axis=0)
    np.testing.assert_array_equal(lo, allx.min(axis=(0, 2)))
    np.testing.assert_array_equal(hi, allx.max(axis=(0, 2)))


def test_moving_average_formula(dev) -> None:  # type: ignore[no-untyped-def]
    obs = Calibration.moving_average(0.25).observer()
    xs = _batches()
    lo = hi = None
    for x in xs:
        obs.update(tensor(x, dev))
        a, b = float(x.min()), float(x.max())  # torch.ao: min += c * (x.min() - min), the first sets it
        lo = a if lo is None else lo + 0.25 * (a - lo)
        hi = b if hi is None else hi + 0.25 * (b - hi)
    got_lo, got_hi = obs.range()
    assert float(got_lo) == pytest.approx(lo, rel=1e-12) and float(got_hi) == pytest.approx(hi, rel=1e-12)


def test_observers_match_torch_ao() -> None:
    torch = pytest.importorskip("torch")
    from torch.ao.quantization.observer import (
        MinMaxObserver,
        MovingAverageMinMaxObserver,
        PerChannelMinMaxObserver,
    )

    xs = _batches(6)
    cases = [
        (Calibration.min_max().observer(), MinMaxObserver()),
        (Calibration.moving_average(0.01).observer(), MovingAverageMinMaxObserver(averaging_constant=0.01)),
        (Calibration.moving_average(0.3).observer(), MovingAverageMinMaxObserver(averaging_constant=0.3)),
        (Calibration.min_max().observer(axis=1), PerChannelMinMaxObserver(ch_axis=1)),
    ]
    for ours, ref in cases:
        for x in xs:
            ours.update(x)
            ref(torch.from_numpy(x))
        lo, hi = ours.range()
        np.testing.assert_allclose(lo, ref.min_val.double().numpy(), rtol=1e-6, err_msg=type(ref).__name__)
        np.testing.assert_allclose(hi, ref.max_val.double().numpy(), rtol=1e-6, err_msg=type(ref).__name__)


def test_percentile_clips_outliers_and_matches_numpy(dev) -> None:  # type: ignore[no-untyped-def]
    obs = Calibration.percentile(99.0, bins=4096).observer()
    xs = [rng.standard_normal(20000).astype(np.float32) for _ in range(3)]
    xs[1][:3] = [40.0, -35.0, 50.0]  # outliers widen the histogram range after the first batch
    for x in xs:
        obs.update(tensor(x, dev))
    lo, hi = obs.range()
    allx = np.concatenate(xs).astype(np.float64)
    want_lo, want_hi = np.percentile(allx, 1.0), np.percentile(allx, 99.0)
    bin_width = (50.0 + 35.0) / 4096
    # the re-binned histogram places the first batch's counts at bin centres: within two bins of numpy's value
    assert abs(float(lo) - want_lo) < 2.5 * bin_width and abs(float(hi) - want_hi) < 2.5 * bin_width
    mm = Calibration.min_max().observer()
    for x in xs:
        mm.update(x)
    assert float(mm.range()[1]) == 50.0 and float(hi) < 3.0  # min-max keeps the outlier, the percentile does not


def test_percentile_100_is_the_min_max() -> None:
    obs = Calibration.percentile(100.0).observer()
    x = rng.standard_normal(1000)
    obs.update(x)
    lo, hi = obs.range()
    assert float(lo) == pytest.approx(x.min()) and float(hi) == pytest.approx(x.max())


def test_observer_errors() -> None:
    obs = Calibration.min_max().observer()
    with pytest.raises(QuantizationError, match="no tensor was observed"):
        obs.range()
    with pytest.raises(QuantizationError, match="NaN"):
        obs.update(np.array([1.0, np.nan]))
    with pytest.raises(QuantizationError, match="infinite"):
        obs.update(np.array([1.0, np.inf]))
    with pytest.raises(QuantizationError, match="axis 3 is out of range"):
        Calibration.min_max().observer(axis=3).update(np.zeros((2, 2)))
    per_axis = Calibration.min_max().observer(axis=0)
    per_axis.update(np.zeros((2, 3)))
    with pytest.raises(QuantizationError, match="3 channels in this tensor but 2"):
        per_axis.update(np.zeros((3, 3)))
    with pytest.raises(ConfigError, match="momentum"):
        Calibration.moving_average(0.0)
    with pytest.raises(ConfigError, match="p must be in"):
        Calibration.percentile(30.0)
    with pytest.raises(ConfigError, match="per tensor only"):
        Calibration.percentile().observer(axis=0)
