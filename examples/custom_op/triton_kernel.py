"""A Triton kernel for ``matmul_add_relu`` on CUDA tensors (the Book's "Custom Kernel" chapter; Burn writes it in
CubeCL). Imported only when a CUDA tensor reaches the torch kernel; without Triton, ``TRITON`` is False and the
torch kernel uses ``addmm`` + ``relu``."""

from __future__ import annotations

from typing import Any

try:  # never required
    import triton
    import triton.language as tl

    TRITON = True
except ImportError:  # pragma: no cover - depends on the machine
    TRITON = False

if TRITON:

    @triton.jit
    def _kernel(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,  # type: ignore[no-untyped-def]
                BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pid_m = tl.program_id(0)
        pid_n = tl.program_id(1)
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            a = tl.load(a_ptr + rm[:, None] * sam + (k0 + rk)[None, :] * sak,
                        mask=(rm[:, None] < M) & ((k0 + rk)[None, :] < K), other=0.0)
            b = tl.load(b_ptr + (k0 + rk)[:, None] * sbk + rn[None, :] * sbn,
                        mask=((k0 + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
            acc += tl.dot(a, b)
        bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0)
        acc = tl.maximum(acc + bias[None, :], 0.0)
        tl.store(c_ptr + rm[:, None] * scm + rn[None, :] * scn, acc.to(c_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


def triton_matmul_add_relu(lhs: Any, rhs: Any, bias: Any) -> Any:
    """``relu(lhs @ rhs + bias)`` with the Triton kernel (CUDA tensors, ``bias`` of ``n`` elements)."""
    import torch

    m, k = lhs.shape
    n = rhs.shape[1]
    out = torch.empty((m, n), device=lhs.device, dtype=lhs.dtype)
    bias = bias.reshape(-1).contiguous()
    grid = (triton.cdiv(m, 32), triton.cdiv(n, 64))
    _kernel[grid](lhs, rhs, bias, out, m, n, k, lhs.stride(0), lhs.stride(1), rhs.stride(0), rhs.stride(1),
                  out.stride(0), out.stride(1), BM=32, BN=64, BK=32)
    return out
