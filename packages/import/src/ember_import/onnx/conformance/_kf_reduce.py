"""Known node-suite failures of family F3 (reductions, matrix products, softmax, normalization, losses).

See :mod:`.known_failures` for the format. ``*_expanded*`` cases are not listed here (the lead consolidates
them).
"""

from __future__ import annotations

_BF16_INPUT = (
    "bfloat16 Einsum: the runner cannot build the input (DType.from_numpy does not map ml_dtypes.bfloat16; Ember "
    "keeps bfloat16 as uint16 bits); the converter itself runs bfloat16 on torch and jax (numpy has no bfloat16)"
)

ALL: dict[str, str] = {
    "test_einsum_batch_matmul_bfloat16": _BF16_INPUT,
    "test_einsum_sum_bfloat16": _BF16_INPUT,
    "test_einsum_transpose_bfloat16": _BF16_INPUT,
}
NUMPY: dict[str, str] = {}
TORCH: dict[str, str] = {}
JAX: dict[str, str] = {}
