# conformance on a GPU checks the kernels in full float32 precision, as PyTorch's own test suite does:
# TF32 off for cuDNN convolutions and cuBLAS matmuls (torch's defaults: cudnn on, matmul off)
try:
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
except Exception:  # noqa: BLE001
    pass
