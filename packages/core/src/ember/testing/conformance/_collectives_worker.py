"""One rank of the 2-process collectives check (``test_collectives.py``).

``python -m ember.testing.conformance._collectives_worker BACKEND RANK WORLD PORT OUT`` joins the group,
runs every collective on the inputs of :func:`inputs` and pickles what it got to ``OUT``: values as
numpy arrays, plus the kind, dtype, device and tracking of each result and whether the inputs were
left unchanged. The test computes the expectations itself (numpy float64) from :func:`inputs` of
every rank. Each check records its own error instead of stopping the others; rank 1 reads its rank,
world size and rendezvous from torchrun's environment variables, rank 0 gets them as arguments.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from typing import Any

import numpy as np

#: element types checked apart from the backend's defaults, where the backend supports them
EXTRA_DTYPES = ("float16", "bfloat16", "int32", "int16", "uint8")
#: shapes given to all_reduce_many (float tensors) and the bucket size that splits them
MANY_SHAPES = ((3,), (2, 5), (), (7,), (4, 4), (1, 1, 3))
MANY_BUCKET_BYTES = 48


def inputs(rank: int) -> dict[str, Any]:
    """This rank's inputs (numpy), the same on every backend."""
    rng = np.random.default_rng(1234 + rank)
    return {
        "f": rng.normal(size=(3, 4)),
        "s": np.array(rng.normal()),
        "i": np.arange(5) * (rank + 2) - 3,
        "b": np.array([rank == 0, rank == 1, False, True]),
        "many": [rng.normal(size=s) for s in MANY_SHAPES],
        "many_i": np.arange(4) + 10 * rank,
        "small": np.array([1, 2, 3, 5]) * (rank + 1),  # exact in every extra dtype, sums included
        "ad": rng.normal(size=(2, 3)),
    }


