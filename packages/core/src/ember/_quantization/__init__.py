"""The tensor-level core of quantization, below :mod:`ember.module` (private: :mod:`ember.quantization` is the one
public place and re-exports every name).

Burn keeps this part in its tensor crate (``burn_tensor::quantization``): the scheme (``_scheme.py``), the
``QuantizedTensor`` (``_qtensor.py``), quantize/dequantize (``_quantize.py``), ranges and qparams (``_range.py``),
layout and validation (``_layout.py``, ``_validate.py``), int4 packing (``_pack.py``), the int8 products
(``_matmul.py``), fake quantization (``_fake.py``), the record node (``_record.py``) and the error (``_errors.py``).
It imports :mod:`ember.tensor` and never :mod:`ember.module` or :mod:`ember.nn`, so ``ember.module`` (a ``Param``
holding a ``QuantizedTensor``, its record) imports it at module level, and the module-level workflow in
:mod:`ember.quantization` (``Quantizer``, observers, quantized layers) builds on both. This ``__init__`` imports
nothing: its users import the submodules they need.
"""
