"""``Quantizer``: quantizing a module's layers (Burn's ``Quantizer`` module mapper; ``torch.ao``'s workflows).

Four ways, one object::

    q = Quantizer(Calibration.min_max(), QuantScheme(QuantValue.Q8S, QuantLevel.axis(0)))
    small = q.quantize_weights(model)                 # weight-only (Burn's ``quantize_weights``)
    fast = q.quantize_dynamic(model)                  # + Linear inputs quantized per call (torch.ao dynamic)
    prepared = q.prepare(model)                       # static: observers on the layer inputs (torch.ao prepare)
    calibrate(prepared, loader, lambda m, b: m(b.images))
    static = q.convert(prepared)                      # torch.ao convert
    qat = q.prepare_qat(model)                        # fake quantization, train it (Learner), then q.convert(qat)

The layers quantized are ``Linear``, ``Conv1d``, ``Conv2d`` and ``Embedding`` (chosen by ``types``) at module paths
matching ``include`` and no ``exclude`` pattern (``fnmatch``, e.g. ``"linear*"``); every other module is kept.

**The weight's level is resolved per layer**, since a layer type fixes which dim is the output channel: a scheme
of level ``axis(_)`` quantizes per output channel (Linear ``[d_input, d_output]``: dim 1; Conv ``[c_out, ...]``:
dim 0; Embedding ``[n, d_model]``: dim 0, one scale per row), and ``block(n, _)`` in blocks of ``n`` along the
input features (Linear: dim 0; Conv: along ``channels_in / groups * prod(kernel)``; Embedding: along ``d_model``).
A block size that does not divide a layer's input features falls back to per output channel for that layer
(:meth:`Quantizer.weight_scheme` says which level a layer gets). Conv weights are stored as the matrix
``[c_out, channels_in / groups * prod(kernel)]``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._errors import ConfigError
from .._quantization._range import compute_qparams, compute_range
from .._quantization._scheme import QuantLevel, QuantScheme, QuantValue
from ..module import Param, RunningState
from ..nn import Conv1d, Conv2d, Embedding, Linear
from ._fake_layer import CONVS, observer_qparams, weight_matrix
from ._layers import InputQuant, QuantizedConv1d, QuantizedConv2d, QuantizedEmbedding, QuantizedLinear
from ._observed import FakeQuantized, Observed
from ._observers import Calibration, Observer
from ._swap import PathFilter, swap_modules

__all__ = ["Quantizer", "calibrate", "SUPPORTED_LAYERS"]

#: the float layers a Quantizer can replace
SUPPORTED_LAYERS: tuple[type, ...] = (Linear, Conv1d, Conv2d, Embedding)
_DEFAULT_INPUT = QuantScheme(QuantValue.Q8F, QuantLevel.tensor())


class Quantizer:
    """Quantizes the ``Linear``, ``Conv1d``, ``Conv2d`` and ``Embedding`` layers of a module (Burn's
    ``Quantizer { calibration, scheme }``; see the module docstring for the four workflows).

    Args:
        calibration: how ranges are measured: the weights' (:meth:`Calibration.min_max` is exact for a weight;
            ``percentile`` clips a per-tensor weight's outliers) and, in :meth:`prepare` / :meth:`prepare_qat`,
            the inputs' (each layer gets a fresh observer; QAT uses ``Calibration.moving_average()`` unless
            this is a moving average already). Default ``Calibration.min_max()``.
        scheme: the weights' :class:`QuantScheme` (level resolved per layer, see the module docstring); default
            int8 symmetric per output channel (``torch.ao``'s default weight observer is per channel symmetric).
        activation: the inputs' scheme for :meth:`quantize_dynamic`, :meth:`prepare` and :meth:`prepare_qat`;
            default ``Q8F`` per tensor (``torch.ao``'s ``quint8`` affine activations, in int8).
        include: ``fnmatch`` patterns of the module paths to quantize (``"linear1"``, ``"encoder.*"``); default
            every path.
        exclude: ``fnmatch`` patterns of module paths to leave alone; default none.
        types: the layer types to quantize, a subset of ``(Linear, Conv1d, Conv2d, Embedding)`` (default all).

    Raises:
        ConfigError: a layer type that cannot be quantized, an activation scheme that is not per tensor, or a
            calibration / scheme of the wrong type.
    """

    def __init__(self, calibration: Calibration | None = None, scheme: QuantScheme | None = None, *,
                 activation: QuantScheme | None = None, include: Sequence[str] = ("*",),
                 exclude: Sequence[str] = (), types: Iterable[type] = SUPPORTED_LAYERS) -> None:
        calibration = Calibration.min_max() if calibration is None else calibration
        scheme = QuantScheme(QuantValue.Q8S, QuantLevel.axis(0)) if scheme is None else scheme
        activation = _DEFAULT_INPUT if activation is None else activation
        if not isinstance(calibration, Calibration):
            raise ConfigError(f"Quantizer: calibration must be a Calibration (Calibration.min_max() ...), got "
                              f"{type(calibration).__name__}.")
        for name, s in (("scheme", scheme), ("activation", activation)):
            if not isinstance(s, QuantScheme):
                raise ConfigError(f"Quantizer: {name} must be a QuantScheme, got {type(s).__name__}.")
        if activation.level.kind != "tensor":
            raise ConfigError(f"Quantizer: activations are quantized per tensor; got the level {activation.level!r} "
                              "(use QuantLevel.tensor()).")
        types = tuple(types)
        bad = [t for t in types if not (isinstance(t, type) and issubclass(t, SUPPORTED_LAYERS))]
        if bad or not types:
            raise ConfigError(f"Quantizer: types must be among Linear, Conv1d, Conv2d, Embedding; got "
                              f"{[getattr(t, '__name__', t) for t in bad] or 'none'}.")
        self.calibration = calibration
        self.scheme = scheme
        self.activation = activation
        self.filter = PathFilter(include, exclude, types)

    def __repr__(self) -> str:
        return (f"Quantizer({self.calibration!r}, {self.scheme!r}, activation={self.activation!r}, "
                f"filter={self.filter!r})")

    # ------------------------------------------------------------------ schemes and weights
    def weight_scheme(self, layer: Any) -> QuantScheme:
        """The scheme ``layer``'s weight gets: :attr:`scheme` with its level resolved for the layer type (see the
        module docstring)."""
        lv = self.scheme.level
        if lv.kind == "tensor":
            return self.scheme
        w = layer.weight
        if isinstance(layer, Linear):
            out_axis, in_axis, n_in = 1, 0, w.shape[0]
        elif isinstance(layer, CONVS):
            out_axis, in_axis, n_in = 0, 1, math.prod(w.shape[1:])
        else:
            out_axis, in_axis, n_in = 0, 1, w.shape[1]
        if lv.kind == "block" and lv.size is not None and n_in % lv.size == 0:
            return self.scheme.with_level(QuantLevel.block(lv.size, in_axis))
        return self.scheme.with_level(QuantLevel.axis(out_axis))

    def quantize_weight(self, layer: Any) -> Any:
        """``layer``'s weight as a :class:`QuantizedTensor` (Conv: the ``[c_out, fan_in]`` matrix)."""
        scheme = self.weight_scheme(layer)
        w = weight_matrix(layer, layer.weight.val().detach())
        if self.calibration.kind == "percentile" and scheme.level.kind == "tensor":
            obs = self.calibration.observer()
            obs.update(w)
            qp = observer_qparams(obs, scheme, w.device)
        else:
            qp = compute_qparams(scheme, *compute_range(scheme, w))
        return w.quantize(scheme, qp)

    def _quantized(self, layer: Any, inp: InputQuant | None) -> Any:
        wq = Param(self.quantize_weight(layer), layer.weight.id, require_grad=False)
        if isinstance(layer, Linear):
            return QuantizedLinear(weight=wq, bias=layer.bias, input=inp)
        if isinstance(layer, Embedding):
            return QuantizedEmbedding(weight=wq)
        cls = QuantizedConv1d if isinstance(layer, Conv1d) else QuantizedConv2d
        return cls(weight=wq, bias=layer.bias, shape=tuple(layer.weight.shape), stride=layer.stride,
                   dilation=layer.dilation, groups=layer.groups, padding=layer.padding,
                   padding_right=layer.padding_right, input=inp)

    def _static_input(self, observer: Observer | None, device: Any) -> InputQuant | None:
        if observer is None:
            return None
        qp = observer_qparams(observer, self.activation, getattr(device, "inner", device))
        zp = None if qp.zero_point is None else RunningState(qp.zero_point)
        return InputQuant(scheme=self.activation, scale=RunningState(qp.scale), zero_point=zp)

    # ------------------------------------------------------------------ workflows
    def quantize_weights(self, module: Any) -> Any:
        """``module`` with the chosen layers' weights quantized; inputs stay float (Burn's
        ``module.quantize_weights(&mut quantizer)``). Biases stay float."""
        return swap_modules(module, lambda p, m: self._quantized(m, None) if self.filter(p, m) else None)

    def quantize_dynamic(self, module: Any) -> Any:
        """``module`` with the chosen ``Linear`` layers' weights quantized and their inputs quantized per call
        with :attr:`activation` (``torch.ao.quantization.quantize_dynamic``); other chosen layers weight-only."""
        dyn = InputQuant(scheme=self.activation)

        def fn(path: str, m: Any) -> Any:
            if not self.filter(path, m):
                return None
            return self._quantized(m, dyn if isinstance(m, Linear) else None)

        return swap_modules(module, fn)

    def prepare(self, module: Any) -> Any:
        """``module`` with an observer on the input of each chosen ``Linear`` and Conv layer (``torch.ao``'s
        ``prepare``; Embedding inputs are indices: it gets weight-only quantization). Its outputs are the float
        model's. Run calibration data through it (:func:`calibrate`), then :meth:`convert`."""
        def fn(path: str, m: Any) -> Any:
            if not self.filter(path, m) or isinstance(m, Embedding):
                return None
            return Observed(layer=m, observer=self.calibration.observer())

        return swap_modules(module, fn)

    def prepare_qat(self, module: Any, *, weights_only: bool = False) -> Any:
        """``module`` for quantization-aware training (``torch.ao``'s ``prepare_qat``): each chosen layer
        fake-quantizes its weight (:meth:`weight_scheme`) and, unless ``weights_only`` (or an Embedding), its
        input (:attr:`activation`, range by a moving-average observer). Train it as the float model (same class,
        same parameters and ids), then :meth:`convert` it.

        The input observers learn in eager steps only. Under a compiled step (the Learner compiles it on backends
        whose ``capabilities.compiles_steps`` is true: torch and jax) the range is read when the step is traced
        and stays fixed: run a few batches through the prepared model eagerly first (:func:`calibrate` on the
        autodiff device), else the inputs are not fake-quantized during training and :meth:`convert` reports that
        no tensor was observed."""
        cal = self.calibration if self.calibration.kind == "moving_average" else Calibration.moving_average()

        def fn(path: str, m: Any) -> Any:
            if not self.filter(path, m):
                return None
            act = weights_only or isinstance(m, Embedding)
            return FakeQuantized(layer=m, weight_scheme=self.weight_scheme(m),
                                 input_scheme=None if act else self.activation,
                                 observer=None if act else cal.observer())

        return swap_modules(module, fn)

    def convert(self, module: Any) -> Any:
        """The quantized module of a :meth:`prepare` d (calibrated) or :meth:`prepare_qat` (trained) one: each
        observed layer gets its quantized weight and static input qparams from its observer's range; layers not
        prepared are quantized weight-only when chosen. The float weights are read on their inner device (no
        autodiff graph: call ``.valid()`` on a QAT model first or not, either works), then each quantized layer is
        put on the device of the layer it replaces: a model prepared on an ``Autodiff`` device takes that device's
        inputs (its float biases are parameters of that device again).

        Raises:
            QuantizationError: an observer that saw no data (calibrate first).
        """
        def fn(path: str, m: Any) -> Any:
            if isinstance(m, (Observed, FakeQuantized)):
                layer = m.layer.valid()
                obs = m.observer
                inp = self._static_input(obs, layer.weight.device) if obs is not None else None
                if isinstance(layer, Embedding):
                    inp = None
                return _on(self._quantized(layer, inp), m.layer.weight.device)
            if self.filter(path, m):
                return _on(self._quantized(m.valid(), None), m.weight.device)
            return None

        return swap_modules(module, fn)


def calibrate(module: Any, batches: Iterable[Any], forward: Callable[[Any, Any], Any] | None = None, *,
              max_batches: int | None = None) -> Any:
    """Run ``batches`` (a ``DataLoader`` or any iterable) through a :meth:`Quantizer.prepare` d module so its
    observers record the ranges (``torch.ao``'s calibration loop). Returns the module (observers are updated in
    place; the module itself is unchanged).

    Args:
        forward: ``forward(module, batch)``; default ``module(batch)``. For the guide's batches:
            ``lambda m, b: m(b.images)``.
        max_batches: stop after this many batches (default: all).
    """
    fwd = forward if forward is not None else (lambda m, b: m(b))
    for i, batch in enumerate(batches):
        if max_batches is not None and i >= max_batches:
            break
        fwd(module, batch)
    return module


def _on(layer: Any, device: Any) -> Any:
    """``layer`` (built on an inner device) on ``device``, the device of the layer it replaces."""
    return layer if layer.weight.device is device else layer.to_device(device)
