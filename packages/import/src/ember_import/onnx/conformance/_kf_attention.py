"""Known node-suite failures of family F6: ``Attention``, ``RotaryEmbedding`` and the quantization operators.

Format: :mod:`.known_failures`. Only this family's own (non-``*_expanded*``) cases are listed; the lead
consolidates the expanded ones.
"""

from __future__ import annotations

from ._reasons import NUMPY_NO_BF16 as _BF16_NUMPY

_ML_DTYPES = (
    "{} input or output: the suite holds it as an ml_dtypes array, which has no Ember element type, so the "
    "runner cannot build (or compare) the tensor and the converter is not reached"
)
_FLOAT8 = _ML_DTYPES.format("float8") + "; the converter refuses float8 quantized types too"
_LOW_BIT = _ML_DTYPES.format("4-bit/2-bit") + "; the converter refuses int4/uint4/int2/uint2/float4 types too"

ALL: dict[str, str] = {
    "test_dequantizelinear_e4m3fn": _FLOAT8,
    "test_dequantizelinear_e4m3fn_float16": _FLOAT8,
    "test_dequantizelinear_e4m3fn_zero_point": _FLOAT8,
    "test_dequantizelinear_e5m2": _FLOAT8,
    "test_quantizelinear_e4m3fn": _FLOAT8,
    "test_quantizelinear_e5m2": _FLOAT8,
    "test_dequantizelinear_uint4": _LOW_BIT,
    "test_dequantizelinear_int4": _LOW_BIT,
    "test_dequantizelinear_uint2": _LOW_BIT,
    "test_dequantizelinear_int2": _LOW_BIT,
    "test_dequantizelinear_float4e2m1": _LOW_BIT,
    "test_quantizelinear_uint4": _LOW_BIT,
    "test_quantizelinear_int4": _LOW_BIT,
    "test_quantizelinear_uint2": _LOW_BIT,
    "test_quantizelinear_int2": _LOW_BIT,
    "test_quantizelinear_float4e2m1": _LOW_BIT,
}
NUMPY: dict[str, str] = {
    "test_attention_4d_causal_bf16": _BF16_NUMPY,
    "test_attention_4d_padded_kv_bf16": _BF16_NUMPY,
    "test_attention_4d_causal_padded_kv_bf16": _BF16_NUMPY,
    "test_attention_4d_attn_mask_causal_bf16": _BF16_NUMPY,
    "test_attention_3d_causal_bf16": _BF16_NUMPY,
}
_TORCH_UINT16 = "uint16: the torch backend has no uint16 (storage-only in PyTorch, no CPU kernels)"
TORCH: dict[str, str] = {
    "test_dequantizelinear_uint16": _TORCH_UINT16,
    "test_quantizelinear_uint16": _TORCH_UINT16,
}
JAX: dict[str, str] = {}
