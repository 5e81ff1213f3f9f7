"""Known node-suite failures of family F5 (recurrent layers, control flow, sequences, signal processing,
random and training ops, NonMaxSuppression).

See :mod:`.known_failures` for the format. ``*_expanded*`` cases are not listed here (the lead consolidates
them).
"""

from __future__ import annotations

_RANDOM = (
    "random values: the case expects the samples of onnx's reference generator (numpy with the node's seed); "
    "Ember draws from the backend's own generator and ignores per-node seeds, so only the shape and type "
    "match (checked in tests/test_onnx_rnn.py)"
)

ALL: dict[str, str] = {
    "test_bernoulli": _RANDOM,
    "test_bernoulli_double": _RANDOM,
    "test_bernoulli_seed": _RANDOM,
}
NUMPY: dict[str, str] = {}
TORCH: dict[str, str] = {}
JAX: dict[str, str] = {}
