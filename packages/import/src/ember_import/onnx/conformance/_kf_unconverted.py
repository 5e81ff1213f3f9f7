"""Known failures outside the converter families: operators Ember does not convert, and the ``*_expanded``
cases (function bodies of other operators) whose data has a type Ember lacks.

Entries are fnmatch patterns where a whole group of cases fails for one reason.
"""

from __future__ import annotations

from ._reasons import NUMPY_NO_BF16, TORCH_NO_WIDE_UINT

_STRINGS = "string tensors have no Ember element type (text processing belongs before the model)"
_ML = "a classical-ML operator of ai.onnx.ml (decision trees, label maps over strings): no tensor-op form in Ember"
_LOW = "{} element types have no Ember equivalent; the suite's data cannot be built"

ALL: dict[str, str] = {
    "test_image_decoder_*": "ImageDecoder decodes JPEG/PNG/... bytes: an image codec, not a tensor op; decode first",
    "test_tfidfvectorizer_*": (
        "TfIdfVectorizer counts n-grams of token pools (a text-preprocessing op): not converted"
    ),
    "test_string_split_*": _STRINGS,
    "test_strnormalizer_*": _STRINGS,
    "test_string_concat*": _STRINGS,
    "test_regex_full_match_*": _STRINGS,
    "test_ai_onnx_ml_label_encoder_*": _ML,
    "test_ai_onnx_ml_tree_ensemble_*": _ML,
    "test_castlike_*FLOAT8*_expanded": _LOW.format("float8"),
    "test_castlike_*FLOAT4E2M1*_expanded": _LOW.format("4-bit float"),
    "test_castlike_*INT4*_expanded": _LOW.format("4-bit integer"),
    "test_castlike_*INT2*_expanded": _LOW.format("2-bit integer"),
    "test_bernoulli*_expanded": (
        "random draws: the case expects numpy RandomState values, which Ember's generators do not reproduce"
    ),
}
NUMPY: dict[str, str] = {
    "test_attention_*_bf16_expanded": NUMPY_NO_BF16,
    "test_castlike_BFLOAT16_to_FLOAT_expanded": NUMPY_NO_BF16,
    "test_castlike_FLOAT_to_BFLOAT16_expanded": NUMPY_NO_BF16,
    "test_celu_bfloat16_expanded": NUMPY_NO_BF16,
}
TORCH: dict[str, str] = {
    "test_greater_equal_uint[136]*_expanded": TORCH_NO_WIDE_UINT,
    "test_less_equal_uint[136]*_expanded": TORCH_NO_WIDE_UINT,
}
JAX: dict[str, str] = {}
