"""The safe unpickler: the only globals a PyTorch ``state_dict`` needs, and nothing else.

A ``.pt`` file is a pickle, and unpickling a hostile pickle runs arbitrary code (``os.system``,
``builtins.eval``, ``subprocess.Popen`` reached through ``GLOBAL``/``STACK_GLOBAL`` + ``REDUCE``).
:class:`SafeUnpickler` overrides ``find_class`` so that every global resolves through an explicit table to an
inert stand-in defined by Ember (never the real torch object, and torch is never imported); any other name
raises :class:`ModelImportError` naming it, before anything is called. ``persistent_load`` hands storage
references to the format reader (zip or legacy).

The allow-list (compare ``torch._weights_only_unpickler``):

- ``torch._utils._rebuild_tensor_v2`` / ``_rebuild_tensor_v3``: a tensor view (checked by :func:`make_view`);
- ``torch._utils._rebuild_parameter`` / ``_rebuild_parameter_with_state``: ``nn.Parameter`` (the data kept);
- ``torch._tensor._rebuild_from_type_v2`` with ``torch.Tensor`` / ``torch.nn.parameter.Parameter``;
- ``torch.<X>Storage``, ``torch.storage.UntypedStorage`` (markers) and ``torch.<dtype>`` (markers);
- ``torch._utils._rebuild_qtensor`` with ``torch.<qscheme>`` markers: a quantized tensor's integers, scales and
  zero points as a plain dict (``_pt_quantized.py``);
- ``collections.OrderedDict``, ``builtins.set`` / ``frozenset`` / ``complex`` / ``bytearray`` (from bytes only),
  ``torch.Size`` (a tuple), ``torch.device`` (a string), ``_codecs.encode`` (latin-1 only: how protocol 2
  writes ``bytes``).
"""

from __future__ import annotations

import _compat_pickle
import codecs
import io
import pickle
import pickletools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, BinaryIO

from ember import DType

from ._errors import ModelImportError
from ._frozen import Frozen
from ._limits import Budget, summary
from ._pt_quantized import QSCHEMES, rebuild_qtensor
from ._torch_types import STORAGE_TYPES, TORCH_DTYPES, TorchDType
from ._views import PendingTensor, make_view

__all__ = ["SafeUnpickler", "TensorType", "safe_load"]


class TensorType(Frozen):
    """Marker for ``torch.Tensor`` / ``torch.nn.Parameter`` used as a type argument; never callable."""

    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "name", name)

    def __repr__(self) -> str:
        return self.name


_TENSOR = TensorType("torch.Tensor")
_PARAMETER = TensorType("torch.nn.Parameter")

_PICKLE_ERRORS = (
    pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
    OverflowError, RecursionError, UnicodeDecodeError, MemoryError,
)


class _Allowed(Frozen):
    """An allowed callable as the pickle sees it: callable, but its attributes cannot be changed (``BUILD``)."""

    __slots__ = ("_fn", "_name")
    _fn: Callable[..., Any]
    _name: str

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        object.__setattr__(self, "_fn", fn)
        object.__setattr__(self, "_name", name)

    def __call__(self, *args: Any) -> Any:
        return self._fn(*args)

    def __repr__(self) -> str:
        return self._name


def _size(items: Any = ()) -> tuple[int, ...]:
    if not isinstance(items, (tuple, list)) or any(isinstance(i, bool) or not isinstance(i, int) for i in items):
        raise ModelImportError(f"torch.Size({summary(items)}): expected a tuple of ints.")
    return tuple(items)


def _device(spec: Any, index: Any = None) -> str:
    if not isinstance(spec, str) or (index is not None and not isinstance(index, int)):
        raise ModelImportError(f"torch.device({summary(spec)}, {summary(index)}): expected a device string.")
    return spec if index is None else f"{spec}:{index}"


def _codecs_encode(obj: Any, encoding: Any = "utf-8", errors: Any = "strict") -> bytes:
    if not isinstance(obj, str) or encoding not in ("latin1", "latin-1") or errors != "strict":
        raise ModelImportError(
            f"_codecs.encode({type(obj).__name__}, {summary(encoding)}): only a latin-1 string (protocol 2 bytes) is "
            "allowed."
        )
    return codecs.encode(obj, "latin1")


def _bytearray(value: Any = b"", encoding: Any = None) -> bytearray:
    if isinstance(value, str) and encoding in ("latin1", "latin-1"):
        return bytearray(value, "latin1")
    if isinstance(value, (bytes, bytearray)) and encoding is None:
        return bytearray(value)
    raise ModelImportError(f"bytearray({type(value).__name__}): only bytes or a latin-1 string are allowed.")


