"""Attention family: ``Attention`` (opsets 23, 24, 25) and ``RotaryEmbedding`` (opset 23).

Semantics follow the ONNX operator specification (onnx/docs/Operators.md) and its reference implementation
(``onnx.reference.ops.op_attention`` and ``op_rotary_embedding``), which produced the node suite's expected
outputs:

* ``Q`` and ``K`` are each scaled by ``sqrt(scale)`` (default ``scale = 1 / sqrt(head_size)``) before
  ``Q @ K^T``; ``softcap > 0`` maps the scores to ``softcap * tanh(scores / softcap)`` before the bias;
* the additive bias composes ``attn_mask`` (bool: ``False`` -> ``-inf``; float: added; a mask shorter than
  the key sequence is padded with ``-inf``/``False``), the bottom-right causal frontier (``j <= i + offset``
  with ``offset`` the past length, ``nonpad_kv_seqlen - q_len`` per batch, or 0), the sliding window
  (opset 25) and the ``nonpad_kv_seqlen`` padding mask (opset 24);
* a query row whose bias is ``-inf`` everywhere gives zero probabilities (so a zero output row), as does a
  row whose scores are all ``-inf``;
* ``qk_matmul_output`` (``qk_matmul_output_mode``): 0 the raw scores, 1 the soft-capped scores, 2 those plus
  the bias, 3 the probabilities. Mode 0 with a soft cap follows the specification's "raw QK matmul result";
  the reference returns the soft-capped scores there (no suite case has that combination).
"""

from __future__ import annotations

import math

from ember import Bool, DType, Tensor
from ember.backend import Device
from ember.tensor import activation

from .._context import Context
from .._dtypes import dtype_of
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter
from ._axes import as_dtype
from ._late import late

__all__ = ["scaled_dot_product", "split_heads", "merge_heads"]

_NEG_INF = float("-inf")


