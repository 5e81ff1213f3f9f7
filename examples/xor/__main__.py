"""``python -m xor [--backend numpy|torch|jax] [--steps 300]``: train, then print ``0 1 1 0``."""

from __future__ import annotations

import argparse

import ember
from ember.autodiff import Autodiff

from .xor import predict, train


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m xor", description="XOR with a small MLP, trained by hand.")
    p.add_argument("--backend", choices=("numpy", "torch", "jax"), default="numpy")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    device = Autodiff(ember.backend(args.backend)).device()
    model = train(device, steps=args.steps, seed=args.seed, log_every=max(args.steps // 5, 1))
    print(" ".join(str(v) for v in predict(model.valid(), device.inner)))


if __name__ == "__main__":
    main()
