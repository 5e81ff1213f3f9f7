"""The Burn Book's backend extension example: a fused matmul + bias + ReLU (``matmul_add_relu``)."""

from .op import matmul_add_relu, reference

__all__ = ["matmul_add_relu", "reference"]
