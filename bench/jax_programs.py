"""The compiled XLA programs of a training step, Ember's ``ember_jax.jit`` against raw ``jax.jit`` (issue 32): what
each step runs after XLA's optimizations, side by side, on whatever device jax uses.

On an H200 Ember's jax step ran at 0.77x (guide), 0.76x (Transformer) and 0.90x (ResNet-18) raw ``jax.jit``'s, a gap
of up to 0.8 ms per step where Ember's host work is about 0.1 ms, while on the CPU Ember's step is as fast as raw's
(1.04x on the guide): the programs themselves differ on the GPU. This script compiles both steps of a
``bench/models.py`` model (the same factories, the same batch) with XLA's dump on, then prints per program the
instructions of its entry computation by opcode, the fusions by kind, the library calls (``custom-call`` targets:
cuDNN convolutions, cuBLAS GEMMs) and the copies and transposes that are not inside fusions: each of those is a
kernel launch on a GPU.

    python bench/jax_programs.py [--donate] [MODEL]        # resnet18 (default), guide, transformer, lstm

On a GPU Ember's step donates the model as the Learner's does there; on the CPU only with ``--donate``. The
``copy`` row counts the copies XLA inserts around buffers it cannot update in place: with the outputs in another
order than the donated inputs they were 325 (ResNet-18), 163 (Transformer) and 43 (guide) against raw's 59, 15 and
21 (``ember_jax/_donation_order.py``).

Not a test. The dump goes to a temporary folder, removed afterwards (``--keep DIR`` keeps it there).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

_OP = re.compile(r"= \S+ ([a-z][a-z0-9-]*)\(")
_KIND = re.compile(r"kind=(k[A-Za-z]+)")
_TARGET = re.compile(r'custom_call_target="([^"]+)"')


def histogram(path: Path) -> dict[str, collections.Counter[str]]:
    """Opcodes, fusion kinds and custom-call targets of the ENTRY computation of one optimized HLO dump."""
    ops: collections.Counter[str] = collections.Counter()
    kinds: collections.Counter[str] = collections.Counter()
    targets: collections.Counter[str] = collections.Counter()
    entry = False
    for line in path.read_text().splitlines():
        if line.startswith("ENTRY"):
            entry = True
            continue
        if entry and line.startswith("}"):
            break
        m = _OP.search(line) if entry else None
        if m is None:
            continue
        ops[m.group(1)] += 1
        if m.group(1) == "fusion" and (k := _KIND.search(line)):
            kinds[k.group(1)] += 1
        if m.group(1) == "custom-call" and (t := _TARGET.search(line)):
            targets[t.group(1)] += 1
    return {"ops": ops, "fusion kinds": kinds, "custom calls": targets}


def largest(dump: Path, name: str) -> Path | None:
    """The largest optimized module whose name holds ``name`` (the training step; kernels compile separately)."""
    found = [p for p in dump.glob(f"*{name}*after_optimizations.txt") if "buffer-assignment" not in p.name]
    return max(found, key=lambda p: p.stat().st_size, default=None)


def main(model: str, keep: str | None, donate: bool = False) -> None:
    dump = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="ember-hlo-"))
    dump.mkdir(parents=True, exist_ok=True)
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={dump} --xla_dump_hlo_pass_re=^$"
    try:
        import jax

        import models  # the benchmark's own factories (imports jax after XLA_FLAGS is set)

        if donate:
            models.JAX_DONATE = True

        device = "cuda" if jax.default_backend() == "gpu" else "cpu"
        for factory in (models.ember_jax, models.raw_jax):
            _, step = factory(model, device)
            step()
            step()
        rows = {"ember jax": largest(dump, "jit_traced"), "raw jax.jit": largest(dump, "jit_train")}
        if model == "guide" and rows["raw jax.jit"] is None:
            rows["raw jax.jit"] = largest(dump, "jit_")
        print(f"{model} on {jax.devices()[0]}: entry computations of the optimized training-step programs\n")
        hists = {k: histogram(p) if p else None for k, p in rows.items()}
        for section in ("ops", "fusion kinds", "custom calls"):
            keys = sorted({o for h in hists.values() if h for o in h[section]},
                          key=lambda o: -max((h[section][o] for h in hists.values() if h), default=0))
            print(f"| {section} | " + " | ".join(hists) + " |")
            print("| --- |" + " --- |" * len(hists))
            total = " | ".join(str(sum(h[section].values())) if h else "-" for h in hists.values())
            print(f"| (all) | {total} |")
            for o in keys:
                print(f"| {o} | " + " | ".join(str(h[section][o]) if h else "-" for h in hists.values()) + " |")
            print()
        for k, p in rows.items():
            print(f"{k}: {p.name if p else 'not found'}")
    finally:
        if not keep:
            shutil.rmtree(dump, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default="resnet18", help="resnet18, guide, transformer or lstm")
    ap.add_argument("--keep", help="keep XLA's dump in this folder")
    ap.add_argument("--donate", action="store_true",
                    help="Ember's step donates the model, as the Learner's does on an accelerator (raw's always does)")
    a = ap.parse_args()
    main(a.model, a.keep, a.donate)
