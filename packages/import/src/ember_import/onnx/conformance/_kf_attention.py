"""Known node-suite failures of family F6 (attention and quantization).

See :mod:`.known_failures` for the format. ``*_expanded*`` cases are not listed here (the lead consolidates
them).
"""

from __future__ import annotations

_BF16_INPUT = (
    "bfloat16 input: the suite's arrays are ml_dtypes.bfloat16, which DType.from_numpy does not map (Ember "
    "stores bfloat16 as uint16 bits), so the runner cannot build the input tensor; the converter is not reached"
)

ALL: dict[str, str] = {
    "test_attention_4d_causal_bf16": _BF16_INPUT,
    "test_attention_4d_padded_kv_bf16": _BF16_INPUT,
    "test_attention_4d_causal_padded_kv_bf16": _BF16_INPUT,
    "test_attention_4d_attn_mask_causal_bf16": _BF16_INPUT,
    "test_attention_3d_causal_bf16": _BF16_INPUT,
}
NUMPY: dict[str, str] = {}
TORCH: dict[str, str] = {}
JAX: dict[str, str] = {}
