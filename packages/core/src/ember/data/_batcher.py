"""``Batcher``: turns a list of items into a batch on a device (Burn's ``Batcher`` trait)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Batcher", "batch_function"]

I = TypeVar("I")  # noqa: E741 - invariant: items arrive in a list
O_co = TypeVar("O_co", covariant=True)


@runtime_checkable
class Batcher(Protocol[I, O_co]):
    """``batch(items, device) -> batch``, as Burn's ``Batcher<B, I, O>``.

    The data loader calls it with the items of one batch (a list, in batch order) and its device:
    the one given with ``DataLoaderBuilder.set_device`` or ``DataLoader.to_device`` (the Learner moves
    the training and validation loaders to their devices this way), else the default device
    ``ember.device()``. A typical batcher stacks the items with numpy and builds tensors with
    ``Tensor.from_data(array, device)``:

    .. code-block:: python

        class MnistBatcher:
            def batch(self, items: list[MnistItem], device: Device) -> MnistBatch:
                images = np.stack([it.image for it in items]).astype(np.float32)  # [batch, 28, 28]
                images = (images / 255 - 0.1307) / 0.3081  # mean and std of MNIST (Burn's guide)
                targets = np.array([it.label for it in items], dtype=np.int64)    # [batch]
                return MnistBatch(Tensor.from_data(images, device), Tensor.from_data(targets, device))

    With worker threads, ``batch`` runs concurrently for several batches, so it must be thread-safe
    (pure functions of their input are). A plain function ``fn(items, device)`` is accepted too.
    """

    def batch(self, items: list[I], device: Any) -> O_co: ...


def batch_function(batcher: Any) -> Callable[[list[Any], Any], Any]:
    """The callable ``(items, device) -> batch`` of a :class:`Batcher` or plain function.

    Raises:
        TypeError: ``batcher`` has no ``batch`` method and is not callable.
    """
    fn = getattr(batcher, "batch", None)
    if callable(fn):
        return fn
    if callable(batcher):
        return batcher
    raise TypeError(
        f"expected a Batcher (an object with batch(items, device)) or a function (items, device) -> batch, "
        f"got {type(batcher).__name__}."
    )
