"""Known node-suite failures of family F4 (convolution, pooling, resampling).

See :mod:`.known_failures` for the format. ``*_expanded*`` cases are not listed here (the lead consolidates
them). Every non-expanded case of Conv, ConvTranspose, Col2Im, DeformConv, CausalConvWithState, MaxPool,
AveragePool, LpPool, GlobalAveragePool, GlobalMaxPool, MaxUnpool, RoiAlign, Resize, Upsample, GridSample and
AffineGrid passes on numpy, torch and jax, so the lists are empty. (ConvInteger and QLinearConv belong to the
quantization family.)
"""

from __future__ import annotations

ALL: dict[str, str] = {}
NUMPY: dict[str, str] = {}
TORCH: dict[str, str] = {}
JAX: dict[str, str] = {}
