"""Collective ops (:mod:`ember.distributed`) on the backend under test.

Two local processes (one pair for the whole module, :mod:`._collectives_worker`) run every collective
once and report what they got; the expectations are computed here in numpy float64 from both ranks'
inputs. Single-process cases run in the test process: world size 1, argument errors, use before
init, double init, a backend without collectives, and a missing peer (in a subprocess) failing within
its timeout. A backend whose engine is not installed (numpy without ember-backend-torch) skips, saying so.
"""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ember
import ember.distributed as dist
from ember import CollectiveError, KindError, Tensor
from ember.backend import Backend

from ._collectives_worker import EXTRA_DTYPES, MANY_BUCKET_BYTES, MANY_SHAPES, inputs

pytestmark = pytest.mark.filterwarnings("error")

WORLD = 2
#: seconds the pair of workers may take in all (jax compiles one program per collective and shape)
PAIR_TIMEOUT = 120.0
RTOL = {"float32": 1e-6, "float64": 1e-12, "float16": 1e-3, "bfloat16": 1e-2}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env.setdefault("JAX_PLATFORMS", "cpu")  # the workers share this machine's CPU; no accelerator is needed
    return env


@pytest.fixture(scope="module")
def engine(B: Any, backend_name: str) -> str:  # noqa: N803
    """Skip the module's collective cases when the backend's engine is not installed."""
    try:
        B.collectives()  # makes the engine object only: nothing is joined
    except CollectiveError as exc:
        assert not B.supports_collectives, "supports_collectives is true, yet collectives() raised"
        pytest.skip(f"{backend_name}: no collectives engine here: {exc}")
    assert B.supports_collectives, "collectives() works, yet supports_collectives is false"
    return backend_name


@pytest.fixture(scope="module")
def pair(engine: str, tmp_path_factory: Any) -> list[dict[str, Any]]:
    """What each of the 2 ranks got (one pair of processes runs every check)."""
    tmp = tmp_path_factory.mktemp("collectives")
    port = _free_port()
    outs = [tmp / f"rank{r}.pkl" for r in range(WORLD)]
    logs = [open(tmp / f"rank{r}.log", "w+b") for r in range(WORLD)]  # noqa: SIM115 - closed below
    procs = [subprocess.Popen([sys.executable, "-m", "ember.testing.conformance._collectives_worker", engine,
                               str(r), str(WORLD), str(port), str(outs[r])],
                              stdout=logs[r], stderr=subprocess.STDOUT, env=_env())
             for r in range(WORLD)]
    deadline = time.monotonic() + PAIR_TIMEOUT
    try:
        for p in procs:
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.wait()
        pytest.fail(f"the 2 collective workers did not finish within {PAIR_TIMEOUT} s:\n" + _logs(logs))
    results = []
    for r in range(WORLD):
        if not outs[r].exists():
            pytest.fail(f"rank {r} wrote no result (exit {procs[r].returncode}):\n" + _logs(logs))
        with open(outs[r], "rb") as fh:
            results.append(pickle.load(fh))
        if "fatal" in results[-1]:
            pytest.fail(f"rank {r} failed:\n{results[-1]['fatal']}\n" + _logs(logs))
    for f in logs:
        f.close()
    return results


def _logs(logs: list[Any]) -> str:
    text = []
    for r, f in enumerate(logs):
        f.flush()
        f.seek(0)
        text.append(f"--- rank {r} output (tail) ---\n" + f.read().decode(errors="replace")[-4000:])
        f.close()
    return "\n".join(text)


def _got(pair: list[dict[str, Any]], name: str) -> list[Any]:
    got = [r[name] for r in pair]
    for rank, g in enumerate(got):
        if isinstance(g, dict) and "error" in g:
            pytest.fail(f"rank {rank}, {name}:\n{g['error']}")
    return got


def _close(res: dict[str, Any], expected: Any, kind: str, dtype: str | None = None) -> None:
    assert res["kind"] == kind, res
    if dtype is not None:
        assert res["dtype"] == dtype, res
    exp = np.asarray(expected)
    assert res["value"].shape == exp.shape, (res["value"].shape, exp.shape)
    if kind == "Float":
        np.testing.assert_allclose(res["value"], exp, rtol=RTOL.get(res["dtype"], 1e-6), atol=1e-6)
    else:
        np.testing.assert_array_equal(res["value"], exp)


def _rounded(a: Any, dtype: str) -> np.ndarray:
    """``a`` as the backend holds it in ``dtype`` (inputs are rounded before they are summed)."""
    return np.asarray(a, dtype=np.float32 if dtype == "float32" else np.float64).astype(np.float64)


X = [inputs(r) for r in range(WORLD)]


