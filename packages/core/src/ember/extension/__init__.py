"""Backend extension: user-defined ops with per-backend kernels and their own backward (Burn's "Backend
Extension" and "Custom Kernel" chapters; the API follows ``torch.library.custom_op``).

>>> import ember
>>> from ember import Float, Tensor
>>> from ember.extension import custom_op
>>> @custom_op("doc_scaled_relu", inputs=(Float,), static=("scale",))
... def scaled_relu(x, *, scale):
...     return x.clamp_min(0.0).mul_scalar(scale)
>>> x = Tensor.from_floats([-1.0, 2.0], ember.backend("numpy").device())
>>> scaled_relu(x, scale=3.0).to_data().to_numpy().tolist()
[0.0, 6.0]

- :func:`custom_op` declares an op (its tensor inputs' kinds, its static arguments) with a default written
  with Ember tensor ops, so every backend runs it.
- :meth:`CustomOp.register_kernel` adds a kernel for one backend, by name: a function of that backend's
  primitives (numpy arrays, torch tensors, jax arrays) and the static arguments; :func:`register_kernel` does the
  same by op name (for a third-party backend's plugin).
- :meth:`CustomOp.register_backward_kernel` adds a backward pass on one backend's primitives (a fused kernel).
- :meth:`CustomOp.register_backward` gives the op a backward rule under ``Autodiff``; without one, the default's
  backward is derived by running the default under ``Autodiff``.
"""

from ._custom_op import BackwardContext, CustomOp, CustomOpError, custom_op, register_kernel

__all__ = ["BackwardContext", "CustomOp", "CustomOpError", "custom_op", "register_kernel"]
