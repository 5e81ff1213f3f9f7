"""Element types: float32/float16/bfloat16/float64 and int32/int64, the x64 switch, weak typing."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import ember
from _subproc import run
from ember import DType, DTypeError, Int, Tensor


def test_defaults_without_x64_are_float32_and_int32():
    out = run(
        """
        import jax, ember
        B = ember.backend("jax")
        print(B.float_dtype, B.int_dtype, jax.config.jax_enable_x64)
        from ember import Tensor
        r = Tensor.arange(0, 5, B.device())
        print(r.dtype, r.primitive.dtype, Tensor.from_data([[1.0, 3.0]], B.device()).argmax(1).dtype)
        """
    )
    assert out.split() == ["float32", "int32", "False", "int32", "int32", "int32"]


def test_asking_for_64_bits_enables_x64_process_wide():
    out = run(
        """
        import jax, ember
        from ember import Tensor
        B32 = ember.backend("jax")
        B64 = ember.backend("jax", float_dtype="float64")
        print(jax.config.jax_enable_x64, B32.int_dtype, B64.int_dtype)
        t = Tensor.from_data([0.1], B64.device())
        print(t.primitive.dtype, repr(t.to_data().to_numpy()[0]))
        # the float32 backend created before keeps its dtypes
        print((Tensor.from_data([1.0], B32.device()) * 0.5).primitive.dtype)
        """
    )
    x64, i32, i64, f64, value, f32 = out.split()
    assert (x64, i32, i64, f64, f32) == ("True", "int32", "int64", "float64", "float32")
    assert value == "np.float64(0.1)"


def test_int64_option_enables_x64():
    out = run(
        """
        import jax, ember
        from ember import Tensor
        B = ember.backend("jax", int_dtype="int64")
        t = Tensor.from_data([2**40], B.device())
        print(jax.config.jax_enable_x64, t.primitive.dtype, t.to_data().to_numpy()[0])
        """
    )
    assert out.split() == ["True", "int64", str(2**40)]


def test_int32_mean_without_x64_does_not_overflow():
    out = run(
        """
        import ember, numpy as np
        from ember import Tensor
        dev = ember.backend("jax").device()
        v = np.array([2**31 - 1, 2**31 - 3, -7, 5], dtype=np.int32)
        t = Tensor.from_data(v, dev)
        print(t.mean().to_data().to_numpy()[0], t.reshape([2, 2]).mean_dim(1).to_data().to_numpy().ravel().tolist())
        """
    )
    exact = (2**31 - 1 + 2**31 - 3 - 7 + 5) // 4
    assert out.split()[0] == str(exact)
    assert out.split(maxsplit=1)[1].strip() == str([2**31 - 2, -1])


@pytest.mark.parametrize("bad", ["int32", "complex64", "float8"])
def test_bad_dtype_options_are_dtype_errors(bad):
    with pytest.raises(DTypeError):
        ember.backend("jax", float_dtype=bad)


def test_float_int_dtype_option_rejected():
    with pytest.raises(DTypeError, match="int_dtype"):
        ember.backend("jax", int_dtype="float32")


@pytest.mark.parametrize("float_dtype", ["float32", "float16", "bfloat16", "float64"])
def test_scalar_operands_keep_the_tensor_dtype(float_dtype):
    # jax's weak typing: a Python scalar never promotes the tensor
    dev = ember.backend("jax", float_dtype=float_dtype).device()
    t = Tensor.from_data([1.0, 2.0], dev)
    for r in (t + 1.5, t * 3, 2.0 - t, t / 7.0, t.powf_scalar(2.0), t.clamp(0.0, 1.5), t.remainder_scalar(0.7)):
        assert r.dtype is DType.parse(float_dtype)
        assert r.primitive.dtype == t.primitive.dtype


def test_int32_scalar_ops_stay_int32():
    dev = ember.backend("jax", int_dtype="int32").device()
    t = Tensor.from_data([7, -7], dev, Int)
    for r in (t + 1, t * 3, t // 2, t % 3, t.bitwise_left_shift_scalar(1)):
        assert r.primitive.dtype == np.int32


def test_bfloat16_rounds_to_nearest_even():
    dev = ember.backend("jax", float_dtype="bfloat16").device()
    # bfloat16 keeps 7 mantissa bits: 1 + 2**-8 is a tie (rounds to 1), 1 + 3 * 2**-8 a tie that
    # rounds up to the even neighbour 1 + 2**-6, 1 + 2**-8 + 2**-12 is above the tie
    t = Tensor.from_data(np.array([1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-12], dtype=np.float32), dev)
    assert t.primitive.dtype == jax.numpy.bfloat16
    assert t.to_data().to_numpy().tolist() == [1.0, 1 + 2**-6, 1 + 2**-7]


def test_half_sums_accumulate_in_float32():
    dev = ember.backend("jax", float_dtype="float16").device()
    t = Tensor.ones([4096], dev)
    # a float16 running sum gets stuck at 2048 (2048 + 1 rounds back to 2048)
    assert t.sum().to_data().to_numpy()[0] == 4096
    assert t.cumsum(0).to_data().to_numpy()[-1] == 4096
    assert t.mean().to_data().to_numpy()[0] == 1.0


def test_casts_truncate_and_support_narrow_ints():
    dev = ember.backend("jax").device()
    t = Tensor.from_data([-1.7, 2.9, 0.5], dev)
    assert t.int().to_data().to_numpy().tolist() == [-1, 2, 0]
    assert t.int().cast(DType.INT8).to_data().to_numpy().dtype == np.int8
    assert t.cast(DType.FLOAT16).primitive.dtype == np.float16


def test_x64_is_on_in_this_process_only_if_asked():
    # documentation of the switch: the state is readable through jax's config
    assert isinstance(jax.config.jax_enable_x64, bool)
