"""Known failures of the shape operators (``ops/_reshape.py``, ``ops/_slicing.py``)."""

_NO_BF16 = "the numpy backend has no bfloat16 element type (its inputs cannot be built); passes on torch and jax"

ALL: dict[str, str] = {}
NUMPY = {
    "test_range_bfloat16_type_positive_delta": _NO_BF16,
    "test_range_bfloat16_type_positive_delta_expanded": _NO_BF16,
}
TORCH: dict[str, str] = {}
JAX: dict[str, str] = {}
