"""``python -m custom_op [--backend numpy torch jax]``: check ``matmul_add_relu`` on each installed backend against
its default (``ember.testing.check_custom_op``) and print the largest errors."""

from __future__ import annotations

import argparse
import importlib.util

from ember.testing import check_custom_op

from .op import matmul_add_relu


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m custom_op", description="check the fused matmul_add_relu op")
    p.add_argument("--backend", nargs="*", default=["numpy", "torch", "jax"])
    args = p.parse_args(argv)
    for name in args.backend:
        if importlib.util.find_spec(name) is None:
            print(f"{name}: not installed, skipped")
            continue
        report = check_custom_op(matmul_add_relu, (8, 16), (16, 4), (1, 4), backend=name)
        kernel = "kernel" if matmul_add_relu.kernel(name) else "default"
        print(f"{name} ({kernel}): " + ", ".join(f"{k} {v:.1e}" for k, v in report.items()))
    print("ok")


if __name__ == "__main__":
    main()
