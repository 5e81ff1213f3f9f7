"""XOR with a small MLP and a hand-written loop (chapter 1 style): ``python -m xor`` from ``examples/``
prints the predictions for the inputs ``00 01 10 11``: ``0 1 1 0``."""

from __future__ import annotations

from .xor import INPUTS, TARGETS, Mlp, MlpConfig, predict, train

__all__ = ["INPUTS", "TARGETS", "Mlp", "MlpConfig", "predict", "train"]
