"""``python -m ember_train.launch --nproc N [--backend torch|jax|numpy] train.py ARGS``: N local training processes.

Ember's launcher for data-parallel training on one machine, for every backend (``torchrun`` works too for torch,
see the train README's "Distributed training" chapter). It starts ``N`` copies of the script (or ``-m module``)
with the environment variables ``torchrun`` sets, so :func:`ember.distributed.init_process_group` (and the
Learner's ``DistributedDataParallel`` strategy) finds its rank without arguments:

- ``RANK`` / ``LOCAL_RANK`` (``0 .. N-1``), ``WORLD_SIZE`` / ``LOCAL_WORLD_SIZE`` (``N``), ``GROUP_RANK`` (0),
  ``MASTER_ADDR`` (``--master-addr``, default ``127.0.0.1``), ``MASTER_PORT`` (``--master-port``, default a free
  port), and ``EMBER_BACKEND`` with ``--backend``; with several ranks also ``OMP_NUM_THREADS=1`` unless it is set
  (as ``torchrun``: N processes with the default thread count each would oversubscribe the cores).

Rank 0 writes to the launcher's own stdout and stderr (so the terminal dashboard works); the other ranks' lines
are forwarded prefixed with ``[rankR]``.

Faults: when a rank exits with a non-zero code or is killed by a signal, the launcher says which rank (its pid and
exit code or signal), terminates the other ranks (SIGTERM, then SIGKILL after ``--grace`` seconds) and exits
non-zero: with the rank's exit code, or ``128 + signal``. Ctrl-C (SIGINT) is forwarded once to every rank: the
Learner finishes the step the ranks agree on, rank 0 saves a resumable checkpoint, and the launcher waits for all
ranks, then exits with 130. A second Ctrl-C is forwarded too (the ranks then stop at once). SIGTERM and SIGHUP (the
terminal closed) are forwarded.

The ranks never outlive the launcher: each rank is the leader of its own process group (``start_new_session``, so a
Ctrl-C on the terminal reaches the launcher alone, which forwards it once), and on Linux each asks the kernel for
SIGTERM when the launcher dies (``prctl(PR_SET_PDEATHSIG)``), so a launcher killed with SIGKILL takes its ranks
along within moments. Stopping a rank signals its whole process group (``os.killpg``: the rank and the processes
it started, e.g. data-loader workers).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType
from typing import IO

__all__ = ["free_port", "launch", "main", "rank_environment"]

#: seconds between the checks of the children's state
_POLL_S = 0.05
#: the signals the launcher forwards to every rank (SIGHUP: the terminal closed; not on Windows)
_FORWARDED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
#: linux/prctl.h: the signal a process gets when its parent dies
_PR_SET_PDEATHSIG = 1


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` now (the operating system's choice; another process may take it later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def rank_environment(rank: int, nproc: int, master_addr: str, master_port: int,
                     backend: str | None = None) -> dict[str, str]:
    """The variables ``torchrun`` sets for local rank ``rank`` of ``nproc`` on one machine (plus ``EMBER_BACKEND``
    when ``backend`` is given)."""
    env = {
        "RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc),
        "GROUP_RANK": "0", "ROLE_RANK": str(rank), "ROLE_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port), "PYTHONUNBUFFERED": "1",
    }
    if backend is not None:
        env["EMBER_BACKEND"] = backend
    return env


def _forward(rank: int, src: IO[bytes], dst: IO[str]) -> None:
    prefix = f"[rank{rank}] "
    for line in iter(src.readline, b""):
        try:
            dst.write(prefix + line.decode(errors="replace"))
            dst.flush()
        except (ValueError, OSError):  # the launcher's stream closed
            break
    src.close()


def _describe(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def _die_with_parent(parent: int) -> Callable[[], None] | None:
    """The ``preexec_fn`` of a rank on Linux: SIGTERM to the rank when the launcher (``parent``) dies, even by
    SIGKILL (``prctl(PR_SET_PDEATHSIG, SIGTERM)``); ``None`` elsewhere, or when libc cannot be loaded."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def preexec() -> None:  # runs in the child between fork and exec: no allocation-heavy work
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the launcher died before prctl took effect
            os.kill(os.getpid(), signal.SIGTERM)

    return preexec


def _signal_group(p: subprocess.Popen[bytes], sig: int) -> None:
    """``sig`` to the process group of rank ``p`` (it leads its own group: the rank and what it started)."""
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        if p.poll() is None:
            p.send_signal(sig)


def _say(text: str) -> None:
    print(f"ember_train.launch: {text}", file=sys.stderr, flush=True)


