"""MultiHeadAttention (padding and causal masks), TransformerEncoder and TransformerDecoder (post- and
pre-norm) against PyTorch with the weights copied across, forward and gradients, on every backend."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from _nn_support import (
    BACKENDS,
    ad_device,
    assert_close,
    check_grads,
    param_np,
    tensor,
    torch_t,
)
from ember import nn

torch = pytest.importorskip("torch")
rng = np.random.default_rng(21)
D, H = 8, 2


@pytest.fixture(params=BACKENDS)
def backend_name(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


def _copy_mha(m: nn.MultiHeadAttention, t: torch.nn.MultiheadAttention) -> None:
    with torch.no_grad():
        t.in_proj_weight.copy_(torch_t(np.concatenate([param_np(lin.weight).T for lin in (m.query, m.key, m.value)])))
        t.in_proj_bias.copy_(torch_t(np.concatenate([param_np(lin.bias) for lin in (m.query, m.key, m.value)])))
        t.out_proj.weight.copy_(torch_t(param_np(m.output.weight).T))
        t.out_proj.bias.copy_(torch_t(param_np(m.output.bias)))


def _copy_linear(lin: nn.Linear, t: torch.nn.Linear) -> None:
    with torch.no_grad():
        t.weight.copy_(torch_t(param_np(lin.weight).T))
        t.bias.copy_(torch_t(param_np(lin.bias)))


def _pad_mask(batch: int, seq: int, lengths: list[int]) -> np.ndarray:
    return np.arange(seq)[None, :] >= np.array(lengths)[:, None]


@pytest.mark.parametrize("masks", ["none", "pad", "causal", "both"])
def test_mha_matches_torch(backend_name: str, masks: str) -> None:
    dev = ad_device(backend_name)
    m = nn.MultiHeadAttentionConfig(D, H, dropout=0.0).init(dev)
    t = torch.nn.MultiheadAttention(D, H, batch_first=True, dropout=0.0).double()
    _copy_mha(m, t)
    qn, kn = rng.standard_normal((2, 4, D)), rng.standard_normal((2, 5, D))
    q, k = tensor(qn, dev).require_grad(), tensor(kn, dev).require_grad()
    inp = nn.MhaInput(q, k, k)
    qt, kt = torch_t(qn, True), torch_t(kn, True)
    kwargs = {}
    if masks in ("pad", "both"):
        pm = _pad_mask(2, 5, [5, 3])
        inp = inp.with_mask_pad(ember.Tensor.from_data(pm, dev))
        kwargs["key_padding_mask"] = torch.tensor(pm)
    if masks in ("causal", "both"):
        cm = np.triu(np.ones((4, 5), bool), 1)
        inp = inp.with_mask_attn(ember.Tensor.from_data(np.broadcast_to(cm, (2, 4, 5)).copy(), dev))
        kwargs["attn_mask"] = torch.tensor(cm)
    out = m(inp)
    ctx_t, w_t = t(qt, kt, kt, need_weights=True, average_attn_weights=False, **kwargs)
    assert out.weights.shape == (2, H, 4, 5)
    assert_close(out.weights, w_t)
    check_grads(out.context, ctx_t, [("query", q), ("key", k), ("W_q", m.query.weight.val()),
                                     ("W_o", m.output.weight.val())],
                [qt, kt, t.in_proj_weight, t.out_proj.weight], [None, None, lambda g: g[:D].T, lambda g: g.T])


def test_autoregressive_mask_and_padding_mask() -> None:
    dev = ember.backend("numpy").device()
    m = nn.generate_autoregressive_mask(2, 3, dev).to_numpy()
    np.testing.assert_array_equal(m, np.broadcast_to(np.triu(np.ones((3, 3), bool), 1), (2, 3, 3)))
    pm = nn.generate_padding_mask(0, [[5, 6, 7], [8]], None, dev)
    np.testing.assert_array_equal(pm.tensor.to_numpy(), [[5, 6, 7], [8, 0, 0]])
    np.testing.assert_array_equal(pm.mask.to_numpy(), [[False, False, False], [False, True, True]])


def _copy_encoder_layer(e: nn.TransformerEncoderLayer, t: torch.nn.TransformerEncoderLayer) -> None:
    _copy_mha(e.mha, t.self_attn)
    _copy_linear(e.pwff.linear_inner, t.linear1)
    _copy_linear(e.pwff.linear_outer, t.linear2)


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_matches_torch(backend_name: str, norm_first: bool) -> None:
    dev = ad_device(backend_name)
    enc = nn.TransformerEncoderConfig(D, 16, H, 2, dropout=0.0, norm_first=norm_first).init(dev)
    layers = [torch.nn.TransformerEncoderLayer(D, H, 16, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=norm_first).double() for _ in range(2)]
    for e, t in zip(enc.layers, layers):
        _copy_encoder_layer(e, t)
    xn = rng.standard_normal((2, 5, D))
    pm = _pad_mask(2, 5, [5, 4])
    x = tensor(xn, dev).require_grad()
    out = enc(nn.TransformerEncoderInput(x).with_mask_pad(ember.Tensor.from_data(pm, dev))
              .with_mask_attn(nn.generate_autoregressive_mask(2, 5, dev)))
    xt = torch_t(xn, True)
    y = xt
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
    for t in layers:
        y = t(y, src_mask=causal, src_key_padding_mask=torch.tensor(pm))
    check_grads(out, y, [("x", x), ("layer0 W1", enc.layers[0].pwff.linear_inner.weight.val())],
                [xt, layers[0].linear1.weight], [None, lambda g: g.T])


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_decoder_matches_torch(backend_name: str, norm_first: bool) -> None:
    dev = ad_device(backend_name)
    dec = nn.TransformerDecoderConfig(D, 12, H, 2, dropout=0.0, norm_first=norm_first).init(dev)
    layers = [torch.nn.TransformerDecoderLayer(D, H, 12, dropout=0.0, activation="gelu", batch_first=True,
                                               norm_first=norm_first).double() for _ in range(2)]
    for e, t in zip(dec.layers, layers):
        _copy_mha(e.self_attn, t.self_attn)
        _copy_mha(e.cross_attn, t.multihead_attn)
        _copy_linear(e.pwff.linear_inner, t.linear1)
        _copy_linear(e.pwff.linear_outer, t.linear2)
    tn, mn = rng.standard_normal((2, 4, D)), rng.standard_normal((2, 6, D))
    mpm = _pad_mask(2, 6, [6, 3])
    tg, mem = tensor(tn, dev).require_grad(), tensor(mn, dev).require_grad()
    inp = (nn.TransformerDecoderInput(tg, mem).with_target_mask_attn(nn.generate_autoregressive_mask(2, 4, dev))
           .with_memory_mask_pad(ember.Tensor.from_data(mpm, dev)))
    out = dec(inp)
    tt, mt = torch_t(tn, True), torch_t(mn, True)
    y = tt
    for t in layers:
        y = t(y, mt, tgt_mask=torch.triu(torch.ones(4, 4, dtype=torch.bool), 1),
              memory_key_padding_mask=torch.tensor(mpm))
    check_grads(out, y, [("target", tg), ("memory", mem)], [tt, mt])


def test_attention_config_and_input_errors() -> None:
    dev = ember.backend("numpy").device()
    with pytest.raises(ember.ConfigError, match=r"n_heads \(3\) must divide d_model \(8\)"):
        nn.MultiHeadAttentionConfig(8, 3).init(dev)
    m = nn.MultiHeadAttentionConfig(8, 2).init(dev)
    with pytest.raises(ember.ShapeError, match=r"MultiHeadAttention: expected query of shape "
                                                r"\[batch, seq_length, d_model\] with d_model = 8"):
        m(nn.MhaInput.self_attn(tensor(np.zeros((1, 3, 6)), dev)))
    with pytest.raises(ember.ShapeError, match=r"mask_pad must have shape \[1, 3\]"):
        m(nn.MhaInput.self_attn(tensor(np.zeros((1, 3, 8)), dev)).with_mask_pad(
            ember.Tensor.from_data(np.zeros((1, 4), bool), dev)))


@pytest.mark.parametrize("quiet", [False, True])
def test_fused_attention_equals_the_unfused_path(backend_name: str, quiet: bool) -> None:
    """MultiHeadAttention runs the attention primitive; its context and gradients equal the unfused
    computation (the weights it computes on first read), masks and quiet_softmax included."""
    dev = ad_device(backend_name)
    m = nn.MultiHeadAttentionConfig(D, H, dropout=0.0, quiet_softmax=quiet).init(dev)
    qn = rng.standard_normal((2, 4, D))
    pad = ember.Tensor.from_data(_pad_mask(2, 4, [4, 2]), dev)
    causal = nn.generate_autoregressive_mask(2, 4, dev)
    inputs = nn.MhaInput.self_attn(tensor(qn, dev).require_grad()).with_mask_pad(pad).with_mask_attn(causal)
    x = inputs.query
    fused = m.forward(inputs)
    g_fused = x.grad(fused.context.sum().backward())
    weights = m.forward(inputs).weights  # a new graph: the first was consumed
    unfused_ctx = m.output.forward(m._merge(weights @ m._heads(m.value.forward(inputs.value))))
    assert_close(fused.context, unfused_ctx.to_numpy())
    g_unfused = x.grad(unfused_ctx.sum().backward())
    assert g_fused is not None and g_unfused is not None
    assert_close(g_fused, g_unfused.to_numpy())


@pytest.mark.parametrize("p", [0.5, 1.0])
def test_dropout_on_the_weights_draws_as_dropout_forward(backend_name: str, p: float) -> None:
    """With dropout the fused path draws the same mask as ``Dropout.forward`` on the weights did (same seed, same
    values), and its context equals the weights' product with the values."""
    dev = ad_device(backend_name)
    m = nn.MultiHeadAttentionConfig(D, H, dropout=p).init(dev)
    x = tensor(rng.standard_normal((2, 4, D)), dev)
    dev.backend.inner_backend.seed(3)
    out = m.forward(nn.MhaInput.self_attn(x))
    qh, kh, vh = (m._heads(lin.forward(x)) for lin in (m.query, m.key, m.value))
    dev.backend.inner_backend.seed(3)
    want = m.dropout.forward(m._weights(qh, kh, None))
    assert_close(out.weights, want.to_numpy())
    assert_close(out.context, m.output.forward(m._merge(want @ vh)).to_numpy())
    if p < 1.0:
        w = out.weights.to_numpy()
        assert (w == 0.0).mean() > 0.2  # dropped, the others scaled by 1 / (1 - p)
    assert repr(out).startswith("MhaOutput(weights=")


def test_numpy_attention_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The numpy kernel over blocks of one batch row equals the contract's composite (mask, quiet softmax)."""
    import ember_numpy._attention as K
    from ember.backend._ops_attention import AttentionOps

    B = ember.backend("numpy", float_dtype="float64")
    monkeypatch.setattr(K, "BLOCK_BYTES", 1)
    q, k, v = (rng.standard_normal((3, 2, 4, 5)) for _ in range(3))
    mask = rng.random((3, 1, 4, 4)) < 0.4
    g = rng.standard_normal((3, 2, 4, 5))
    for quiet, drop in ((False, None), (True, None), (False, (rng.random((3, 2, 4, 4)) >= 0.5) * 2.0)):
        out, res = B.attention(q, k, v, mask, drop, 0.4, -1e4, quiet)
        want, want_res = AttentionOps.attention(B, q, k, v, mask, drop, 0.4, -1e4, quiet)
        np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
        got = B.attention_backward(g, q, k, v, mask, drop, res, 0.4, -1e4, quiet)
        wants = AttentionOps.attention_backward(B, g, q, k, v, mask, drop, want_res, 0.4, -1e4, quiet)
        for a, b in zip(got, wants):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
