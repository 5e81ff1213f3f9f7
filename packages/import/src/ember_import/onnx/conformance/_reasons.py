"""Reasons shared by several families' known-failures lists (``_kf_*.py``)."""

NUMPY_NO_BF16 = (
    "the numpy backend has no bfloat16 element type, so the case's tensors cannot be built there; passes on torch "
    "and jax"
)
TORCH_NO_WIDE_UINT = (
    "the torch backend has no uint16/uint32/uint64 (storage-only types in PyTorch, without CPU kernels); passes on "
    "numpy and jax"
)
