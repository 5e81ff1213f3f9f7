"""``Tensor.pad`` with negative amounts crops first (``torch.nn.functional.pad``, ONNX ``Pad``), on every installed
backend, against numpy slicing then ``numpy.pad``."""

from __future__ import annotations

import numpy as np
import pytest

from _nn_support import BACKENDS, plain_device

X = np.arange(20, dtype=np.float32).reshape(4, 5)


def _cropped(pairs: list[tuple[int, int]]) -> np.ndarray:
    return X[tuple(slice(max(-a, 0), max(n - max(-b, 0), max(-a, 0))) for n, (a, b) in zip(X.shape, pairs))]


def _expected(pairs: list[tuple[int, int]], mode: str) -> np.ndarray:
    pos = [(max(a, 0), max(b, 0)) for a, b in pairs]
    np_mode = {"constant": "constant", "reflect": "reflect", "edge": "edge"}[mode]
    kw = {"constant_values": 7.0} if mode == "constant" else {}
    return np.pad(_cropped(pairs), pos, mode=np_mode, **kw)  # type: ignore[call-overload,no-any-return]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
@pytest.mark.parametrize("pairs", [[(-1, 2), (0, -2)], [(1, -3), (-2, 1)], [(-4, 0), (0, 0)], [(0, -9), (1, 1)]])
def test_negative_amounts_crop_before_padding(backend: str, mode: str, pairs: list[tuple[int, int]]) -> None:
    from ember import ShapeError, Tensor

    x = Tensor.from_data(X, plain_device(backend))
    if mode == "reflect" and any(0 < max(a, b) >= s for (a, b), s in zip(pairs, _cropped(pairs).shape)):
        with pytest.raises(ShapeError, match="reflect padding"):  # checked against the cropped dim
            x.pad(pairs, mode=mode)
        return
    want = _expected(pairs, mode)
    got = x.pad(pairs, 7.0) if mode == "constant" else x.pad(pairs, mode=mode)
    np.testing.assert_array_equal(np.asarray(got.to_data().to_numpy()), want)
