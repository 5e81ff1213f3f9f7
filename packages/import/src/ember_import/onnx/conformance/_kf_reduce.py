"""Known node-suite failures of family F3 (reductions, matrix products, softmax, normalization, losses).

See :mod:`.known_failures` for the format. ``*_expanded*`` cases are not listed here (the lead consolidates
them).
"""

from __future__ import annotations

from ._reasons import NUMPY_NO_BF16 as _BF16_NUMPY

ALL: dict[str, str] = {}
NUMPY: dict[str, str] = {
    "test_einsum_batch_matmul_bfloat16": _BF16_NUMPY,
    "test_einsum_sum_bfloat16": _BF16_NUMPY,
    "test_einsum_transpose_bfloat16": _BF16_NUMPY,
}
TORCH: dict[str, str] = {}
JAX: dict[str, str] = {}
