"""Whether a step is being captured right now (read by the backend's host reads and ``is_concrete``).

A process-wide depth counter, not a thread-local: ``make_fx`` traces on the calling thread, and the backend's hot
paths read one list item instead of a thread-local attribute. Captures on two threads at once would see each
other's flag; the only effect is that an eager step running during another thread's capture skips its index checks
and refuses host reads (the error says so).
"""

from __future__ import annotations

__all__ = ["ACTIVE", "HOST_READ_GUIDE", "RNN_OPS"]

#: ``ACTIVE[0] > 0`` while ``ember_torch.compile`` captures a step
ACTIVE = [0]

#: whether a captured LSTM is recorded as the custom ops ``ember::lstm`` / ``ember::lstm_backward`` (``_rnn_op.py``);
#: ``False`` while a ``mode="capture"`` step on the CPU is captured (``_compile.py``, ``_kernels_for``)
RNN_OPS = [True]

HOST_READ_GUIDE = (
    "Inside a compiled step the tensors hold no values yet (ember_torch.compile captures the step once as a graph "
    "of aten operations, then replays the graph). Return the tensor from the step and read it after the call, and "
    "write value-dependent logic with tensor ops (mask_where, clamp, max_pair ...) instead of Python if/while on "
    "tensor values; or run this step eagerly (LearnerBuilder.compile(False), or call the function uncompiled)."
)
