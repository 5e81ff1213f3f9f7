"""Quantization inside ``ember_jax.jit``: range, qparams, fake quantization (with its straight-through gradient) and
dynamic int8 products traced into one program give the eager numbers (the host checks are skipped while tracing)."""

from __future__ import annotations

import numpy as np

import ember
from ember import Tensor
from ember.autodiff import Autodiff
from ember.quantization import (
    QuantLevel,
    QuantScheme,
    compute_qparams,
    compute_range,
    fake_quantize,
    quantized_linear,
)


def test_qat_step_and_dynamic_linear_compile():
    backend = Autodiff(ember.backend("jax"))
    dev = backend.device()
    x = Tensor.from_data(np.random.default_rng(0).normal(size=(4, 8)), dev)
    w = Tensor.from_data(np.random.default_rng(1).normal(size=(8, 3)), dev).require_grad()
    scheme = QuantScheme(level=QuantLevel.axis(1))

    def step(w, x):
        qp = compute_qparams(scheme, *compute_range(scheme, w))
        wf = fake_quantize(w, scheme, qp)
        y = quantized_linear(x.detach(), wf.detach().quantize_dynamic(scheme), activation_scheme=QuantScheme())
        loss = (x.matmul(wf) * x.matmul(wf)).sum()
        grads = loss.backward()
        return loss, w.grad(grads), y

    eager = step(w, x)
    compiled = backend.compile(step)
    for _ in range(2):  # the second call runs the cached program
        got = compiled(w, x)
        for a, b in zip(eager, got):
            np.testing.assert_allclose(b.to_numpy(), a.to_numpy(), rtol=1e-5, atol=1e-5)


def test_modules_holding_quantized_tensors_cross_the_jit_boundary():
    from ember.module import Param
    from ember.nn import LinearConfig
    from ember.quantization import QuantizedTensor, QuantValue

    for backend in (ember.backend("jax"), Autodiff(ember.backend("jax"))):
        dev = backend.device()
        lin = LinearConfig(8, 4).init(dev)
        x = Tensor.from_data(np.random.default_rng(0).normal(size=(3, 8)), dev)
        for scheme in (QuantScheme(level=QuantLevel.axis(1)), QuantScheme(QuantValue.Q4F, QuantLevel.block(4, 0))):
            w = lin.weight
            model = lin.replace(weight=Param(w.val().quantize_dynamic(scheme), w.id, False))

            def step(m, x):
                y = quantized_linear(x, m.weight.val(), m.bias.val(), activation_scheme=QuantScheme())
                return y, m, m.weight.val()

            want = step(model, x)[0].to_numpy()
            compiled = backend.compile(step)
            for _ in range(2):
                y, m2, q2 = compiled(model, x)
                np.testing.assert_allclose(y.to_numpy(), want, rtol=1e-6, atol=1e-6)
                got = m2.weight.val()
                assert isinstance(got, QuantizedTensor) and got.scheme == scheme and q2.scheme == scheme
                assert np.array_equal(got.values.to_numpy(), model.weight.val().values.to_numpy())
                assert got.device is dev
