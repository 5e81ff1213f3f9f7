"""Shape and indexing primitives of the numpy backend."""

from __future__ import annotations

from typing import Any

import numpy as np


class NumpyShapeOps:
    def reshape(self, a: Any, shape: tuple[int, ...]) -> Any:
        return np.reshape(a, shape)

    def expand(self, a: Any, shape: tuple[int, ...]) -> Any:
        return np.broadcast_to(a, shape)

    def cat(self, ps: list[Any], dim: int) -> Any:
        return np.concatenate(ps, axis=dim)

    def stack(self, ps: list[Any], dim: int) -> Any:
        return np.stack(ps, axis=dim)

    def mask_fill(self, a: Any, mask: Any, value: Any) -> Any:
        return np.where(mask, np.asarray(value, dtype=a.dtype), a)

    def mask_where(self, a: Any, mask: Any, value: Any) -> Any:
        return np.where(mask, value, a).astype(a.dtype, copy=False)
