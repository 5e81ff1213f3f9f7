"""``Embedding``: a look-up table of vectors (Burn's ``nn::Embedding``)."""

from __future__ import annotations

from ..backend._device import Device
from ..config import config
from ..module import Module, Param
from ..tensor import Tensor
from ..tensor import functional as M
from ._checks import check_int, config_error
from ._initializer import AnyInitializer, Normal

__all__ = ["EmbeddingConfig", "Embedding"]


@config
class EmbeddingConfig:
    """Configuration of :class:`Embedding` (Burn's ``EmbeddingConfig``).

    Args:
        n_embedding: the number of vectors (vocabulary size).
        d_model: the size of each vector.
        initializer: default ``Normal(mean=0, std=1)`` (Burn's default, as PyTorch's ``nn.Embedding``).
    """

    n_embedding: int
    d_model: int
    initializer: AnyInitializer = Normal(mean=0.0, std=1.0)

    def init(self, device: Device) -> Embedding:
        """A new :class:`Embedding`. Raises ConfigError for a size below 1."""
        if self.n_embedding < 1 or self.d_model < 1:
            raise config_error("EmbeddingConfig", f"n_embedding ({self.n_embedding}) and d_model ({self.d_model}) "
                               "must be >= 1.")
        w = self.initializer.init_param_with([self.n_embedding, self.d_model], self.n_embedding, self.d_model, device)
        return Embedding(weight=w)


class Embedding(Module):
    """Maps Int indices to rows of ``weight`` ``[n_embedding, d_model]`` (Burn's layout, same as PyTorch).

    Shapes: indices Int ``[batch, seq_length]`` (any shape) -> ``[batch, seq_length, d_model]``.

    Raises (forward):
        KindError: non-Int indices. ember.IndexError: an index outside ``[0, n_embedding)``,
        negative ones included (as :func:`ember.tensor.functional.embedding`).
    """

    weight: Param

    def forward(self, indices: Tensor) -> Tensor:
        check_int("Embedding", indices)
        return M.embedding(self.weight.val(), indices)