# ---------------------------------------------------------------------------------------------- layout
def split_heads(node: Node, x: Tensor, heads: int | None, what: str) -> Tensor:
    """``[batch, seq, heads * size]`` -> ``[batch, heads, seq, size]`` (ONNX's 3-D attention layout).

    Raises:
        OnnxImportError: ``heads`` is missing or does not divide the hidden size.
    """
    b, s, hidden = x.shape
    if not heads or hidden % heads:
        raise OnnxImportError(
            f"{node.where()}: a 3-D {what} needs a head count dividing its hidden size {hidden} (found "
            f"{heads!r}); set the q_num_heads/kv_num_heads (num_heads) attribute."
        )
    return x.reshape([b, s, heads, hidden // heads]).swap_dims(1, 2)


def merge_heads(x: Tensor) -> Tensor:
    """``[batch, heads, seq, size]`` -> ``[batch, seq, heads * size]``."""
    b, h, s, d = x.shape
    return x.swap_dims(1, 2).reshape([b, s, h * d])


def _repeat_heads(x: Tensor, reps: int) -> Tensor:
    """Each head repeated ``reps`` times in place (``h0, h0, h1, h1, ...``), as GQA shares KV heads."""
    b, h, s, d = x.shape
    return x.unsqueeze_dim(2).expand([b, h, reps, s, d]).reshape([b, h * reps, s, d])


# ---------------------------------------------------------------------------------------------- bias
def _bias_of(allowed: Tensor, dtype: DType) -> Tensor:
    """0 where the Bool ``allowed`` holds, ``-inf`` elsewhere, of float ``dtype``."""
    return allowed.float().cast(dtype).zeros_like().mask_fill(allowed.bool_not(), _NEG_INF)


def _frontier(q_len: int, kv_len: int, offset: int | Tensor, device: Device) -> Tensor:
    """``(i + offset) - j`` for query ``i`` and key ``j``: ``[q, kv]`` for an int offset, ``[batch, 1, q, kv]``
    for a per-batch Int tensor of offsets (``nonpad_kv_seqlen - q_len``)."""
    i = Tensor.arange(0, q_len, device).reshape([q_len, 1])
    j = Tensor.arange(0, kv_len, device).reshape([1, kv_len])
    if isinstance(offset, Tensor):
        return i.unsqueeze_dims([0, 1]).add(offset.reshape([-1, 1, 1, 1]).cast(i.dtype)).sub(j)
    return i.add(int(offset)).sub(j)


def _attention_bias(
    ctx: Context, node: Node, mask: Tensor | None, q_len: int, kv_len: int, dtype: DType,
    past_len: int, nonpad: Tensor | None,
) -> Tensor | None:
    """The additive bias ``[.., q, kv]`` of ``Attention``: mask, causal frontier, window, padding (``None``
    when there is none)."""
    if mask is not None:
        pad = kv_len - mask.shape[-1]
        if pad > 0:
            mask = mask.pad([(0, pad)], value=False if mask.kind is Bool else _NEG_INF)
        mask = _bias_of(mask, dtype) if mask.kind is Bool else as_dtype(mask, dtype)
    terms: list[Tensor] = [] if mask is None else [mask]
    offset: int | Tensor = past_len if nonpad is None or past_len else nonpad.sub(q_len)
    causal = bool(int(node.attr("is_causal", 0)))
    left, right = int(node.attr("left_window_size", -1)), int(node.attr("right_window_size", -1))
    if causal or left >= 0 or right >= 0:
        diff = _frontier(q_len, kv_len, offset, ctx.device)
        if causal:
            terms.append(_bias_of(diff.greater_equal(0), dtype))
        if left >= 0:
            terms.append(_bias_of(diff.lower_equal(left), dtype))
        if right >= 0:
            terms.append(_bias_of(diff.greater_equal(-right), dtype))
    if nonpad is not None:
        j = Tensor.arange(0, kv_len, ctx.device).reshape([1, kv_len])
        valid = j.lower(nonpad.reshape([-1, 1]).cast(j.dtype))
        terms.append(_bias_of(valid, dtype).reshape([-1, 1, 1, kv_len]))
    if not terms:
        return None
    bias = terms[0]
    for term in terms[1:]:
        bias = bias.add(term)
    return bias


def _softmax_zero_rows(x: Tensor, bias: Tensor | None) -> Tensor:
    """Softmax over the last dim, with rows whose scores or bias are all ``-inf`` set to zero (the
    reference's convention for a query with no attendable key; a plain softmax gives NaN there). Those rows
    are zeroed before the softmax too, so its backward pass stays finite (zero) there."""
    empty = x.max_dim(-1).equal(_NEG_INF)
    if bias is not None:
        empty = empty.bool_or(bias.max_dim(-1).equal(_NEG_INF))
    return activation.softmax(x.mask_fill(empty, 0.0), -1).mask_fill(empty, 0.0)


# ---------------------------------------------------------------------------------------------- core
def scaled_dot_product(
    q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, scale: float, softcap: float = 0.0,
    softmax_dtype: DType | None = None, mode: int = 0,
) -> tuple[Tensor, Tensor]:
    """``softmax(softcap(q k^T * scale) + bias) @ v`` on ``[batch, heads, seq, size]`` tensors, with the
    ``qk_matmul_output`` of ``mode``; ``k``/``v`` already have ``q``'s head count."""
    root = math.sqrt(scale)
    raw = scores = q.mul(root).matmul(k.mul(root).swap_dims(-1, -2))
    if softcap > 0:
        scores = scores.div(softcap).tanh().mul(softcap)
    biased = scores if bias is None else scores.add(bias)
    out_qk = raw if mode == 0 else biased if mode == 2 else scores
    if softmax_dtype is not None:
        biased = as_dtype(biased, softmax_dtype)
    probs = _softmax_zero_rows(biased, bias)
    if mode == 3:
        out_qk = probs
    probs = as_dtype(probs, v.dtype)
    return probs.matmul(v), as_dtype(out_qk, q.dtype)


def _attention(
    ctx: Context, node: Node, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None,
    past_key: Tensor | None = None, past_value: Tensor | None = None, nonpad: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``Attention`` 23/24/25 (see the module docstring)."""
    if not q.rank == k.rank == v.rank or q.rank not in (3, 4):
        raise OnnxImportError(
            f"{node.where()}: Q, K and V must all be 3-D or all 4-D, found ranks {q.rank}, {k.rank}, {v.rank}."
        )
    if (past_key is None) != (past_value is None):
        raise OnnxImportError(f"{node.where()}: past_key and past_value must be given together (found one).")
    three_d = q.rank == 3
    if three_d:
        kv_heads = node.attr("kv_num_heads", None)
        q = split_heads(node, q, node.attr("q_num_heads", None), "Q")
        k = split_heads(node, k, kv_heads, "K")
        v = split_heads(node, v, kv_heads, "V")
    past_len = 0
    if past_key is not None and past_value is not None:
        past_len = past_key.shape[2]
        k = Tensor.cat([past_key, k], 2)
        v = Tensor.cat([past_value, v], 2)
    present_k, present_v = k, v
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk:
        if hq % hk or v.shape[1] != hk:
            raise OnnxImportError(
                f"{node.where()}: {hq} query heads cannot share {hk} key / {v.shape[1]} value heads (grouped "
                "query attention needs the query head count to be a multiple of one KV head count)."
            )
        k, v = _repeat_heads(k, hq // hk), _repeat_heads(v, hq // hk)
    scale = node.attr("scale", None)
    scale = 1.0 / math.sqrt(q.shape[3]) if scale is None else float(scale)
    precision = node.attr("softmax_precision", None)
    bias = _attention_bias(ctx, node, mask, q.shape[2], k.shape[2], q.dtype, past_len, nonpad)
    y, qk = scaled_dot_product(
        q, k, v, bias, scale, float(node.attr("softcap", 0.0)),
        None if precision is None else dtype_of(int(precision), f"{node.where()} softmax_precision"),
        int(node.attr("qk_matmul_output_mode", 0)),
    )
    return (merge_heads(y) if three_d else y), present_k, present_v, qk


@converter("Attention", since=23)
def attention(ctx: Context, node: Node, q: Tensor, k: Tensor, v: Tensor, *rest: Tensor | None) -> tuple:
    """``Attention`` 23 (inputs ``Q, K, V, attn_mask, past_key, past_value``), 24 (adds
    ``nonpad_kv_seqlen``) and 25 (adds ``left_window_size``/``right_window_size``); outputs ``Y``,
    ``present_key``, ``present_value`` and ``qk_matmul_output``."""
    return _attention(ctx, node, q, k, v, *rest)


# ---------------------------------------------------------------------------------------------- rotary
@converter("RotaryEmbedding", since=23)
def rotary_embedding(
    ctx: Context, node: Node, x: Tensor, cos: Tensor, sin: Tensor, position_ids: Tensor | None = None
) -> Tensor:
    """``RotaryEmbedding`` 23: rotates the first ``rotary_embedding_dim`` (default: all) features of each
    head by the angles in ``cos_cache``/``sin_cache`` (rows picked by ``position_ids`` when given, else
    already ``[batch, seq, dim / 2]``), pairing halves or, with ``interleaved``, adjacent features.
    Input ``[batch, heads, seq, size]`` or ``[batch, seq, hidden]`` with ``num_heads``."""
    shape = list(x.shape)
    if x.rank == 4:
        xs = x.swap_dims(1, 2)  # [batch, seq, heads, size]
    elif x.rank == 3:
        heads = int(node.attr("num_heads", 0))
        xs = split_heads(node, x, heads, "input").swap_dims(1, 2)
    else:
        raise OnnxImportError(f"{node.where()}: the input must be 3-D or 4-D, found shape {shape}.")
    b, s, h, d = xs.shape
    rd = int(node.attr("rotary_embedding_dim", 0)) or d
    if position_ids is not None:
        ids = position_ids.reshape([-1])
        cos, sin = cos.select(0, ids).reshape([b, s, -1]), sin.select(0, ids).reshape([b, s, -1])
    if cos.shape[-1] * 2 != rd or sin.shape[-1] * 2 != rd:
        raise OnnxImportError(
            f"{node.where()}: cos/sin caches have {cos.shape[-1]}/{sin.shape[-1]} columns, expected half the "
            f"rotary dim ({rd // 2})."
        )
    cos, sin = cos.unsqueeze_dim(2), sin.unsqueeze_dim(2)  # [batch, seq, 1, rd / 2]
    rot = xs.narrow(3, 0, rd)
    interleaved = bool(node.attr("interleaved", 0))
    if interleaved:
        pairs = rot.reshape([b, s, h, rd // 2, 2])
        x1, x2 = pairs.narrow(4, 0, 1).squeeze_dim(4), pairs.narrow(4, 1, 1).squeeze_dim(4)
    else:
        x1, x2 = rot.narrow(3, 0, rd // 2), rot.narrow(3, rd // 2, rd // 2)
    real = cos.mul(x1).sub(sin.mul(x2))
    imag = sin.mul(x1).add(cos.mul(x2))
    rot = Tensor.stack([real, imag], 4).reshape([b, s, h, rd]) if interleaved else Tensor.cat([real, imag], 3)
    out = Tensor.cat([rot, xs.narrow(3, rd, d - rd)], 3) if rd < d else rot
    return out.swap_dims(1, 2) if x.rank == 4 else out.reshape(shape)


# ---------------------------------------------------------------------------------------------- flex attention
@converter("FlexAttention", since=1, domain="ai.onnx.preview")
def flex_attention(ctx: Context, node: Node, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """``FlexAttention`` (``ai.onnx.preview`` 1): 4-D scaled dot-product attention with GQA (each KV head
    shared by a contiguous group of query heads) and the optional one-input sub-graphs ``score_mod`` (on the
    scores) and ``prob_mod`` (on the probabilities), run in ``softmax_precision`` (default float32 for
    16-bit inputs, else the input type). Reference: ``onnx/reference/ops/aionnx_preview/op_flex_attention.py``."""
    if not q.rank == k.rank == v.rank == 4:
        raise OnnxImportError(
            f"{node.where()}: Q, K and V must be 4-D, found shapes {list(q.shape)}, {list(k.shape)}, "
            f"{list(v.shape)}."
        )
    hq, hk = q.shape[1], k.shape[1]
    if hq != hk:
        if hq % hk:
            raise OnnxImportError(f"{node.where()}: {hq} query heads are not a multiple of {hk} KV heads.")
        k, v = _repeat_heads(k, hq // hk), _repeat_heads(v, hq // hk)
    scale = node.attr("scale", None)
    root = math.sqrt(1.0 / math.sqrt(q.shape[3]) if scale is None else float(scale))
    scores = q.mul(root).matmul(k.mul(root).swap_dims(-1, -2))
    precision = node.attr("softmax_precision", None)
    if precision is not None:
        work = dtype_of(int(precision), f"{node.where()} softmax_precision")
    else:
        work = DType.FLOAT32 if q.dtype in (DType.FLOAT16, DType.BFLOAT16) else q.dtype
    scores = as_dtype(scores, work)
    for name, stage in (("score_mod", None), ("prob_mod", late(activation, "softmax"))):
        if stage is not None:
            scores = stage(scores, -1)
        graph = node.attr(name, None)
        if graph is not None:
            scores = as_dtype(ctx.run_subgraph(graph, [scores])[0], work)
    return as_dtype(scores.matmul(as_dtype(v, work)), v.dtype)


# ---------------------------------------------------------------------------------------------- linear attention
def _per_head(node: Node, t: Tensor, heads: int, size: int, what: str) -> Tensor:
    """A 3-D ``decay``/``beta`` ``[B, T, heads * n]`` as ``[B, heads, T, n]`` (``n`` = 1 or ``size``), or a
    ``beta`` ``[B, T, 1]`` as ``[B, 1, T, 1]``."""
    b, s, last = t.shape
    if last in (heads, 1) and (last == heads or what == "beta"):
        return t.reshape([b, s, last, 1]).swap_dims(1, 2)
    if last == heads * size and what == "decay":
        return split_heads(node, t, heads, what)
    raise OnnxImportError(
        f"{node.where()}: {what}'s last dim {last} must be kv_num_heads ({heads})"
        + (f" or kv_num_heads * head_size ({heads * size})." if what == "decay" else " or 1.")
    )


@converter("LinearAttention", since=27)
def linear_attention(
    ctx: Context, node: Node, q: Tensor, k: Tensor, v: Tensor, past: Tensor | None = None,
    decay: Tensor | None = None, beta: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """``LinearAttention`` 27: the recurrence of ``update_rule`` (``linear``, ``gated``, ``delta``,
    ``gated_delta``; spec and ``onnx/reference/ops/op_linear_attention.py``) run token by token in float32
    over packed ``[B, T, H * D]`` inputs, with a ``[B, H_kv, d_k, d_v]`` state (``past_state``, else zeros)
    shared by ``q_num_heads / kv_num_heads`` query heads; returns ``output`` (query type) and
    ``present_state`` (``past_state``'s type, else the query's)."""
    rule = node.attr("update_rule", "gated_delta")
    rule = rule.decode() if isinstance(rule, bytes) else str(rule)
    if rule not in ("linear", "gated", "delta", "gated_delta"):
        raise OnnxImportError(
            f"{node.where()}: update_rule {rule!r} is not one of linear, gated, delta, gated_delta."
        )
    gated, delta = rule in ("gated", "gated_delta"), rule in ("delta", "gated_delta")
    if gated != (decay is not None) or delta != (beta is not None):
        raise OnnxImportError(
            f"{node.where()}: update_rule {rule!r} needs {'a' if gated else 'no'} decay input and "
            f"{'a' if delta else 'no'} beta input; found decay={decay is not None}, beta={beta is not None}."
        )
    hq, hk = int(node.attr("q_num_heads", 0)), int(node.attr("kv_num_heads", 0))
    if hk <= 0 or hq <= 0 or hq % hk:
        raise OnnxImportError(f"{node.where()}: q_num_heads ({hq}) must be a positive multiple of kv_num_heads ({hk}).")
    f32 = DType.FLOAT32
    q4, k4, v4 = (as_dtype(split_heads(node, t, h, n), f32) for t, h, n in ((q, hq, "query"), (k, hk, "key"),
                                                                              (v, hk, "value")))
    b, _, steps, dk = k4.shape
    dv = v4.shape[3]
    state = as_dtype(past, f32) if past is not None else Tensor.zeros([b, hk, dk, dv], ctx.device).cast(f32)
    g4 = as_dtype(_per_head(node, decay, hk, dk, "decay"), f32).exp() if decay is not None else None
    b4 = as_dtype(_per_head(node, beta, hk, 1, "beta"), f32) if beta is not None else None
    scale = float(node.attr("scale", 0.0)) or 1.0 / math.sqrt(q4.shape[3])
    outs = []
    for t in range(steps):
        k_t, v_t = k4.narrow(2, t, 1), v4.narrow(2, t, 1)  # [B, H_kv, 1, d]
        if g4 is not None:
            state = state.mul(g4.narrow(2, t, 1).swap_dims(2, 3))  # decay per head or per key dim
        if b4 is not None:
            v_t = b4.narrow(2, t, 1).mul(v_t.sub(k_t.matmul(state)))
        state = state.add(k_t.swap_dims(2, 3).matmul(v_t))
        read = _repeat_heads(state, hq // hk) if hq != hk else state
        outs.append(q4.narrow(2, t, 1).matmul(read).mul(scale))
    y = merge_heads(Tensor.cat(outs, 2))
    return as_dtype(y, q.dtype), as_dtype(state, past.dtype if past is not None else q.dtype)
