"""System metrics: ``CpuUse``, ``CpuMemory``, ``CpuTemperature`` (Burn's), read from Linux ``/proc`` and
``/sys`` without dependencies (psutil is used when installed, on other systems)."""

from __future__ import annotations

import glob
import math
import os
from typing import ClassVar

from ._base import MetricMetadata
from ._host_metrics import HostNumericMetric

__all__ = ["CpuUse", "CpuMemory", "CpuTemperature"]


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii") as f:
            return f.read()
    except OSError:
        return None


def _cpu_times() -> tuple[float, float] | None:
    """(busy, total) jiffies from /proc/stat."""
    text = _read("/proc/stat")
    if not text:
        return None
    fields = [float(x) for x in text.splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    total = sum(fields[:8])
    return total - idle, total


class CpuUse(HostNumericMetric):
    """Whole-machine CPU use in percent since the previous update (Burn's ``CpuUse``; /proc/stat).

    The kernel counts CPU time in jiffies (usually 10 ms). When less than one jiffy has passed since
    the last reading the counters cannot say anything new, so the metric reports its previous value and
    keeps measuring from the older reading; before any previous value exists it reports the average since
    boot (what ``top`` shows on its first frame). It never reports ``nan`` on Linux.
    """

    unit: ClassVar[str] = "%"

    def __init__(self) -> None:
        super().__init__()
        self._last = _cpu_times()
        self._previous: float | None = None

    def name(self) -> str:
        return "CPU Usage"

    def available(self) -> str | None:
        if self._last is None:
            try:
                import psutil  # noqa: F401
            except ImportError:
                return "no /proc/stat and psutil is not installed"
        return None

    def measure(self, metadata: MetricMetadata) -> float:
        now = _cpu_times()
        if now is None:
            import psutil

            return float(psutil.cpu_percent())
        last = self._last
        if last is None or now[1] - last[1] < 1.0:
            # under one jiffy since the last reading: nothing new to measure, keep the older baseline
            if self._previous is not None:
                return self._previous
            if last is None:
                self._last = now
            return 100.0 * now[0] / now[1] if now[1] > 0 else 0.0
        self._last = now
        self._previous = 100.0 * (now[0] - last[0]) / (now[1] - last[1])
        return self._previous


class CpuMemory(HostNumericMetric):
    """Memory in use on the machine, in GB (Burn's ``CpuMemory``; MemTotal - MemAvailable of /proc/meminfo)."""

    unit: ClassVar[str] = " GB"

    def name(self) -> str:
        return "CPU Memory"

    def available(self) -> str | None:
        if _read("/proc/meminfo") is None:
            try:
                import psutil  # noqa: F401
            except ImportError:
                return "no /proc/meminfo and psutil is not installed"
        return None

    def measure(self, metadata: MetricMetadata) -> float:
        text = _read("/proc/meminfo")
        if text is None:
            import psutil

            vm = psutil.virtual_memory()
            return float(vm.total - vm.available) / 1e9
        info = {}
        for line in text.splitlines():
            key, _, rest = line.partition(":")
            parts = rest.split()
            if parts:
                info[key] = float(parts[0]) * 1024.0
        return (info.get("MemTotal", math.nan) - info.get("MemAvailable", math.nan)) / 1e9


def _temperature_files() -> list[str]:
    files = sorted(glob.glob("/sys/class/thermal/thermal_zone*/temp"))
    files += sorted(glob.glob("/sys/class/hwmon/hwmon*/temp*_input"))
    return [f for f in files if os.access(f, os.R_OK) and (_read(f) or "").strip().lstrip("-").isdigit()]


class CpuTemperature(HostNumericMetric):
    """The highest CPU sensor temperature in °C (Burn's ``CpuTemperature``; /sys thermal zones and hwmon).

    On machines that expose no sensor (most VMs and containers) :meth:`available` says so and the Learner
    skips the metric with a note instead of logging NaN.
    """

    unit: ClassVar[str] = " °C"

    def __init__(self) -> None:
        super().__init__()
        self._files = _temperature_files()

    def name(self) -> str:
        return "CPU Temperature"

    def available(self) -> str | None:
        if not self._files:
            return "this machine exposes no temperature sensor (/sys/class/thermal, /sys/class/hwmon)"
        return None

    def measure(self, metadata: MetricMetadata) -> float:
        values = []
        for f in self._files:
            text = _read(f)
            if text and text.strip().lstrip("-").isdigit():
                values.append(int(text) / 1000.0)
        return max(values) if values else math.nan