def launch(command: Sequence[str], nproc: int, *, backend: str | None = None, master_addr: str = "127.0.0.1",
           master_port: int | None = None, grace: float = 10.0) -> int:
    """Run ``command`` (a Python argument list: ``["train.py", ...]`` or ``["-m", "module", ...]``) as ``nproc``
    ranks and monitor them; returns the exit code for the launcher (0 when every rank exited with 0).

    Raises:
        ValueError: ``nproc < 1`` or an empty command.
    """
    if nproc < 1:
        raise ValueError(f"ember_train.launch: --nproc must be >= 1, got {nproc}.")
    if not command:
        raise ValueError("ember_train.launch: no script given (python -m ember_train.launch --nproc 2 train.py).")
    port = master_port if master_port is not None else free_port(master_addr)
    procs: list[subprocess.Popen[bytes]] = []
    threads: list[threading.Thread] = []
    interrupts = 0
    previous: dict[int, object] = {}

    def forward_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupts
        if signum == signal.SIGINT:
            interrupts += 1
            if interrupts == 1:
                _say("Ctrl-C: asking every rank to stop after a checkpoint (Ctrl-C again stops them at once).")
        for p in procs:
            if p.poll() is None:
                try:
                    p.send_signal(signum)
                except ProcessLookupError:
                    pass

    # installed before the children start: a signal handled in Python reverts to the default in the child (an
    # ignored one, e.g. SIGINT in a background job, would stay ignored and the ranks could not be interrupted)
    for sig in _FORWARDED:
        previous[int(sig)] = signal.signal(sig, forward_signal)
    try:
        omp: dict[str, str] = {}
        if nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
            # as torchrun: N processes of the default thread count oversubscribe the cores
            omp = {"OMP_NUM_THREADS": "1"}
            _say("OMP_NUM_THREADS=1 for every rank (as torchrun; set it to override).")
        preexec = _die_with_parent(os.getpid())
        for rank in range(nproc):
            env = dict(os.environ)
            env.update(omp)
            env.update(rank_environment(rank, nproc, master_addr, port, backend))
            piped = rank != 0
            p = subprocess.Popen([sys.executable, *command], env=env, start_new_session=True, preexec_fn=preexec,
                                 stdout=subprocess.PIPE if piped else None, stderr=subprocess.PIPE if piped else None)
            procs.append(p)
        # the output threads start after the last fork (a preexec_fn is only safe while no other thread runs)
        for rank, p in enumerate(procs):
            if rank != 0:
                for src, dst in ((p.stdout, sys.stdout), (p.stderr, sys.stderr)):
                    t = threading.Thread(target=_forward, args=(rank, src, dst), daemon=True)
                    t.start()
                    threads.append(t)
        return _monitor(procs, grace, lambda: interrupts)
    finally:
        for p in procs:  # never leave a rank behind (an exception in the launcher itself), nor what it started
            _signal_group(p, signal.SIGKILL)
            p.wait()
        for t in threads:
            t.join(timeout=2.0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


def _monitor(procs: list[subprocess.Popen[bytes]], grace: float, interrupts: object) -> int:
    while True:
        codes = [p.poll() for p in procs]
        failed = [(r, c) for r, c in enumerate(codes) if c is not None and c != 0]
        if failed:
            # a rank killed by a signal first: the others' non-zero exits are usually their reaction to it
            rank, code = min(failed, key=lambda rc: (rc[1] >= 0, rc[0]))
            others = [r for r, c in enumerate(codes) if c is None]
            _say(f"rank {rank} (pid {procs[rank].pid}) {_describe(code)}; "
                 + (f"stopping the other ranks {others}." if others else "no other rank is running."))
            _stop(procs, grace)
            return code if code > 0 else 128 - code
        if all(c == 0 for c in codes):
            return 130 if interrupts() else 0  # type: ignore[operator]
        time.sleep(_POLL_S)


def _stop(procs: list[subprocess.Popen[bytes]], grace: float) -> None:
    for p in procs:
        if p.poll() is None:
            _signal_group(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in procs:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(p, signal.SIGKILL)
            p.wait()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m ember_train.launch",
        description="Start N local training processes with torchrun's environment variables (RANK, WORLD_SIZE, "
                    "MASTER_ADDR, ...) and watch them: a rank that fails stops the others.")
    p.add_argument("--nproc", "--nproc-per-node", dest="nproc", type=int, default=1,
                   help="processes to start (default 1)")
    p.add_argument("--backend", choices=("numpy", "torch", "jax"), default=None,
                   help="sets EMBER_BACKEND for every rank")
    p.add_argument("--master-addr", default="127.0.0.1", help="rendezvous address (default 127.0.0.1)")
    p.add_argument("--master-port", type=int, default=None, help="rendezvous port (default: a free port)")
    p.add_argument("--grace", type=float, default=10.0,
                   help="seconds the other ranks get to exit after SIGTERM when one failed (default 10)")
    p.add_argument("-m", dest="module", default=None, help="run a module (as python -m) instead of a script")
    p.add_argument("command", nargs=argparse.REMAINDER, help="the script and its arguments")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; returns the exit code."""
    args = _parser().parse_args(argv)
    command = list(args.command)
    if args.module is not None:
        command = ["-m", args.module, *command]
    try:
        return launch(command, args.nproc, backend=args.backend, master_addr=args.master_addr,
                      master_port=args.master_port, grace=args.grace)
    except ValueError as exc:
        _say(str(exc))
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
