"""``TensorBase``: what every tensor has, declared once for the op mixins that make up :class:`~ember.Tensor`.

A tensor is ``(primitive, device, kind, ops)`` (see :mod:`._tensor`). The op mixins (``_basic.py``, ``_numeric.py``
...) inherit this class, so they see the tensor's slots and properties, and the methods of the other mixins they
call (declared here for the type checker only), without importing the ``Tensor`` class that is built from them:
the import graph of ``ember.tensor`` goes one way, ``_tensor`` -> mixins -> ``_core`` / ``_util`` -> ``_base``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .._dtype import DType
from .._kind import Kind
from ..backend._device import Device

__all__ = ["TensorBase", "TensorT"]


class TensorBase:
    """The slots of a tensor and the properties read from them; the base of every op mixin of ``Tensor``."""

    __slots__ = ("primitive", "device", "kind", "ops", "__weakref__")
    #: the array library's array (for an Autodiff Float tensor, an ``AutodiffPrimitive``)
    primitive: Any
    #: the :class:`~ember.Device` the tensor lives on
    device: Device
    #: ``Float``, ``Int`` or ``Bool``
    kind: Kind
    #: the op provider serving this kind on this device (``device.ops[kind.index]``)
    ops: Any

    # ------------------------------------------------------------------ properties
    @property
    def shape(self) -> tuple[int, ...]:
        """The sizes of the dims, as a tuple (Burn's ``shape()``); ``()`` for rank 0."""
        return self.ops.shape(self.primitive)

    def dims(self) -> list[int]:
        """The sizes of the dims as a list (Burn's ``dims()``)."""
        return list(self.ops.shape(self.primitive))

    @property
    def rank(self) -> int:
        """The number of dims (Burn's ``D``)."""
        return len(self.ops.shape(self.primitive))

    @property
    def ndim(self) -> int:
        """Alias of :attr:`rank` (numpy/PyTorch name)."""
        return len(self.ops.shape(self.primitive))

    @property
    def dtype(self) -> DType:
        """The element type (``DType.FLOAT32`` ...), a setting of the backend."""
        return self.ops.dtype(self.primitive)

    @property
    def backend(self) -> Any:
        """The backend the tensor's device belongs to."""
        return self.device.backend

    def num_elements(self) -> int:
        """The number of elements (product of the dims; 1 for rank 0)."""
        n = 1
        for s in self.ops.shape(self.primitive):
            n *= s
        return n

    def is_empty(self) -> bool:
        return self.num_elements() == 0

    if TYPE_CHECKING:
        # Methods one mixin calls on ``self`` that another mixin defines (the type checker's view only: at run
        # time they resolve on ``Tensor``).
        # helpers of ReduceOps (``_reduce.py``) that OrderedTensorOps uses
        def _need(self, op: str, kinds: tuple[Any, ...]) -> None: ...
        def _dim(self, op: str, dim: int, nonempty: bool = False) -> int: ...
        def _nonempty(self, op: str) -> None: ...
        def _call(self, op: str, fn: Any, kind: Any = None) -> Any: ...
        def _with_indices(self, op: str, dim: int, prim: str, *extra: Any) -> tuple[Any, Any]: ...

        # ops of other mixins (``_float.py``, ``_basic.py``, ``_indexing.py``, ``_rearrange.py``) and of ``Tensor``
        # itself (conversions, ``detach``, ``inner``)
        def _prim(self, op: str, prim: str, *args: Any) -> Any: ...
        def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any: ...
        def narrow(self, dim: int, start: int, length: int) -> Any: ...
        def slice_dim(self, dim: int, range_: Any) -> Any: ...
        def mask_fill(self, mask: Any, value: Any) -> Any: ...
        def powf(self, other: Any) -> Any: ...
        @staticmethod
        def stack(tensors: Sequence[Any], dim: int) -> Any: ...

        # ops the quantization core (``ember._quantization``) calls on the tensors it is given: it is reached from
        # ``Tensor.quantize`` (``_quantize.py``), so it is typed against this class, not ``Tensor`` (declared
        # before ``float``/``int``/``bool``, whose stubs shadow the builtins in this class body)
        def reshape(self, shape: Sequence[int]) -> Any: ...
        def cast(self, dtype: Any) -> Any: ...
        def min(self) -> Any: ...
        def max(self) -> Any: ...
        def abs(self) -> Any: ...
        def clamp_min(self, min: Any) -> Any: ...  # noqa: A002
        def clamp_max(self, max: Any) -> Any: ...  # noqa: A002
        def is_finite(self) -> Any: ...
        def zeros_like(self) -> Any: ...
        def to_device(self, device: Device) -> Any: ...
        def to_numpy(self) -> Any: ...
        def to_data(self) -> Any: ...
        def __add__(self, other: Any) -> Any: ...
        def __sub__(self, other: Any) -> Any: ...
        def __mul__(self, other: Any) -> Any: ...
        def __truediv__(self, other: Any) -> Any: ...
        def __floordiv__(self, other: Any) -> Any: ...
        def __mod__(self, other: Any) -> Any: ...
        def __getitem__(self, index: Any) -> Any: ...
        @staticmethod
        def cat(tensors: Sequence[Any], dim: int) -> Any: ...
        @staticmethod
        def from_inner(tensor: Any, device: Device) -> Any: ...

        def detach(self) -> Any: ...
        def inner(self) -> Any: ...
        def float(self) -> Any: ...
        def int(self) -> Any: ...
        def bool(self) -> Any: ...


#: a tensor type (``Tensor`` where code holds one): code below ``Tensor`` that hands back the tensors it was given
#: (the quantization core's ``QParams`` and ``QuantizedTensor``) is generic in it, so its callers keep their type
TensorT = TypeVar("TensorT", bound=TensorBase)
