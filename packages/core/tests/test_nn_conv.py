"""Convolution, transposed convolution, pooling and interpolation layers against PyTorch (forward,
input and weight gradients) on every installed backend, and the issue's small CNN."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from _nn_support import (
    BACKENDS,
    ad_device,
    check_grads,
    param_np,
    plain_device,
    tensor,
    torch_t,
)
from ember import nn

torch = pytest.importorskip("torch")
F = torch.nn.functional
rng = np.random.default_rng(8)


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def _conv_case(dev: object, layer: nn.Module, xn: np.ndarray, torch_fn: object, **kw: object) -> None:
    x = tensor(xn, dev).require_grad()
    xt = torch_t(xn, True)
    wt = torch_t(param_np(layer.weight), True)
    bt = torch_t(param_np(layer.bias), True)
    expected = torch_fn(xt, wt, bt, **kw)  # type: ignore[operator]
    check_grads(layer(x), expected, [("x", x), ("weight", layer.weight.val()), ("bias", layer.bias.val())],
                [xt, wt, bt])


def test_conv1d_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    layer = nn.Conv1dConfig((4, 6), (3,), stride=(2,), dilation=(2,), groups=2,
                            padding=nn.PaddingConfig1d.Explicit(1)).init(dev)
    assert layer.weight.shape == (6, 2, 3)
    _conv_case(dev, layer, rng.standard_normal((2, 4, 11)), F.conv1d, stride=2, padding=1, dilation=2, groups=2)


@pytest.mark.parametrize("kernel", [(3, 3), (4, 2)])
def test_conv2d_same_padding_matches_torch(backend_name: str, kernel: tuple[int, int]) -> None:
    dev = ad_device(backend_name)
    layer = nn.Conv2dConfig((3, 5), kernel, padding=nn.PaddingConfig2d.Same).init(dev)
    xn = rng.standard_normal((2, 3, 7, 6))
    out = layer(tensor(xn, dev))
    assert out.shape == (2, 5, 7, 6)
    (kh, kw) = kernel  # PyTorch's "same": the extra padding of an even kernel goes right / bottom

    def same(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        pads = ((kw - 1) // 2, kw // 2, (kh - 1) // 2, kh // 2)
        return F.conv2d(F.pad(x, pads), w, b)

    _conv_case(dev, layer, xn, same)


def test_conv2d_strided_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    layer = nn.Conv2dConfig((2, 4), (3, 2), stride=(2, 1), padding=nn.PaddingConfig2d.Explicit(1, 0)).init(dev)
    _conv_case(dev, layer, rng.standard_normal((2, 2, 8, 7)), F.conv2d, stride=(2, 1), padding=(1, 0))


def test_conv3d_matches_torch(backend_name: str) -> None:
    dev = ad_device(backend_name)
    layer = nn.Conv3dConfig((2, 3), (2, 3, 2)).init(dev)
    _conv_case(dev, layer, rng.standard_normal((1, 2, 4, 5, 4)), F.conv3d)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_transpose_matches_torch(backend_name: str, nd: int) -> None:
    dev = ad_device(backend_name)
    cfg = {1: nn.ConvTranspose1dConfig, 2: nn.ConvTranspose2dConfig, 3: nn.ConvTranspose3dConfig}[nd]
    layer = cfg((4, 6), (3,) * nd, stride=(2,) * nd, padding=(1,) * nd, padding_out=(1,) * nd, groups=2).init(dev)
    assert layer.weight.shape == (4, 3) + (3,) * nd
    fn = {1: F.conv_transpose1d, 2: F.conv_transpose2d, 3: F.conv_transpose3d}[nd]
    _conv_case(dev, layer, rng.standard_normal((2, 4) + (4,) * nd), fn, stride=2, padding=1, output_padding=1,
               groups=2)


POOLS = [
    ("max1", lambda: nn.MaxPool1dConfig((3,), strides=(2,), padding=nn.PaddingConfig1d.Explicit(1)).init(),
     lambda x: F.max_pool1d(x, 3, 2, 1), (2, 3, 9)),
    ("max2", lambda: nn.MaxPool2dConfig((2, 2)).init(), lambda x: F.max_pool2d(x, 2), (2, 3, 6, 7)),
    ("max2_dil_ceil", lambda: nn.MaxPool2dConfig((3, 3), strides=(2, 2), dilation=(2, 1), ceil_mode=True).init(),
     lambda x: F.max_pool2d(x, 3, 2, 0, (2, 1), ceil_mode=True), (1, 2, 9, 8)),
    ("avg1", lambda: nn.AvgPool1dConfig((4,), strides=(2,)).init(), lambda x: F.avg_pool1d(x, 4, 2), (2, 3, 10)),
    ("avg2_pad", lambda: nn.AvgPool2dConfig((3, 3), strides=(2, 2), padding=nn.PaddingConfig2d.Explicit(1, 1),
                                            count_include_pad=False).init(),
     lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (2, 2, 7, 6)),
    ("adaptive1", lambda: nn.AdaptiveAvgPool1dConfig(3).init(), lambda x: F.adaptive_avg_pool1d(x, 3), (2, 3, 8)),
    ("adaptive2", lambda: nn.AdaptiveAvgPool2dConfig((2, 3)).init(), lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
     (2, 3, 7, 5)),
    ("interp1_linear", lambda: nn.Interpolate1dConfig(output_size=7, mode=nn.InterpolateMode.LINEAR).init(),
     lambda x: F.interpolate(x, size=7, mode="linear", align_corners=False), (2, 3, 5)),
    ("interp2_nearest", lambda: nn.Interpolate2dConfig(scale_factor=(2.0, 1.5)).init(),
     lambda x: F.interpolate(x, size=(8, 6), mode="nearest"), (1, 2, 4, 4)),
    ("interp2_bilinear", lambda: nn.Interpolate2dConfig(output_size=(5, 9), mode=nn.InterpolateMode.LINEAR).init(),
     lambda x: F.interpolate(x, size=(5, 9), mode="bilinear", align_corners=False), (2, 2, 4, 6)),
    ("interp2_bicubic", lambda: nn.Interpolate2dConfig(output_size=(6, 5), mode=nn.InterpolateMode.CUBIC).init(),
     lambda x: F.interpolate(x, size=(6, 5), mode="bicubic", align_corners=False), (1, 2, 4, 3)),
]


@pytest.mark.parametrize("case", POOLS, ids=[c[0] for c in POOLS])
def test_pool_and_interpolate_match_torch(backend_name: str, case: tuple) -> None:
    _, make, ref, shape = case
    dev = ad_device(backend_name)
    xn = rng.standard_normal(shape)
    x = tensor(xn, dev).require_grad()
    xt = torch_t(xn, True)
    check_grads(make()(x), ref(xt), [("x", x)], [xt])


def test_small_cnn_gives_batch_by_classes(backend_name: str) -> None:
    # the CNN: Conv2d 1->16 same, ReLU, MaxPool 2x2, Conv2d 16->32, ReLU, AdaptiveAvgPool 1x1, Linear 32->10
    dev = ad_device(backend_name)
    conv1 = nn.Conv2dConfig((1, 16), (3, 3), padding=nn.PaddingConfig2d.Same).init(dev)
    pool = nn.MaxPool2dConfig((2, 2)).init()
    conv2 = nn.Conv2dConfig((16, 32), (3, 3)).init(dev)
    gap = nn.AdaptiveAvgPool2dConfig((1, 1)).init()
    head = nn.LinearConfig(32, 10).init(dev)
    relu = nn.Relu()
    x = tensor(rng.standard_normal((4, 1, 28, 28)), dev)
    h = pool(relu(conv1(x)))
    assert h.shape == (4, 16, 14, 14)
    h = gap(relu(conv2(h))).reshape([4, 32])
    y = head(h)
    assert y.shape == (4, 10)
    if backend_name == "jax":  # eager jax compiles every op shape: the backward adds ~20 s, covered above
        return
    grads = y.sum().backward()
    assert conv1.weight.val().grad(grads).shape == (16, 1, 3, 3)


def test_conv_errors_name_layer_layout_and_shape() -> None:
    dev = ember.backend("numpy").device()
    conv = nn.Conv2dConfig((3, 8), (3, 3)).init(dev)
    with pytest.raises(ember.ShapeError, match=r"Conv2d: expected input of shape \[batch, channels_in, height, "
                                                r"width\] with channels_in = 3, got shape \[2, 1, 8, 8\]"):
        conv(tensor(np.zeros((2, 1, 8, 8)), dev))
    with pytest.raises(ember.ShapeError, match=r"Conv2d: expected input of shape \[batch, channels_in, height, "
                                                r"width\] \(rank 4\), got shape \[3, 8, 8\]"):
        conv(tensor(np.zeros((3, 8, 8)), dev))
    with pytest.raises(ember.ShapeError, match="kernel"):
        conv(tensor(np.zeros((1, 3, 2, 2)), dev))
    with pytest.raises(ember.ConfigError, match=r"groups \(2\) must divide both channels_in \(3\)"):
        nn.Conv2dConfig((3, 8), (3, 3), groups=2).init(dev)
    with pytest.raises(ember.ConfigError, match="Same needs stride 1"):
        nn.Conv2dConfig((3, 8), (3, 3), stride=(2, 2), padding=nn.PaddingConfig2d.Same).init(dev)
    with pytest.raises(ember.ConfigError, match="at most half of kernel_size"):
        nn.MaxPool2dConfig((2, 2), padding=nn.PaddingConfig2d.Explicit(2, 2)).init()


def test_conv_config_round_trips_json(tmp_path: object) -> None:
    cfg = nn.Conv2dConfig((1, 16), (3, 3), padding=nn.PaddingConfig2d.Explicit(1, 1),
                          initializer=nn.KaimingNormal(gain=2.0 ** 0.5))
    path = cfg.save(tmp_path / "conv.json")  # type: ignore[operator]
    assert nn.Conv2dConfig.load(path) == cfg


def test_conv_default_init_bound() -> None:
    layer = nn.Conv2dConfig((8, 16), (3, 3)).init(plain_device("numpy"))
    bound = 1 / np.sqrt(8 * 9)  # PyTorch's default: 1 / sqrt(fan_in)
    w = param_np(layer.weight)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_layers_check_their_options_once_at_init_not_per_forward(nd: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The config's ``init`` checks the options and builds the weight; ``forward`` checks the input once and does
    not repeat the argument checks of the functional ``conv*d`` / ``conv_transpose*d`` (issue 31). What depends on
    the input (the kernel fitting the padded input) is still checked."""
    from ember.tensor import functional as M

    dev = ember.backend("numpy").device()
    conv = getattr(nn, f"Conv{nd}dConfig")((2, 4), (3,) * nd).init(dev)
    deconv = getattr(nn, f"ConvTranspose{nd}dConfig")((2, 4), (3,) * nd).init(dev)
    x = tensor(rng.standard_normal((1, 2, *(5,) * nd)), dev)

    def repeated(*args: object, **kwargs: object) -> None:
        raise AssertionError("the functional convolution's argument checks ran in a layer's forward")

    for name in ("_ints", "_groups", "_rank", "_tensor"):
        monkeypatch.setattr(M, name, repeated)
    assert list(conv(x).shape) == [1, 4, *(3,) * nd]
    assert list(deconv(x).shape) == [1, 4, *(7,) * nd]
    with pytest.raises(ember.ShapeError, match="larger than the padded input"):
        conv(tensor(np.zeros((1, 2, *(2,) * nd)), dev))
    with pytest.raises(AssertionError, match="argument checks"):  # the functional API keeps its checks
        getattr(M, f"conv{nd}d")(x, conv.weight.val())
