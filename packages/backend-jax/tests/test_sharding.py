"""``ember_jax.replicate`` / ``shard_batch``: a compiled step over 2 CPU devices of one process (the Learner's
``MultiDevice`` strategy) is ONE XLA program with the gradient all-reduce GSPMD inserts, and trains like the
same step on one device. The device count is fixed when jax starts (``XLA_FLAGS``), so the cases run in a fresh
interpreter."""

from __future__ import annotations

import json
from pathlib import Path

from _subproc import run

FLAGS = "--xla_force_host_platform_device_count=2"


def test_sharded_steps_equal_single_device_steps_in_one_program(tmp_path: Path) -> None:
    dump = tmp_path / "hlo"
    out = run(
        f"""
        import json, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import numpy as np
        import ember, ember_jax
        from test_jit import Batch, lr_tensor, mlp, params_np, train_step, weights, xor_batch
        from ember.optim import AdamConfig

        B = ember.backend("jax")
        devices = B.devices()
        assert len(devices) == 2, devices
        ws, batch, lr = weights(), xor_batch(n=32), lr_tensor(0.05)

        def train(model, optim, batch, lr, steps=4):
            step = ember_jax.jit(train_step)
            losses = []
            for _ in range(steps):
                model, loss = step(model, optim, batch, lr)
                losses.append(loss.into_scalar())
            return model, optim, losses, step

        B.seed(7)
        m = mlp(ws, dropout=0.25)
        m1, o1, l1, _ = train(m, AdamConfig().init().init_states(m), batch, lr)
        B.seed(7)
        m0 = mlp(ws, dropout=0.25)
        o0 = AdamConfig().init().init_states(m0)  # zero moments, the step count a Python int (kept as it is)
        model, optim, lr2 = ember_jax.replicate((m0, o0, lr), devices)
        assert optim is not o0 and optim.state(m0.l1.weight.id)["time"] == 0
        x, y = ember_jax.shard_batch((batch.x, batch.y), devices)
        assert len(x.primitive.p.sharding.device_set) == 2 and x.shape == (32, 2) and x.device is batch.x.device
        m2, o2, l2, step2 = train(model, optim, Batch(x, y), lr2)

        for a, b in zip(params_np(m1), params_np(m2)):
            np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(l2, l1, rtol=1e-5)
        # the new parameters and optimizer state stay replicated on both devices; the ids are the model's
        assert [p.id for p in m2.params()] == [p.id for p in model.params()] == [p.id for p in m0.params()]
        for p in m2.params():
            sh = p.val().primitive.p.sharding
            assert len(sh.device_set) == 2 and sh.is_fully_replicated
        import jax
        assert all(len(a.sharding.device_set) == 2 for a in jax.tree_util.tree_leaves(o2))
        # after a step Adam's parameters share one step-counter tensor: replicated, it stays one tensor
        ids = [p.id for p in m1.params()]
        o3 = ember_jax.replicate(o1, devices)
        times = [o3._states[i]["time"] for i in ids]
        assert len({{id(t) for t in times}}) == 1 and len({{id(o1._states[i]["time"]) for i in ids}}) == 1
        assert len(times[0].primitive.sharding.device_set) == 2 and times[0].to_numpy().tolist() == [4]
        print(json.dumps({{"traces": step2.trace_count}}))
        """,
        XLA_FLAGS=f"{FLAGS} --xla_dump_to={dump} --xla_dump_hlo_as_text --xla_dump_hlo_module_re=jit_traced",
    )
    assert json.loads(out.strip().splitlines()[-1]) == {"traces": 1}
    texts = [f.read_text() for f in sorted(dump.glob("*jit_traced.cpu_after_optimizations.txt"))]
    # the step compiled for one device, then the same trace as one program partitioned over both devices, in
    # which GSPMD all-reduces the gradients
    assert len(texts) == 2, sorted(p.name for p in dump.iterdir())[:20]
    partitioned = [t for t in texts if "num_partitions=2" in t]
    assert len(partitioned) == 1
    assert all("all-reduce(" in t for t in partitioned)
    assert not any("all-reduce(" in t for t in texts if t not in partitioned)


def test_placement_errors() -> None:
    run(
        f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import pytest
        import ember, ember_jax
        from ember import BackendError, ShapeError, Tensor
        from test_jit import Batch, lr_tensor, mlp, train_step, weights, xor_batch
        from ember.optim import AdamConfig

        devices = ember.backend("jax").devices()
        with pytest.raises(ShapeError, match="multiple of the 2 devices"):
            ember_jax.shard_batch(xor_batch(n=31).x, devices)
        with pytest.raises(ShapeError, match="multiple"):
            ember_jax.shard_batch(Tensor.from_data(1.0, devices[0]), devices)
        with pytest.raises(BackendError, match="distinct jax devices"):
            ember_jax.replicate(lr_tensor(0.1), [devices[0], devices[0]])
        with pytest.raises(BackendError, match="expected jax devices"):
            ember_jax.mesh([ember.backend("numpy").device()])
        assert ember_jax.mesh(devices) is ember_jax.mesh(list(devices))
        batch = xor_batch()
        model, optim = ember_jax.replicate((mlp(weights()), AdamConfig().init()), devices)
        sharded = Batch(*ember_jax.shard_batch((batch.x, batch.y), devices))
        with pytest.raises(BackendError, match="ember_jax.replicate"):  # a learning rate left on one device
            ember_jax.jit(train_step)(model, optim, sharded, lr_tensor(0.1))
        """,
        XLA_FLAGS=FLAGS,
    )


def test_process_mesh_in_one_process_and_to_local() -> None:
    """``process_mesh`` / ``to_local`` (the multi-process data parallelism of ``DistributedDataParallel``) in a
    single process: the mesh of this process's device; arrays this process holds whole come back unchanged, and
    dataclasses are walked (a step's item)."""
    run(
        f"""
        import sys, dataclasses
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        import jax, numpy as np
        import ember, ember_jax
        from ember import Tensor
        from test_jit import Batch, lr_tensor, mlp, train_step, weights, xor_batch
        from ember.optim import AdamConfig

        devices = ember.backend("jax").devices()
        mesh = ember_jax.process_mesh(devices[0])
        assert mesh.size == 1 and list(mesh.devices.flat) == [devices[0].handle]
        assert ember_jax.process_mesh(devices[0]) is mesh and ember_jax.process_mesh().size == 1
        batch = xor_batch(n=8)
        x = ember_jax.shard_batch(batch.x, mesh)
        assert x.inner().primitive.sharding.device_set == {{devices[0].handle}} and x.shape == (8, 2)
        b2 = ember_jax.to_local(Batch(x, batch.y))
        assert isinstance(b2, Batch) and b2.y.shape == batch.y.shape
        assert np.array_equal(b2.x.to_numpy(), batch.x.to_numpy())
        m = mlp(weights())
        model, optim, lr = ember_jax.replicate((m, AdamConfig().init().init_states(m), lr_tensor(0.05)), mesh)
        model, loss = ember_jax.jit(train_step)(model, optim, Batch(x, ember_jax.shard_batch(batch.y, mesh)), lr)
        local = ember_jax.to_local((model, loss))
        assert np.array_equal(local[1].to_numpy(), loss.to_numpy()) and np.isfinite(loss.to_numpy()).all()
        """,
        XLA_FLAGS=FLAGS,
    )
