"""Peak resident memory of a benchmark contender, measured in a child process of its own.

In one process the peak only grows, so each contender's peak is taken in a fresh child (``python SCRIPT ARGS``)
that builds it, runs a few steps and prints :func:`vm_hwm_mib` as its last output line (JSON ``{"rss_mib": x}``).
Scripts in ``bench/`` import this module as ``_rss`` (their folder is on ``sys.path``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def vm_hwm_mib() -> float:
    """This process's peak resident set (``VmHWM`` of ``/proc/self/status``) in MiB.

    ``VmHWM`` rather than ``getrusage``'s ``ru_maxrss``: Linux carries ``ru_maxrss`` over from the parent across
    fork + exec, so a child would report at least its parent's peak."""
    hwm = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM"))
    return int(hwm.split()[1]) / 1024


def print_peak() -> None:
    """Print :func:`vm_hwm_mib` as the JSON line :func:`child_peak_mib` reads."""
    print(json.dumps({"rss_mib": vm_hwm_mib()}), flush=True)


def child_peak_mib(script: str, args: list[str], timeout: float = 900) -> float | None:
    """Run ``python script *args`` and return the peak RSS it printed last (:func:`print_peak`), or ``None``
    when the child failed (its stderr's last line is shown)."""
    run = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=timeout)
    if run.returncode != 0:
        tail = run.stderr.strip().splitlines()[-1:] or ["no output"]
        print(f"  peak RSS child {args} failed: {tail[0]}", file=sys.stderr)
        return None
    return float(json.loads(run.stdout.strip().splitlines()[-1])["rss_mib"])
