"""Padding configurations of the convolution and pooling layers (Burn's ``PaddingConfig1d/2d/3d``).

``Valid`` (no padding, Burn's default), ``Same`` (the output keeps the input size; stride 1 only,
as PyTorch's ``padding="same"``; an even window is padded one more on the right / bottom, as
PyTorch) and ``Explicit(p...)`` (zero padding ``p`` on both sides of each spatial dim)::

    Conv2dConfig((1, 16), (3, 3)).with_padding(PaddingConfig2d.Same)
    Conv2dConfig((1, 16), (3, 3)).with_padding(PaddingConfig2d.Explicit(1, 1))
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from ..config import config

__all__ = ["PaddingConfig1d", "PaddingConfig2d", "PaddingConfig3d", "resolve_padding"]


class _PaddingBase:
    kind: str
    padding: tuple[int, ...]
    _N = 1

    def _validate(self) -> None:
        from .._errors import ConfigError

        if self.kind == "Explicit":
            if len(self.padding) != self._N or any(p < 0 for p in self.padding):
                raise ConfigError(f"{type(self).__name__}.Explicit needs {self._N} non-negative sizes, got "
                                  f"{list(self.padding)}.")
        elif self.padding and any(self.padding):
            raise ConfigError(f"{type(self).__name__}.{self.kind} takes no sizes, got {list(self.padding)}.")



@config
class PaddingConfig1d(_PaddingBase):
    """Padding of a 1-D layer: ``PaddingConfig1d.Valid``, ``.Same`` or ``.Explicit(length)``."""

    kind: Literal["Valid", "Same", "Explicit"] = "Valid"
    padding: tuple[int, ...] = ()
    _N = 1
    Valid: ClassVar[PaddingConfig1d]
    Same: ClassVar[PaddingConfig1d]

    def __post_init__(self) -> None:
        self._validate()

    @staticmethod
    def Explicit(length: int) -> PaddingConfig1d:  # noqa: N802 - Burn's variant name
        return PaddingConfig1d("Explicit", (length,))


@config
class PaddingConfig2d(_PaddingBase):
    """Padding of a 2-D layer: ``PaddingConfig2d.Valid``, ``.Same`` or ``.Explicit(height, width)``."""

    kind: Literal["Valid", "Same", "Explicit"] = "Valid"
    padding: tuple[int, ...] = ()
    _N = 2
    Valid: ClassVar[PaddingConfig2d]
    Same: ClassVar[PaddingConfig2d]

    def __post_init__(self) -> None:
        self._validate()

    @staticmethod
    def Explicit(height: int, width: int) -> PaddingConfig2d:  # noqa: N802
        return PaddingConfig2d("Explicit", (height, width))


@config
class PaddingConfig3d(_PaddingBase):
    """Padding of a 3-D layer: ``PaddingConfig3d.Valid``, ``.Same`` or ``.Explicit(depth, height, width)``."""

    kind: Literal["Valid", "Same", "Explicit"] = "Valid"
    padding: tuple[int, ...] = ()
    _N = 3
    Valid: ClassVar[PaddingConfig3d]
    Same: ClassVar[PaddingConfig3d]

    def __post_init__(self) -> None:
        self._validate()

    @staticmethod
    def Explicit(depth: int, height: int, width: int) -> PaddingConfig3d:  # noqa: N802
        return PaddingConfig3d("Explicit", (depth, height, width))


for _cls in (PaddingConfig1d, PaddingConfig2d, PaddingConfig3d):
    _cls.Valid = _cls("Valid")  # type: ignore[assignment]
    _cls.Same = _cls("Same")  # type: ignore[assignment]


def resolve_padding(config_name: str, padding: Any, kernel: tuple[int, ...], stride: tuple[int, ...],
                    dilation: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(left, right)`` padding per spatial dim for a padding config.

    Raises:
        ConfigError: ``Same`` with a stride other than 1 (PyTorch's rule: the output size would depend
            on the input size).
    """
    from ._checks import config_error

    n = len(kernel)
    if padding.kind == "Valid":
        zeros = (0,) * n
        return zeros, zeros
    if padding.kind == "Explicit":
        return tuple(padding.padding), tuple(padding.padding)
    if any(s != 1 for s in stride):
        raise config_error(config_name, f"padding Same needs stride 1 (got {list(stride)}); use Explicit padding.")
    total = [d * (k - 1) for k, d in zip(kernel, dilation)]
    left = tuple(t // 2 for t in total)
    return left, tuple(t - lo for t, lo in zip(total, left))
