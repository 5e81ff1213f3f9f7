"""Module primitives (convolution, pooling, embedding, interpolation): added by the nn work.

Burn's ``ModuleOps``. Until a backend implements them, calling one raises
``NotImplementedError`` naming the op.
"""

from __future__ import annotations


class ModuleOps:
    """Convolution, pooling, embedding and interpolation primitives (see the nn issue)."""