def test_group_attributes(pair: list[dict[str, Any]], engine: str) -> None:
    for rank, r in enumerate(pair):
        g_rank, ws, local, backend, eng, get_rank, get_ws, init = r["group"]
        assert (g_rank, ws, local, backend, get_rank, get_ws, init) == (rank, WORLD, rank, engine, rank, WORLD, True)
        assert eng in ("gloo", "nccl", "jax")
        assert r["after"] == (False, 0, 1)


def test_all_reduce_sum_mean(pair: list[dict[str, Any]], B: Any) -> None:  # noqa: N803
    fd = B.float_dtype.value
    f = [_rounded(x["f"], fd) for x in X]
    s = [_rounded(x["s"], fd) for x in X]
    for r in _got(pair, "all_reduce"):
        _close(r["sum"], f[0] + f[1], "Float", fd)
        _close(r["mean"], (f[0] + f[1]) / 2, "Float", fd)
        _close(r["scalar_mean"], (s[0] + s[1]) / 2, "Float", fd)
        _close(r["int_sum"], X[0]["i"] + X[1]["i"], "Int", B.int_dtype.value)
        _close(r["bool_sum"], X[0]["b"] | X[1]["b"], "Bool", "bool")
        assert r["unchanged"], "all_reduce wrote its input"


def test_broadcast(pair: list[dict[str, Any]], B: Any) -> None:  # noqa: N803
    fd = B.float_dtype.value
    for r in _got(pair, "broadcast"):
        _close(r["f1"], _rounded(X[1]["f"], fd), "Float", fd)
        _close(r["f0"], _rounded(X[0]["f"], fd), "Float", fd)
        _close(r["i1"], X[1]["i"], "Int", B.int_dtype.value)
        _close(r["b1"], X[1]["b"], "Bool", "bool")


def test_all_gather(pair: list[dict[str, Any]], B: Any) -> None:  # noqa: N803
    fd = B.float_dtype.value
    for r in _got(pair, "all_gather"):
        for key, kind in (("f", "Float"), ("i", "Int"), ("b", "Bool"), ("s", "Float")):
            assert len(r[key]) == WORLD
            for src in range(WORLD):
                exp = _rounded(X[src][key], fd) if kind == "Float" else X[src][key]
                _close(r[key][src], exp, kind)


def test_all_reduce_many_buckets(pair: list[dict[str, Any]], B: Any) -> None:  # noqa: N803
    fd = B.float_dtype.value
    floats = [[_rounded(a, fd) for a in x["many"]] for x in X]
    for r in _got(pair, "all_reduce_many"):
        got_f = [g for j, g in enumerate(r["sum"]) if j != 2]
        for g, a, b in zip(got_f, floats[0], floats[1]):
            _close(g, a + b, "Float", fd)
        _close(r["sum"][2], X[0]["many_i"] + X[1]["many_i"], "Int", B.int_dtype.value)
        for g, a, b in zip(r["mean"], floats[0], floats[1]):
            _close(g, (a + b) / 2, "Float", fd)
        # buckets of MANY_BUCKET_BYTES per dtype, in order, a tensor too big for the open bucket starting a new one
        sizes = [int(np.prod(s)) * r["itemsize"] for s in MANY_SHAPES]
        calls, open_bytes = 0, None
        for n in sizes:
            if open_bytes is None or open_bytes + n > MANY_BUCKET_BYTES:
                calls, open_bytes = calls + 1, 0
            open_bytes += n
        calls += 1  # the Int tensor: a bucket of its own dtype
        total = sum(sizes) + len(X[0]["many_i"]) * r["int_itemsize"]
        assert r["stats"] == (calls, total), "one collective per bucket; bytes = the tensors' bytes"
        assert calls - 1 > 1 and max(sizes) > MANY_BUCKET_BYTES, "the case needs several buckets and a big tensor"
        assert r["mean_calls"] == 1, "the default bucket (25 MiB) holds every small tensor"


def test_all_reduce_many_async_equals_all_reduce_many(pair: list[dict[str, Any]], B: Any,  # noqa: N803
                                                       engine: str) -> None:
    fd = B.float_dtype.value
    floats = [[_rounded(a, fd) for a in x["many"]] for x in X]
    for r in _got(pair, "all_reduce_many_async"):
        assert all(r["bitwise"]), "the same buckets give the same sums, bit for bit"
        n = r["buckets"]
        # given last-first: the last bucket fills first but waits for the ones before it (bucket order on
        # every rank); the first tensor completes the first bucket, and then every bucket is launched
        assert r["launched"][-1] == n and r["launched"][0] == 0, r["launched"]
        if engine in ("torch", "numpy"):
            assert r["async"], "torch.distributed (gloo) reduces asynchronously"
        for g, a, b in zip(r["mean"], floats[0], floats[1]):
            _close(g, (a + b) / 2, "Float", fd)


