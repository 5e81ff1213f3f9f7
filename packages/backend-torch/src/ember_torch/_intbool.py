"""Int bitwise and Bool logical primitives of the torch backend."""

from __future__ import annotations

from typing import Any

import torch


def _as_tensor(b: Any, like: Any) -> Any:
    # torch's logical ops take tensors only; a 0-d tensor broadcasts like the scalar
    return b if isinstance(b, torch.Tensor) else torch.tensor(b, dtype=like.dtype, device=like.device)


class TorchIntBoolOps:
    bitwise_and = staticmethod(torch.bitwise_and)
    bitwise_or = staticmethod(torch.bitwise_or)
    bitwise_xor = staticmethod(torch.bitwise_xor)
    bitwise_not = staticmethod(torch.bitwise_not)
    bitwise_left_shift = staticmethod(torch.bitwise_left_shift)
    bitwise_right_shift = staticmethod(torch.bitwise_right_shift)  # arithmetic for signed ints
    logical_not = staticmethod(torch.logical_not)

    @staticmethod
    def logical_and(a: Any, b: Any) -> Any:
        return torch.logical_and(a, _as_tensor(b, a))

    @staticmethod
    def logical_or(a: Any, b: Any) -> Any:
        return torch.logical_or(a, _as_tensor(b, a))

    @staticmethod
    def logical_xor(a: Any, b: Any) -> Any:
        return torch.logical_xor(a, _as_tensor(b, a))
