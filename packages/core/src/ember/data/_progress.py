"""``Progress``: how far an epoch of a data loader has got (Burn's ``burn::data::dataloader::Progress``)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Progress"]


@dataclass(frozen=True)
class Progress:
    """Items processed so far in the epoch and the epoch's total, as Burn's ``Progress``.

    ``items_processed`` counts the items of the batches already handed to the caller.
    """

    items_processed: int
    items_total: int

    @property
    def fraction(self) -> float:
        """``items_processed / items_total`` in ``[0, 1]`` (1.0 for an empty epoch)."""
        return self.items_processed / self.items_total if self.items_total else 1.0