def _run(backend: str, rank: int, world: int, port: int) -> dict[str, Any]:
    import ember
    import ember.distributed as dist
    from ember import Tensor
    from ember.autodiff import Autodiff

    out: dict[str, Any] = {}
    if rank == 0:
        group = dist.init_process_group(backend, rank=rank, world_size=world, master_port=port, timeout=30.0)
    else:
        os.environ.update({"RANK": str(rank), "WORLD_SIZE": str(world), "MASTER_ADDR": "127.0.0.1",
                           "MASTER_PORT": str(port), "LOCAL_RANK": str(rank)})
        group = dist.init_process_group(backend, timeout=30.0)
    out["group"] = (group.rank, group.world_size, group.local_rank, group.backend, group.engine,
                    dist.get_rank(), dist.get_world_size(), dist.is_initialized())
    B = ember.backend(backend)  # noqa: N806
    dev = B.device()
    x = inputs(rank)

    def check(name: str, fn: Any) -> None:
        try:
            out[name] = fn()
        except Exception:
            out[name] = {"error": traceback.format_exc()}

    def res(t: Any) -> dict[str, Any]:
        return {"value": np.array(t.to_numpy(), dtype=np.float64 if t.kind is ember.Float else None),
                "kind": str(t.kind), "dtype": t.dtype.value, "device": str(t.device)}

    f = Tensor.from_data(x["f"], dev, ember.Float)
    i = Tensor.from_data(x["i"], dev, ember.Int)
    b = Tensor.from_data(x["b"], dev, ember.Bool)
    s = Tensor.from_data(x["s"], dev, ember.Float)

    def reduce_checks() -> dict[str, Any]:
        before = f.to_numpy().copy()
        r: dict[str, Any] = {"sum": res(dist.all_reduce(f)), "mean": res(dist.all_reduce(f, "mean")),
             "int_sum": res(dist.all_reduce(i)), "bool_sum": res(dist.all_reduce(b)),
             "scalar_mean": res(dist.all_reduce(s, op="mean"))}
        r["unchanged"] = bool(np.array_equal(before, f.to_numpy()))
        return r

    check("all_reduce", reduce_checks)
    check("broadcast", lambda: {"f1": res(dist.broadcast(f, src=1)), "f0": res(dist.broadcast(f)),
                                "i1": res(dist.broadcast(i, 1)), "b1": res(dist.broadcast(b, 1))})
    check("all_gather", lambda: {"f": [res(t) for t in dist.all_gather(f)],
                                 "i": [res(t) for t in dist.all_gather(i)],
                                 "b": [res(t) for t in dist.all_gather(b)],
                                 "s": [res(t) for t in dist.all_gather(s)]})

    def many() -> dict[str, Any]:
        ts = [Tensor.from_data(a, dev, ember.Float) for a in x["many"]]
        ti = Tensor.from_data(x["many_i"], dev, ember.Int)
        ts.insert(2, ti)
        group.stats.reset()
        got = dist.all_reduce_many(ts, "sum", bucket_bytes=MANY_BUCKET_BYTES)
        stats = (group.stats.calls, group.stats.bytes)
        group.stats.reset()
        mean = dist.all_reduce_many([t for t in ts if t.kind is ember.Float], "mean")
        return {"sum": [res(t) for t in got], "mean": [res(t) for t in mean], "stats": stats,
                "mean_calls": group.stats.calls, "itemsize": B.float_dtype.itemsize,
                "int_itemsize": B.int_dtype.itemsize}

    check("all_reduce_many", many)

    def many_async() -> dict[str, Any]:
        # the overlapped form: a Bucketer given the tensors out of order (the last first, as a backward pass gives
        # gradients) launches each bucket once it is full, in bucket order; the same buckets as all_reduce_many
        ts = [Tensor.from_data(a, dev, ember.Float) for a in x["many"]]
        ts.insert(2, Tensor.from_data(x["many_i"], dev, ember.Int))
        ref = dist.all_reduce_many(ts, "sum", bucket_bytes=MANY_BUCKET_BYTES)
        bk = dist.Bucketer(ts, "sum", bucket_bytes=MANY_BUCKET_BYTES)
        launched = []
        for k in reversed(range(len(ts))):
            bk.ready(k, ts[k])
            launched.append(bk.launched)
        got = bk.wait()
        floats = [t for t in ts if t.kind is ember.Float]
        means = dist.all_reduce_many_async(floats, "mean", bucket_bytes=MANY_BUCKET_BYTES).wait()
        return {"bitwise": [bool(np.array_equal(a.to_numpy(), b.to_numpy())) for a, b in zip(ref, got)],
                "launched": launched, "buckets": len(bk.buckets), "async": bool(group._collectives.supports_async),
                "mean": [res(t) for t in means]}

    check("all_reduce_many_async", many_async)

    def autodiff() -> dict[str, Any]:
        ad = Autodiff(B).device()
        a = Tensor.from_data(x["ad"], ad, ember.Float).require_grad()
        r = dist.all_reduce(a, "mean")
        (g,) = dist.all_gather(a.mul_scalar(2.0))[1:]
        loss = a.mul(r).sum()  # r is a constant: d loss / d a = r
        grad = a.grad(loss.backward())
        return {"mean": res(r), "tracked": r.is_require_grad(), "gathered": res(g), "gathered_tracked":
                g.is_require_grad(), "grad": res(grad), "bcast": res(dist.broadcast(a, 1))}

    check("autodiff", autodiff)

    def dtypes() -> dict[str, Any]:
        got: dict[str, Any] = {}
        for name in EXTRA_DTYPES:
            dt = ember.DType.parse(name)
            if dt not in type(B).supported_dtypes:
                continue
            kind = ember.Float if dt.is_float else ember.Int
            t = Tensor.from_data(x["small"], dev, kind).cast(dt)
            try:
                got[name] = {"sum": res(dist.all_reduce(t)), "gather": [res(g) for g in dist.all_gather(t)],
                             "bcast": res(dist.broadcast(t, 1))}
            except Exception:
                got[name] = {"error": traceback.format_exc()}
        return got

    check("dtypes", dtypes)

    def barrier() -> int:
        before = group.stats.calls
        dist.barrier()
        dist.barrier(group)
        return group.stats.calls - before

    check("barrier", barrier)
    dist.destroy_process_group()
    out["after"] = (dist.is_initialized(), dist.get_rank(), dist.get_world_size())
    return out


def main(argv: list[str] | None = None) -> int:
    backend, rank, world, port, path = (argv if argv is not None else sys.argv[1:])
    try:
        out = _run(backend, int(rank), int(world), int(port))
    except Exception:
        out = {"fatal": traceback.format_exc()}
    with open(path, "wb") as fh:
        pickle.dump(out, fh)
    return 0


if __name__ == "__main__":
    sys.exit(main())
