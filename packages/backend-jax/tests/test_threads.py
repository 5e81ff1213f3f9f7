"""``threads`` on the jax backend: ``threads=1`` adds ``--xla_cpu_multi_thread_eigen=false`` to ``XLA_FLAGS``, which
XLA reads once when jax starts, so it is accepted before that (or when the flag is already set) and refused after;
XLA has no other count. Each case that depends on jax's start runs in a fresh interpreter."""

from __future__ import annotations

import pytest

import ember
from _subproc import run
from ember import ConfigError
from ember_jax import JaxBackend
from ember_jax._threads import _single_threaded


def test_threads_1_before_jax_starts_sets_xlas_flag_and_jax_runs() -> None:
    out = run("""
        import os
        import ember
        from ember import Tensor
        b = ember.backend("jax", threads=1)
        print(os.environ["XLA_FLAGS"])
        print(b.options["threads"], Tensor.from_data([[1.0, 2.0]], b.device()).matmul(
            Tensor.from_data([[3.0], [4.0]], b.device())).tolist())
    """, XLA_FLAGS="--xla_cpu_enable_fast_math=false")
    flags, result = out.splitlines()
    assert flags == "--xla_cpu_enable_fast_math=false --xla_cpu_multi_thread_eigen=false"  # the user's flags kept
    assert result == "1 [[11.0]]"


def test_threads_1_after_jax_started_is_refused_unless_the_flag_is_set() -> None:
    out = run("""
        import jax
        import ember
        from ember import ConfigError
        jax.devices()
        try:
            ember.backend("jax", threads=1)
        except ConfigError as exc:
            print(exc)
    """)
    assert "threads=1 came after jax started its backends" in out
    assert "XLA_FLAGS=--xla_cpu_multi_thread_eigen=false" in out  # what to do instead
    out = run("""
        import jax
        import ember
        jax.devices()
        print(ember.backend("jax", threads=1).options["threads"])
    """, XLA_FLAGS="--xla_cpu_multi_thread_eigen=false")
    assert out.strip() == "1"


@pytest.mark.parametrize("n", [2, 16])
def test_another_count_is_refused_naming_what_xla_offers(n: int) -> None:
    with pytest.raises(ConfigError, match=rf"threads={n} cannot be set.*threads=1.*threads=None"):
        ember.backend("jax", threads=n)


@pytest.mark.parametrize("bad", [0, 1.0, "1"])
def test_threads_must_be_a_positive_int(bad: object) -> None:
    with pytest.raises(ConfigError, match=rf"jax backend: threads must be a positive int.*got {bad!r}"):
        JaxBackend(threads=bad)  # type: ignore[arg-type]


def test_the_flag_is_read_as_xla_reads_it() -> None:
    assert _single_threaded("--xla_cpu_multi_thread_eigen=false")
    assert not _single_threaded("--xla_cpu_multi_thread_eigen=true")
    assert not _single_threaded("")
    assert _single_threaded("--a=1 --xla_cpu_multi_thread_eigen=true --xla_cpu_multi_thread_eigen=false")