def _complex(real: Any = 0.0, imag: Any = 0.0) -> complex:
    if not all(isinstance(v, (int, float)) for v in (real, imag)):
        raise ModelImportError("complex(...): only numbers are allowed.")
    return complex(real, imag)


def _rebuild_parameter(data: Any, requires_grad: Any = True, backward_hooks: Any = None, state: Any = None) -> Any:
    if not isinstance(data, PendingTensor):
        raise ModelImportError(f"torch.nn.Parameter rebuilt from a {type(data).__name__}, expected a tensor.")
    return data


class SafeUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` resolving globals only through Ember's allow-list (see the module docstring).

    Args:
        file: a binary file positioned at the pickle.
        origin: the file's name, for messages.
        persistent_load: resolves a persistent id (a storage reference) or raises ModelImportError; None
            refuses every persistent id.
        max_tensor_bytes: the largest tensor :func:`make_view` accepts.
        budget: counts the bytes of the tensors declared (see :mod:`ember_import._limits`); None: a fresh
            one of ``max_tensor_bytes``.

    Raises (``load``):
        ModelImportError: a global outside the allow-list (named), a malformed or truncated pickle, a bad
            tensor declaration.
    """

    def __init__(self, file: BinaryIO, *, origin: str, persistent_load: Callable[[Any], Any] | None = None,
                 max_tensor_bytes: int = 1 << 30, budget: Budget | None = None) -> None:
        super().__init__(file)
        self._file = file
        self._origin = origin
        self._persistent = persistent_load
        self._max_bytes = max_tensor_bytes
        self._budget = budget if budget is not None else Budget(max_tensor_bytes, origin)
        self._views: dict[tuple[Any, ...], PendingTensor] = {}
        v2 = _Allowed(self._rebuild_v2, "torch._utils._rebuild_tensor_v2")
        v3 = _Allowed(self._rebuild_v3, "torch._utils._rebuild_tensor_v3")
        self._rebuilders: tuple[_Allowed, ...] = (v2, v3)
        from_type = _Allowed(self._rebuild_from_type_v2, "torch._tensor._rebuild_from_type_v2")
        param = _Allowed(_rebuild_parameter, "torch._utils._rebuild_parameter")
        allowed: dict[tuple[str, str], Any] = {
            ("torch._utils", "_rebuild_tensor_v2"): v2,
            ("torch._utils", "_rebuild_tensor_v3"): v3,
            ("torch._utils", "_rebuild_parameter"): param,
            ("torch._utils", "_rebuild_parameter_with_state"): param,
            ("torch._tensor", "_rebuild_from_type_v2"): from_type,
            ("torch.tensor", "_rebuild_from_type_v2"): from_type,
            ("torch", "Tensor"): _TENSOR,
            ("torch._tensor", "Tensor"): _TENSOR,
            ("torch.nn.parameter", "Parameter"): _PARAMETER,
            ("torch.nn", "Parameter"): _PARAMETER,
            ("collections", "OrderedDict"): OrderedDict,  # immutable C types: BUILD cannot modify them
            ("builtins", "set"): set,
            ("builtins", "frozenset"): frozenset,
            ("builtins", "complex"): _Allowed(_complex, "complex"),
            ("builtins", "bytearray"): _Allowed(_bytearray, "bytearray"),
            ("torch", "Size"): _Allowed(_size, "torch.Size"),
            ("torch", "device"): _Allowed(_device, "torch.device"),
            ("_codecs", "encode"): _Allowed(_codecs_encode, "_codecs.encode"),
        }
        allowed[("torch._utils", "_rebuild_qtensor")] = _Allowed(
            lambda *a: rebuild_qtensor(self._rebuild_v2, self._origin, *a), "torch._utils._rebuild_qtensor")
        allowed.update(STORAGE_TYPES)
        allowed.update(TORCH_DTYPES)
        allowed.update(QSCHEMES)
        self._allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        key = (module, name)
        if key in _compat_pickle.NAME_MAPPING:  # Python 2 names written by protocol < 3
            key = _compat_pickle.NAME_MAPPING[key]
        elif module in _compat_pickle.IMPORT_MAPPING:
            key = (_compat_pickle.IMPORT_MAPPING[module], name)
        try:
            return self._allowed[key]
        except (KeyError, TypeError):
            pass
        hint = ""
        if module.startswith("__torch__") or module.startswith("torch.jit"):
            hint = " The file looks like a TorchScript archive; save `model.state_dict()` instead."
        elif name in ("Module",) or module.startswith("torch.nn.modules"):
            hint = " The file pickles a whole nn.Module; save `model.state_dict()` instead."
        raise ModelImportError(
            f"{self._origin}: the pickle asks for the global '{module}.{name}', which is not on Ember's allow-list "
            f"of what a state_dict needs (tensors, Parameters, storages, dtypes, OrderedDict, plain Python values). "
            f"Ember refuses it and runs no code from the file.{hint} If you trust the file, load it with "
            "torch.load and re-save only the tensors (torch.save(model.state_dict(), ...) or safetensors)."
        )

    def load(self) -> Any:
        """Check the pickle's opcodes (:func:`scan_pickle`), then unpickle it."""
        start = self._file.tell()
        scan_pickle(self._file, self._origin)
        self._file.seek(start)
        return super().load()

    def close(self) -> None:
        """Drop the references to the reader's state: the pickle memo holds the allowed callables, which refer
        back to this unpickler; without this the loaded buffers would wait for the cyclic garbage collector."""
        self.memo = {}
        self._allowed = {}
        self._rebuilders = ()
        self._persistent = None
        self._views = {}

    def persistent_load(self, pid: Any) -> Any:
        if self._persistent is None:
            raise ModelImportError(
                f"{self._origin}: unexpected persistent id {summary(pid)} in this part of the file."
            )
        return self._persistent(pid)

    # --- tensor rebuilders (bound to this file's origin and limits) ---
    def _rebuild_v2(self, storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any = False,
                    backward_hooks: Any = None, metadata: Any = None) -> PendingTensor:
        return self._view(storage, storage_offset, size, stride, None)

    def _rebuild_v3(self, storage: Any, storage_offset: Any, size: Any, stride: Any, requires_grad: Any,
                    backward_hooks: Any, dtype: Any, metadata: Any = None) -> PendingTensor:
        if not isinstance(dtype, TorchDType):
            raise ModelImportError(
                f"{self._origin}: _rebuild_tensor_v3 got dtype {summary(dtype)}, expected a torch dtype."
            )
        if dtype.dtype is None:
            raise ModelImportError(
                f"{self._origin}: a tensor has element type {dtype}, which Ember does not support (supported: "
                f"{', '.join(d.value for d in DType)}). Convert it in PyTorch before saving, e.g. t.to(torch.int64)."
            )
        return self._view(storage, storage_offset, size, stride, dtype.dtype)

    def _view(self, storage: Any, offset: Any, size: Any, stride: Any, dtype: DType | None) -> PendingTensor:
        """One checked view per distinct declaration (the same storage, offset, size, stride and dtype declared
        again, under another key, is the same tensor: materialised, converted and counted once)."""
        t = make_view(storage, offset, size, stride, dtype, origin=self._origin, max_bytes=self._max_bytes)
        key = (id(t.storage), t.offset, t.shape, t.stride, t.dtype)
        seen = self._views.get(key)
        if seen is not None:
            return seen
        self._budget.take(t.nbytes, f"a tensor of size {list(t.shape)} ({t.dtype})")
        self._views[key] = t
        return t

    def _rebuild_from_type_v2(self, func: Any, new_type: Any, args: Any, state: Any = None) -> Any:
        if not any(func is f for f in self._rebuilders) or not isinstance(new_type, TensorType):
            raise ModelImportError(
                f"{self._origin}: _rebuild_from_type_v2({summary(func)}, {summary(new_type)}) is not a plain tensor or "
                "Parameter."
            )
        if not isinstance(args, tuple):
            raise ModelImportError(f"{self._origin}: _rebuild_from_type_v2 got malformed arguments.")
        return func(*args)


#: opcodes that store into the memo with an explicit index
_PUT_OPS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_TUPLE_OPS = frozenset({"TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_TUPLE"})


def _effect(op: pickletools.OpcodeInfo) -> tuple[bool, int, int, bool]:
    before = [s.name for s in op.stack_before]
    slice_ = "stackslice" in before
    return slice_, before.index("mark") if slice_ else len(before), len(op.stack_after), op.name in _TUPLE_OPS


#: opcode name -> (pops to a MARK, further items popped, items pushed, builds a tuple)
_EFFECTS = {op.name: _effect(op) for op in pickletools.opcodes}


class _Capped:
    """A read-only view of ``f`` that never asks for more bytes than the file has left (a forged length in a
    ``BINBYTES8`` must not make a buffered read allocate it)."""

    __slots__ = ("_f", "end")

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        here = f.tell()
        f.seek(0, 2)
        self.end = f.tell()
        f.seek(here)

    def read(self, n: int = -1) -> bytes:
        left = self.end - self._f.tell()
        return self._f.read(left if n is None or n < 0 else min(n, left))

    def readline(self) -> bytes:
        return self._f.readline()

    def tell(self) -> int:
        return self._f.tell()


def scan_pickle(f: BinaryIO, origin: str) -> None:
    """Walk one pickle's opcodes (``pickletools.genops``; nothing is built, no callable is looked up) and refuse
    what would make the C unpickler take time or memory far beyond the pickle's size, before it runs:

    - a frame longer than the rest of the file;
    - a memo index (``PUT``/``BINPUT``/``LONG_BINPUT``) much larger than the number of opcodes so far (Python's
      pickler numbers its memo 0, 1, 2, ...; an index of ``2**28`` makes CPython's unpickler grow its memo array
      to 4 GiB);
    - a tuple whose elements, counted through shared references, far outnumber the opcodes: hashing or
      comparing it (a dict key, a set element) takes time exponential in the pickle's size (CPython does not
      cache tuple hashes), so the unpickler would hang in ``SETITEM`` with no callback to stop it.

    The stack is simulated with one number per item: the tuple's size with sharing expanded (1 for anything
    else; lists and dicts cannot be hashed, so hashing stops at them).

    Raises:
        ModelImportError: one of the above (named). Malformed or truncated opcodes raise ``ValueError``
            (``safe_load`` turns it into ModelImportError).
    """
    capped = _Capped(f)
    source: Any = f if isinstance(f, io.BytesIO) else capped  # (a BytesIO never reads past its end)
    stack: list[int] = []
    marks: list[int] = []
    memo: dict[int, int] = {}
    for n, (op, arg, _pos) in enumerate(pickletools.genops(source), 1):
        name = op.name
        if name == "FRAME" and isinstance(arg, int) and arg > capped.end - f.tell():
            raise ModelImportError(
                f"{origin}: the pickle declares a frame of {arg} bytes but only {capped.end - f.tell()} remain; the "
                "file is truncated or its sizes are forged."
            )
        if name in _PUT_OPS:
            if isinstance(arg, int) and arg > 2 * n + 1024:
                raise ModelImportError(
                    f"{origin}: the pickle stores memo entry {arg} after only {n} opcodes (a pickler numbers its "
                    "memo 0, 1, 2, ...); such an index would make the unpickler allocate gigabytes. The file is "
                    "corrupted or malicious."
                )
            memo[arg if isinstance(arg, int) else -1] = stack[-1] if stack else 1
            continue
        if name == "MARK":
            marks.append(len(stack))
            continue
        if name == "MEMOIZE":
            memo[len(memo)] = stack[-1] if stack else 1
            continue
        if name in ("GET", "BINGET", "LONG_BINGET"):
            stack.append(memo.get(arg if isinstance(arg, int) else -1, 1))
            continue
        if name == "DUP":
            stack.append(stack[-1] if stack else 1)
            continue
        slice_, extra, after, is_tuple = _EFFECTS[name]
        children: list[int] = []
        if slice_:
            if not marks:
                raise ValueError(f"{name} without a MARK")
            at = marks.pop()
            children = stack[at:]
            del stack[at:]
        if extra:
            if len(stack) < extra:
                raise ValueError(f"stack underflow at {name}")
            if not children:
                children = stack[-extra:]
            del stack[-extra:]
        size = 1 + sum(children) if is_tuple else 1
        if size > 2 * n + 1_000_000:
            raise ModelImportError(
                f"{origin}: the pickle builds a tuple of {size} elements (counting shared references) from {n} "
                "opcodes; hashing or comparing it would take exponential time. The file is corrupted or malicious."
            )
        stack.extend([size] * after)


def safe_load(unpickler: SafeUnpickler, origin: str, what: str = "the pickle") -> Any:
    """Run ``unpickler.load()``, turning every pickle failure into :class:`ModelImportError`."""
    try:
        return unpickler.load()
    except ModelImportError as exc:
        if origin in str(exc):
            raise
        raise ModelImportError(f"{origin}: {exc}") from None
    except _PICKLE_ERRORS as exc:
        raise ModelImportError(
            f"{origin}: {what} is malformed or truncated ({type(exc).__name__}: {str(exc)[:200]}); the file is "
            "corrupted or not a PyTorch file."
        ) from None
    finally:
        unpickler.close()
