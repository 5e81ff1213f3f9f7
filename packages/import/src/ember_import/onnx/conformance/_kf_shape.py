"""Known failures of the shape and indexing operators (``ops/_reshape.py``, ``_slicing.py``, ``_indexing.py``,
``_select.py``)."""

from ._reasons import NUMPY_NO_BF16 as _NO_BF16
from ._reasons import TORCH_NO_WIDE_UINT

ALL: dict[str, str] = {}
NUMPY = {
    "test_range_bfloat16_type_positive_delta": _NO_BF16,
    "test_range_bfloat16_type_positive_delta_expanded": _NO_BF16,
    "test_compress_bfloat16": _NO_BF16,
    "test_onehot_with_bfloat16_values": _NO_BF16,
    "test_reversesequence_bfloat16": _NO_BF16,
    "test_unique_bfloat16_sorted_without_axis": _NO_BF16,
}
TORCH = {
    "test_top_k_uint64": TORCH_NO_WIDE_UINT,
}
JAX: dict[str, str] = {}