def test_autodiff_tensors(pair: list[dict[str, Any]], B: Any) -> None:  # noqa: N803
    fd = B.float_dtype.value
    ad = [_rounded(x["ad"], fd) for x in X]
    for r in _got(pair, "autodiff"):
        _close(r["mean"], (ad[0] + ad[1]) / 2, "Float", fd)
        assert not r["tracked"] and not r["gathered_tracked"], "collective results are constants"
        _close(r["gathered"], 2 * ad[1], "Float", fd)
        _close(r["grad"], (ad[0] + ad[1]) / 2, "Float", fd)
        _close(r["bcast"], ad[1], "Float", fd)
        assert r["mean"]["device"].startswith("autodiff(")


def test_element_types(pair: list[dict[str, Any]], B: Any) -> None:  # noqa: N803
    got = _got(pair, "dtypes")
    checked = [d for d in EXTRA_DTYPES if ember.DType.parse(d) in type(B).supported_dtypes]
    for r in got:
        assert sorted(r) == sorted(checked)
        for name, res in r.items():
            if "error" in res:
                pytest.fail(f"{name}:\n{res['error']}")
            kind = "Float" if ember.DType.parse(name).is_float else "Int"
            _close(res["sum"], X[0]["small"] + X[1]["small"], kind, name)
            _close(res["bcast"], X[1]["small"], kind, name)
            for src in range(WORLD):
                _close(res["gather"][src], X[src]["small"], kind, name)


def test_barrier(pair: list[dict[str, Any]]) -> None:
    assert _got(pair, "barrier") == [2, 2]


# ---------------------------------------------------------------- one process
@pytest.fixture
def fresh() -> Any:
    """No group before or after the test."""
    dist.destroy_process_group()
    yield
    dist.destroy_process_group()


def test_world_size_one(engine: str, fresh: Any, device: Any) -> None:
    assert (dist.is_initialized(), dist.get_rank(), dist.get_world_size()) == (False, 0, 1)
    assert dist.get_process_group() is None
    g = dist.init_process_group(device, rank=0, world_size=1)
    assert (g.rank, g.world_size, g.backend, dist.get_process_group()) == (0, 1, device.backend.name, g)
    assert dist.is_initialized() and g.timeout == 60.0 and g.device is device
    x = Tensor.from_data([[1.0, 2.0], [3.0, -4.0]], device)
    np.testing.assert_array_equal(dist.all_reduce(x, "mean").to_numpy(), x.to_numpy())
    np.testing.assert_array_equal(dist.broadcast(x).to_numpy(), x.to_numpy())
    (y,) = dist.all_gather(x)
    np.testing.assert_array_equal(y.to_numpy(), x.to_numpy())
    a, b = dist.all_reduce_many([x, x.sum()], "sum", bucket_bytes=1)
    assert a.shape == (2, 2) and b.shape == (1,) and float(b) == 2.0
    dist.barrier()
    n = x.dtype.itemsize  # three collectives of x, then x and its sum in two buckets
    assert g.stats.calls == 6 and g.stats.bytes == 3 * 4 * n + 4 * n + n
    g.stats.reset()
    assert (g.stats.calls, g.stats.bytes) == (0, 0)
    dist.destroy_process_group(g)
    assert not dist.is_initialized() and not g.is_alive
    dist.destroy_process_group()  # nothing initialized: a no-op
    with pytest.raises(CollectiveError, match="destroyed"):
        dist.all_reduce(x, group=g)


