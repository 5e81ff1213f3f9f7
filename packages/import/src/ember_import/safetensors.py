"""safetensors files (Hugging Face) for Ember (Burn's ``burn_import::safetensors``): read them into Ember values
(:func:`read_safetensors`, :func:`read_header`; bfloat16 included), load them into a module
(:class:`SafetensorsFileRecorder`) and write a module's tensors (:func:`save_safetensors`).

The reader is ``_safetensors_read.py`` (the format and the checks are described there), the recorder
``_recorder.py`` and the writer ``_export.py``; this public module gathers them.
"""

from __future__ import annotations

from ._export import save_safetensors
from ._recorder import SafetensorsFileRecorder
from ._safetensors_read import SAFETENSORS_DTYPES, read_header, read_safetensors

__all__ = ["read_safetensors", "read_header", "SAFETENSORS_DTYPES", "SafetensorsFileRecorder", "save_safetensors"]
