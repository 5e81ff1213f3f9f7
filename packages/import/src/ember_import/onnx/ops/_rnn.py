"""Recurrent layers: ``LSTM`` (opsets 1/7/14), ``GRU`` (1/3/7/14) and ``RNN`` (1/7/14).

One driver runs every direction (``forward``, ``reverse``, ``bidirectional``) over time with Ember ops: the
input projection ``X @ W^T + Wb`` is one batched matmul for all steps, the recurrence one ``H @ R^T`` per
step. ``layout`` (14) 0 is ``[seq, batch, ...]``, 1 is ``[batch, seq, ...]``; ``sequence_lens`` masks steps
past each batch entry's length (their ``Y`` is zero and the state stops there, as in onnxruntime).

Equations, gate orders (LSTM ``i, o, f, c``; GRU ``z, r, h``), peepholes ``P = [Pi, Po, Pf]`` and the
activation list come from the ONNX operator specification (onnx/docs/Operators.md) and its reference
implementation (``onnx.reference.ops.op_lstm``/``op_gru``/``op_rnn``); ``clip`` bounds each gate's
pre-activation (after peepholes) and ``activation_alpha``/``activation_beta`` are consumed in order by the
activations that take them, as onnxruntime does. Opsets 1 to 6 differ only in the dropped
``output_sequence`` attribute (``Y`` is computed whenever it is asked for), so one converter serves them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from ember import Tensor
from ember.tensor import activation

from .._context import Context
from .._errors import OnnxImportError
from .._ir import Node
from .._registry import converter

Act = Callable[[Tensor], Tensor]

#: lower-cased name -> (default alpha or None when unused, default beta or None, fn(x, alpha, beta))
_ACTIVATIONS: dict[str, tuple[float | None, float | None, Callable[[Tensor, float, float], Tensor]]] = {
    "sigmoid": (None, None, lambda x, a, b: activation.sigmoid(x)),
    "tanh": (None, None, lambda x, a, b: x.tanh()),
    "relu": (None, None, lambda x, a, b: activation.relu(x)),
    "affine": (1.0, 0.0, lambda x, a, b: x * a + b),
    "leakyrelu": (0.01, None, lambda x, a, b: activation.leaky_relu(x, a)),
    "thresholdedrelu": (1.0, None, lambda x, a, b: x.mask_fill(x.lower_equal(a), 0.0)),
    "scaledtanh": (1.0, 1.0, lambda x, a, b: (x * b).tanh() * a),
    "hardsigmoid": (0.2, 0.5, lambda x, a, b: activation.hard_sigmoid(x, a, b)),
    "elu": (1.0, None, lambda x, a, b: activation.elu(x, a)),
    "softsign": (None, None, lambda x, a, b: activation.softsign(x)),
    "softplus": (None, None, lambda x, a, b: activation.softplus(x)),
}


def _bind(fn: Callable[[Tensor, float, float], Tensor], a: float, b: float) -> Act:
    return lambda x: fn(x, a, b)


def _activations(node: Node, defaults: Sequence[str], num_dir: int) -> list[list[Act]]:
    """The activation functions of each direction (``len(defaults)`` per direction)."""
    names = list(node.attr("activations", []))
    if not names:
        names = list(defaults) * num_dir
    elif len(names) == len(defaults) and num_dir == 2:
        names = names * 2
    if len(names) != len(defaults) * num_dir:
        raise OnnxImportError(
            f"{node.where()}: expected {len(defaults) * num_dir} activations ({len(defaults)} per direction, "
            f"{num_dir} direction(s)), found {names}; fix the model's 'activations' attribute."
        )
    alphas = list(node.attr("activation_alpha", []))
    betas = list(node.attr("activation_beta", []))
    fns: list[Act] = []
    for name in names:
        key = name.lower() if isinstance(name, str) else str(name)
        if key not in _ACTIVATIONS:
            raise OnnxImportError(
                f"{node.where()}: activation {name!r} is not one ONNX defines for recurrent layers; expected one "
                f"of {sorted(_ACTIVATIONS)}."
            )
        da, db, fn = _ACTIVATIONS[key]
        a = (alphas.pop(0) if alphas else da) if da is not None else 0.0
        b = (betas.pop(0) if betas else db) if db is not None else 0.0
        fns.append(_bind(fn, float(a), float(b)))
    n = len(defaults)
    return [fns[d * n:(d + 1) * n] for d in range(num_dir)]


@dataclasses.dataclass
class _Dir:
    """One direction's weights: ``w_t`` ``[input, G*H]``, ``r_t`` ``[H, G*H]`` (transposed), biases
    ``wb``/``rb`` ``[G*H]``, peepholes ``p`` ``[3H]`` or None, activations ``acts``, ``clip`` or None."""

    w_t: Tensor
    r_t: Tensor
    wb: Tensor | None
    rb: Tensor | None
    p: Tensor | None
    acts: list[Act]
    clip: float | None
    input_forget: bool = False

    def pre(self, x: Tensor) -> Tensor:
        """``clip(x)`` when a clip is set."""
        return x if self.clip is None else x.clamp(-self.clip, self.clip)


#: a cell: (x projection at t, h, c, direction) -> (new h, new c)
Cell = Callable[[Tensor, Tensor, Tensor | None, _Dir], tuple[Tensor, Tensor | None]]


def _zeros(shape: Sequence[int], like: Tensor) -> Tensor:
    return Tensor.zeros(list(shape), like.device).cast(like.dtype)


def _recurrent(ctx: Context, node: Node, n_gates: int, defaults: Sequence[str], cell: Cell, fold_rb: bool,
               x: Tensor, w: Tensor, r: Tensor, b: Tensor | None, seq_lens: Tensor | None,
               h0: Tensor | None, c0: Tensor | None = None, p: Tensor | None = None,
               with_c: bool = False) -> tuple[Tensor, ...]:
    """Run ``cell`` over time in every direction; returns ``(Y, Y_h)`` or ``(Y, Y_h, Y_c)`` in the node's
    layout. ``fold_rb`` adds the recurrence bias to the input projection (all but GRU's reset-gated part)."""
    direction = node.attr("direction", "forward")
    if isinstance(direction, bytes):
        direction = direction.decode()
    num_dir = 2 if direction == "bidirectional" else 1
    if direction not in ("forward", "reverse", "bidirectional") or w.shape[0] != num_dir:
        raise OnnxImportError(
            f"{node.where()}: direction {direction!r} with W of shape {list(w.shape)}: expected 'forward' or "
            "'reverse' with num_directions 1, or 'bidirectional' with 2."
        )
    layout = int(node.attr("layout", 0))
    if layout == 1:
        x = x.swap_dims(0, 1)
        h0 = None if h0 is None else h0.swap_dims(0, 1)
        c0 = None if c0 is None else c0.swap_dims(0, 1)
    steps, batch = x.shape[0], x.shape[1]
    hidden = r.shape[-1]
    gh = n_gates * hidden
    clip = node.attr("clip", None)
    acts = _activations(node, defaults, num_dir)
    masks = None
    if seq_lens is not None:
        lens = seq_lens.reshape([batch, 1])
        masks = [lens.greater(t) for t in range(steps)]
    ys, hs, cs = [], [], []
    for d in range(num_dir):
        wb = rb = None
        if b is not None:
            wb, rb = b[d].split([gh, gh], dim=0)
            if fold_rb:
                wb, rb = wb + rb, None
        pd = None if p is None else p[d]
        dr = _Dir(w[d].transpose(), r[d].transpose(), wb, rb, pd, acts[d], None if clip is None else float(clip),
                  bool(node.attr("input_forget", 0)))
        xw = x.matmul(dr.w_t)
        if wb is not None:
            xw = xw + wb
        h = _zeros([batch, hidden], x) if h0 is None else h0[d]
        c = None
        if with_c:
            c = _zeros([batch, hidden], x) if c0 is None else c0[d]
        reverse = direction == "reverse" or d == 1
        out: list[Tensor] = [h] * steps
        for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
            h_new, c_new = cell(xw[t], h, c, dr)
            if masks is None:
                h, c, out[t] = h_new, c_new, h_new
            else:
                m = masks[t]
                h = h.mask_where(m, h_new)
                if c is not None and c_new is not None:
                    c = c.mask_where(m, c_new)
                out[t] = h_new.mask_fill(m.bool_not(), 0.0)
        ys.append(Tensor.stack(out, 0) if steps else _zeros([0, batch, hidden], x))
        hs.append(h)
        if c is not None:
            cs.append(c)
    y = Tensor.stack(ys, 1)
    y_h = Tensor.stack(hs, 0)
    outs = [y, y_h] + ([Tensor.stack(cs, 0)] if with_c else [])
    if layout == 1:
        outs = [outs[0].permute([2, 0, 1, 3])] + [o.swap_dims(0, 1) for o in outs[1:]]
    return tuple(outs)


# ---------------------------------------------------------------------------------------------- cells
def _lstm_cell(xw: Tensor, h: Tensor, c: Tensor | None, d: _Dir) -> tuple[Tensor, Tensor | None]:
    assert c is not None
    hidden = h.shape[-1]
    i, o, f, g = (xw + h.matmul(d.r_t)).split([hidden] * 4, dim=1)
    pi = po = pf = None
    if d.p is not None:
        pi, po, pf = d.p.split([hidden] * 3, dim=0)
    fa, ga, ha = d.acts
    i = fa(d.pre(i if pi is None else i + pi * c))
    if d.input_forget:
        f = 1.0 - i
    else:
        f = fa(d.pre(f if pf is None else f + pf * c))
    c_new = f * c + i * ga(d.pre(g))
    o = fa(d.pre(o if po is None else o + po * c_new))
    return o * ha(c_new), c_new


def _gru_cell(linear_before_reset: bool) -> Cell:
    def cell(xw: Tensor, h: Tensor, c: Tensor | None, d: _Dir) -> tuple[Tensor, Tensor | None]:
        hidden = h.shape[-1]
        xz, xr, xh = xw.split([hidden] * 3, dim=1)
        fa, ga = d.acts
        if linear_before_reset:
            hr = h.matmul(d.r_t)
            if d.rb is not None:
                hr = hr + d.rb
            hz, hrr, hh = hr.split([hidden] * 3, dim=1)
            z = fa(d.pre(xz + hz))
            r = fa(d.pre(xr + hrr))
            n = ga(d.pre(xh + r * hh))
        else:
            r_zr, r_h = d.r_t.split([2 * hidden, hidden], dim=1)
            hzr = h.matmul(r_zr)
            rb_zr = rb_h = None
            if d.rb is not None:
                rb_zr, rb_h = d.rb.split([2 * hidden, hidden], dim=0)
                hzr = hzr + rb_zr
            hz, hrr = hzr.split([hidden] * 2, dim=1)
            z = fa(d.pre(xz + hz))
            r = fa(d.pre(xr + hrr))
            hh = (r * h).matmul(r_h)
            if rb_h is not None:
                hh = hh + rb_h
            n = ga(d.pre(xh + hh))
        return (1.0 - z) * n + z * h, None

    return cell


def _rnn_cell(xw: Tensor, h: Tensor, c: Tensor | None, d: _Dir) -> tuple[Tensor, Tensor | None]:
    return d.acts[0](d.pre(xw + h.matmul(d.r_t))), None


# ---------------------------------------------------------------------------------------------- converters
def _check_hidden(node: Node, r: Tensor) -> None:
    hs = node.attr("hidden_size", None)
    if hs is not None and int(hs) != r.shape[-1]:
        raise OnnxImportError(
            f"{node.where()}: hidden_size {hs} but R has shape {list(r.shape)} (last dim is the hidden size); "
            "the model is inconsistent."
        )


@converter("LSTM", since=1)
def lstm(ctx: Context, node: Node, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
         seq_lens: Tensor | None = None, h0: Tensor | None = None, c0: Tensor | None = None,
         p: Tensor | None = None) -> tuple[Tensor, ...]:
    """``LSTM`` (opsets 1, 7, 14: ``layout`` from 14): outputs ``Y``, ``Y_h``, ``Y_c``."""
    _check_hidden(node, r)
    return _recurrent(ctx, node, 4, ("Sigmoid", "Tanh", "Tanh"), _lstm_cell, True, x, w, r, b, seq_lens, h0, c0, p,
                      with_c=True)


@converter("GRU", since=1)
def gru(ctx: Context, node: Node, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
        seq_lens: Tensor | None = None, h0: Tensor | None = None) -> tuple[Tensor, ...]:
    """``GRU`` (opsets 1, 3, 7, 14: ``linear_before_reset`` from 3, ``layout`` from 14): ``Y``, ``Y_h``."""
    _check_hidden(node, r)
    lbr = bool(node.attr("linear_before_reset", 0))
    return _recurrent(ctx, node, 3, ("Sigmoid", "Tanh"), _gru_cell(lbr), False, x, w, r, b, seq_lens, h0)


@converter("RNN", since=1)
def rnn(ctx: Context, node: Node, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None,
        seq_lens: Tensor | None = None, h0: Tensor | None = None) -> tuple[Tensor, ...]:
    """``RNN`` (opsets 1, 7, 14: ``layout`` from 14): outputs ``Y``, ``Y_h``."""
    _check_hidden(node, r)
    return _recurrent(ctx, node, 1, ("Tanh",), _rnn_cell, True, x, w, r, b, seq_lens, h0)