def test_errors(engine: str, fresh: Any, device: Any) -> None:
    x = Tensor.from_data([1.0, 2.0], device)
    for call in (lambda: dist.all_reduce(x), lambda: dist.all_reduce_many([x]), lambda: dist.broadcast(x),
                 lambda: dist.all_gather(x), dist.barrier):
        with pytest.raises(CollectiveError, match="init_process_group"):
            call()
    with pytest.raises(CollectiveError, match="master_port|MASTER_PORT"):
        dist.init_process_group(device.backend, rank=0, world_size=2)
    with pytest.raises(CollectiveError, match="rank"):
        dist.init_process_group(device.backend, rank=2, world_size=2, master_port=1)
    with pytest.raises(CollectiveError, match="give both"):
        dist.init_process_group(device.backend, rank=0)
    with pytest.raises(CollectiveError, match="timeout"):
        dist.init_process_group(device.backend, timeout=0)
    with pytest.raises(CollectiveError, match="backend must be"):
        dist.init_process_group(3)  # type: ignore[arg-type]
    assert not dist.is_initialized()
    g = dist.init_process_group(device)
    with pytest.raises(CollectiveError, match="already initialized"):
        dist.init_process_group(device)
    with pytest.raises(CollectiveError, match="'sum', 'mean'"):
        dist.all_reduce(x, "max")
    with pytest.raises(CollectiveError, match="'sum', 'mean'"):
        dist.all_reduce_many([x], "prod")
    with pytest.raises(KindError, match="mean"):
        dist.all_reduce(Tensor.from_data([1, 2], device, ember.Int), "mean")
    for src in (-1, 1, True, 0.0):
        with pytest.raises(CollectiveError, match="src"):
            dist.broadcast(x, src=src)  # type: ignore[arg-type]
    with pytest.raises(CollectiveError, match="bucket_bytes"):
        dist.all_reduce_many([x], bucket_bytes=0)
    with pytest.raises(CollectiveError, match="ember.Tensor"):
        dist.all_reduce(np.ones(2))  # type: ignore[arg-type]
    other = next((b for b in ("numpy", "torch", "jax") if b != device.backend.name and _installed(b)), None)
    if other is not None:
        with pytest.raises(CollectiveError, match="process group runs on backend"):
            dist.all_reduce(Tensor.from_data([1.0], ember.backend(other).device()))
    assert dist.get_process_group() is g  # the errors left the group usable
    np.testing.assert_array_equal(dist.all_reduce(x).to_numpy(), [1.0, 2.0])


def _installed(name: str) -> bool:
    return any(info.name == name and info.status == "ok" for info in ember.backends())


def test_backend_without_collectives(fresh: Any, B: Any) -> None:  # noqa: N803
    class NoCollectives(type(B)):  # type: ignore[misc]
        name = "nocollectives"
        supports_collectives = False
        collectives = Backend.collectives

    nb = NoCollectives()
    with pytest.raises(CollectiveError, match="'nocollectives' has no collective ops") as info:
        dist.init_process_group(nb)
    assert "torch" in str(info.value) and "jax" in str(info.value)
    assert not dist.is_initialized()


def test_an_engine_not_installed_is_a_collective_error(fresh: Any, B: Any) -> None:  # noqa: N803
    try:
        B.collectives()
    except CollectiveError as exc:
        with pytest.raises(CollectiveError) as info:
            dist.init_process_group(B)
        assert str(info.value) == str(exc) and "install" in str(exc)
        assert not dist.is_initialized()
        return
    pytest.skip(f"{B.name}: the engine is installed")


def test_missing_peer_fails_within_the_timeout(engine: str, B: Any) -> None:  # noqa: N803
    """Rank 1 of 2 whose rank 0 never comes fails after about ``timeout`` seconds instead of hanging: a
    CollectiveError, except on jax, whose coordination client ends the process itself (an absl fatal error,
    ``DEADLINE_EXCEEDED``) before Python can see an exception."""
    code = (
        "import sys, ember.distributed as d\n"
        "try:\n"
        f"    d.init_process_group({engine!r}, rank=1, world_size=2, master_port={_free_port()}, timeout=2)\n"
        "except d.CollectiveError as e:\n"
        "    print('CollectiveError', e); sys.exit(3)\n"
    )
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    if type(B.collectives()).__module__.startswith("ember_jax"):
        assert proc.returncode not in (0, 3) and "DEADLINE_EXCEEDED" in proc.stderr, proc.stdout + proc.stderr
    else:
        assert proc.returncode == 3, proc.stdout + proc.stderr
        assert "CollectiveError" in proc.stdout
    assert time.monotonic() - t0 < 45


def test_jax_must_join_before_it_uses_a_device(engine: str, fresh: Any, B: Any) -> None:  # noqa: N803
    """This process has used jax devices already: joining a multi-process run is refused at once, saying why."""
    if not type(B.collectives()).__module__.startswith("ember_jax"):
        pytest.skip("jax's rule")
    Tensor.from_data([1.0], B.device()).to_numpy()  # used here, whichever tests ran before in this process
    with pytest.raises(CollectiveError, match="before it uses any device"):
        dist.init_process_group(B, rank=0, world_size=2, master_port=_free_port(), timeout=2)
    assert not dist.is_initialized()


def test_api_surface() -> None:
    expected = {"ProcessGroup", "CollectiveError", "CollectiveStats", "init_process_group", "destroy_process_group",
                "is_initialized", "get_process_group", "get_rank", "get_world_size", "all_reduce", "all_reduce_many",
                "all_reduce_many_async", "Bucketer", "broadcast", "all_gather", "barrier"}
    assert expected <= set(dist.__all__)
    assert issubclass(CollectiveError, ember.EmberError)
    assert Path(dist.__file__).parent.name == "distributed"
