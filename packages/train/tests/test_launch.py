"""``python -m ember_train.launch``: torchrun's environment, output prefixes, exit codes and a failing rank."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from ember_train.launch import launch, rank_environment

SCRIPT = """
import os, sys, time
keys = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "EMBER_BACKEND",
        "OMP_NUM_THREADS")
print(" ".join(f"{k}={os.environ.get(k)}" for k in keys), sys.argv[1:])
rank = int(os.environ["RANK"])
if sys.argv[1] == "fail" and rank == 1:
    sys.exit(3)
if sys.argv[1] == "fail":
    time.sleep(30)   # the launcher must stop this rank when rank 1 fails
"""


def _run(tmp_path: Path, launcher_args: list[str], *script_args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    return subprocess.run([sys.executable, "-m", "ember_train.launch", *launcher_args, str(script), *script_args],
                          capture_output=True, text=True, timeout=60)


def test_ranks_get_torchruns_variables(tmp_path: Path) -> None:
    p = _run(tmp_path, ["--nproc", "2", "--backend", "torch", "--master-port", "29999"], "ok", "--flag")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    rank0 = next(line for line in lines if line.startswith("RANK=0"))
    rank1 = next(line for line in lines if line.startswith("[rank1] RANK=1"))
    for line, r in ((rank0, 0), (rank1, 1)):
        assert f"LOCAL_RANK={r} WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999" in line
        assert "EMBER_BACKEND=torch OMP_NUM_THREADS=1" in line and "['ok', '--flag']" in line


def test_a_failing_rank_stops_the_others_and_is_named(tmp_path: Path) -> None:
    start = time.monotonic()
    p = _run(tmp_path, ["--nproc", "2", "--grace", "2"], "fail")
    assert time.monotonic() - start < 20
    assert p.returncode == 3
    assert "rank 1 (pid" in p.stderr and "exited with code 3" in p.stderr and "stopping the other ranks [0]" in p.stderr


def test_launch_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="nproc"):
        launch(["x.py"], 0)
    with pytest.raises(ValueError, match="no script"):
        launch([], 2)
    assert rank_environment(1, 4, "h", 5)["RANK"] == "1"


SLEEPER = """
import os, sys, time
from pathlib import Path
Path(sys.argv[1], f"rank{os.environ['RANK']}.pid").write_text(str(os.getpid()))
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not reaped by its new parent, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("how", ["SIGKILL", "SIGHUP"])
def test_the_ranks_do_not_outlive_the_launcher(tmp_path: Path, how: str) -> None:
    """The launcher killed with SIGKILL (it cannot forward anything) or hung up (SIGHUP, forwarded): both ranks are
    gone within a few seconds instead of running on as orphans."""
    import os
    import signal

    script = tmp_path / "sleeper.py"
    script.write_text(SLEEPER)
    launcher = subprocess.Popen([sys.executable, "-m", "ember_train.launch", "--nproc", "2", str(script),
                                 str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    pids: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(pids) < 2:
            pids = [int(f.read_text()) for f in sorted(tmp_path.glob("rank*.pid")) if f.read_text()]
            time.sleep(0.05)
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        os.kill(launcher.pid, getattr(signal, how))
        launcher.wait(timeout=30)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(p) for p in pids):
            time.sleep(0.05)
        assert not any(_alive(p) for p in pids), f"ranks {pids} outlived the launcher ({how})"
    finally:
        for p in pids:
            if _alive(p):
                os.kill(p, signal.SIGKILL)
        if launcher.poll() is None:
            launcher.kill()
