"""Known failures of the shape and indexing operators (``ops/_reshape.py``, ``_slicing.py``, ``_indexing.py``,
``_select.py``)."""

_NO_BF16 = "the numpy backend has no bfloat16 element type (its inputs cannot be built); passes on torch and jax"

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
    "test_top_k_uint64": "the torch backend has no uint64 (a storage-only type in PyTorch); passes on numpy and jax",
}
JAX: dict[str, str] = {}
