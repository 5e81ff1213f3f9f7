"""``ember_numpy._quiet``: kernels run with numpy's floating-point errors ignored, through a private context
(``Context.run``) with the context variable's ``set``/``reset`` as fallback; the caller's error state is never
changed, in this thread or another."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

from ember_numpy import _quiet
from ember_numpy._activation import NumpyActivationOps
from ember_numpy._numeric import NumpyNumericOps

BIG = np.float32([3e38, -3e38, 1.0])


@pytest.fixture(autouse=True)
def warnings_are_errors() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def test_quiet_kernels_give_ieee_results_silently_and_keep_the_callers_state() -> None:
    mul = _quiet.quiet2(np.multiply)
    with np.errstate(all="raise"):
        before = np.geterr()
        np.testing.assert_array_equal(mul(BIG, np.float32(10.0)), np.float32([np.inf, -np.inf, 10.0]))
        np.testing.assert_array_equal(NumpyNumericOps.matmul(BIG[None, :2], BIG[:2, None]), [[np.inf]])
        assert np.isnan(NumpyNumericOps.matmul(BIG[None, :2], np.float32([[1e10], [1e10]]))[0, 0])
        assert np.geterr() == before  # "raise" everywhere: nothing was ignored outside the kernels
        with pytest.raises(FloatingPointError):
            np.multiply(BIG, np.float32(10.0))


def test_a_kernel_inside_a_kernel_falls_back_to_the_context_variable() -> None:
    # the outer call holds the private context: the inner one cannot enter it again and uses set/reset
    inner = _quiet.quiet2(np.multiply)
    seen: list[dict[str, str]] = []

    def outer(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        r = inner(a, b)
        seen.append(np.geterr())
        return np.add(r, b)

    with np.errstate(all="raise"):
        r = _quiet.quiet2(outer)(BIG, np.float32(10.0))
        assert np.geterr()["over"] == "raise"
    np.testing.assert_array_equal(r, np.float32([np.inf, -np.inf, 20.0]))
    assert seen == [{"divide": "ignore", "over": "ignore", "under": "ignore", "invalid": "ignore"}]


def test_kernels_from_several_threads_are_quiet_and_leave_each_threads_state() -> None:
    a = np.full((64, 64), 3e38, np.float32)
    ops = NumpyNumericOps()
    errors: list[BaseException] = []
    states: list[dict[str, str]] = []

    def work() -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                with np.errstate(all="raise"):
                    for _ in range(200):
                        assert np.isinf(NumpyNumericOps.mul(a, a)).all()
                        assert np.isinf(NumpyNumericOps.matmul(a, a)).all()
                        assert np.isinf(ops.sum_dim(ops.sum_dim(a, 1), 0)).all()
                    states.append(np.geterr())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert states == [{"divide": "raise", "over": "raise", "under": "raise", "invalid": "raise"}] * 4


def test_a_runtime_error_of_the_kernel_itself_propagates() -> None:
    calls = []

    def bad(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        calls.append(1)
        raise RuntimeError("kernel failed")

    with pytest.raises(RuntimeError, match="kernel failed"):
        _quiet.quiet2(bad)(BIG, BIG)
    assert len(calls) == (2 if _quiet.FAST else 1)  # in the context, then once more under set/reset (documented)


@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64, np.int8, np.int32, np.int64, np.uint8])
def test_neg_and_abs_never_raise_a_floating_point_event(dt: type) -> None:
    """The reason they run without quiet: sign-bit operations (Int: wrapping) raise nothing, even under "raise"."""
    info = np.finfo(dt) if np.dtype(dt).kind == "f" else np.iinfo(dt)
    vals = [info.min, info.max, 0, 1]
    if np.dtype(dt).kind == "f":
        vals += [np.inf, -np.inf, np.nan, -0.0, float(info.tiny) / 2]
    a = np.array(vals, dt)
    with np.errstate(all="raise"):
        np.testing.assert_array_equal(NumpyNumericOps.neg(a), np.negative(a))
        np.testing.assert_array_equal(NumpyNumericOps.abs(a), np.abs(a))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_run_kernels_are_bit_identical_to_their_formulas(dt: type) -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal((32, 5)).astype(dt)
    g = rng.standard_normal((32, 5)).astype(dt)
    y = NumpyActivationOps.log_softmax(a, 1)
    s = a - np.maximum.reduce(a, 1, keepdims=True)
    want = s - np.log(np.add.reduce(np.exp(s), 1, keepdims=True))
    assert y.dtype == dt and y.tobytes() == want.tobytes()
    gb = NumpyActivationOps().log_softmax_backward(g, y, 1)
    assert gb.tobytes() == (g - np.exp(y) * np.add.reduce(g, 1, dt, keepdims=True)).tobytes()
    m = NumpyNumericOps.mean(a)
    assert m.shape == (1,) and m.tobytes() == (np.add.reduce(a, None, dt, keepdims=True) / a.size).reshape(1).tobytes()
    assert NumpyNumericOps().sum_dim(a, 0).tobytes() == np.add.reduce(a, 0, dt, keepdims=True).tobytes()
    assert NumpyNumericOps.matmul(a.T, g).tobytes() == np.matmul(a.T, g).tobytes()
    with np.errstate(all="raise"):
        assert np.isnan(NumpyNumericOps.mean(np.zeros((0, 3), dt))[0])  # 0/0: NaN, silently
