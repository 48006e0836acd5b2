"""The C ABI of libmoejit.so (include/moejit/moejit.h) through ctypes.

Structs mirror the header field by field; every call's status is turned
into a MoejitError carrying the status name and moejit's own message.
"""

import ctypes
import operator
import os
import sys
import threading
from dataclasses import dataclass
from typing import Iterable, List, Optional

from . import _build_info

_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libmoejit.so")
# RTLD_LOCAL: moejit's symbols never mix with another library's.
_lib = ctypes.CDLL(_LIBRARY, mode=os.RTLD_LOCAL | os.RTLD_NOW)

STATUS_NAMES = [
    "OK",
    "INVALID_SHAPE",
    "INVALID_ARGUMENT",
    "WORKSPACE_TOO_SMALL",
    "COMPILE_FAILED",
    "DRIVER_ERROR",
    "NO_DEVICE",
    "CACHE_MISS",
    "INTERNAL",
]

DTYPES = {"bf16": 0, "fp16": 1, "fp32": 2}


class MoejitError(RuntimeError):
    """A failed moejit call: `status` is the moejit_status name (for
    example "NO_DEVICE"), the message moejit's own text."""

    def __init__(self, status: str, message: str):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.message = message


def _sized(cls):
    """An instance of a size-carrying struct with struct_size set."""
    value = cls()
    value.struct_size = ctypes.sizeof(cls)
    return value


class _Shape(ctypes.Structure):
    _fields_ = [("k", ctypes.c_int32), ("hidden", ctypes.c_int32),
                ("intermediate", ctypes.c_int32), ("experts", ctypes.c_int32),
                ("dtype", ctypes.c_int32)]


class _WarmReport(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("kernels", ctypes.c_uint64),
                ("compiled", ctypes.c_uint64), ("not_saved", ctypes.c_uint64)]


class _RuntimeOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("cache_dir", ctypes.c_char_p),
                ("no_compile", ctypes.c_int32), ("tuning", ctypes.c_int32),
                ("combine", ctypes.c_int32)]


class _Args(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("x", ctypes.c_void_p),
                ("gate_up_proj", ctypes.c_void_p), ("down_proj", ctypes.c_void_p),
                ("top_k_index", ctypes.c_void_p), ("top_k_weights", ctypes.c_void_p),
                ("y", ctypes.c_void_p), ("tokens", ctypes.c_int64),
                ("workspace", ctypes.c_void_p), ("workspace_bytes", ctypes.c_size_t),
                ("expert_map", ctypes.c_void_p), ("expert_map_size", ctypes.c_int64),
                ("index_type", ctypes.c_int32), ("weights_type", ctypes.c_int32)]


class _CacheStats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("hits", ctypes.c_uint64),
                ("misses", ctypes.c_uint64), ("compiles", ctypes.c_uint64),
                ("memory_only", ctypes.c_int32)]


class _CacheReport(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("entries_ok", ctypes.c_uint64),
                ("corrupt", ctypes.c_uint64), ("refused", ctypes.c_uint64),
                ("bad_records", ctypes.c_uint64), ("temporary", ctypes.c_uint64),
                ("stale_locks", ctypes.c_uint64), ("removed", ctypes.c_uint64),
                ("entry_bytes", ctypes.c_uint64), ("ok", ctypes.c_int32)]


def _declare(name, argtypes, restype=ctypes.c_int):
    fn = getattr(_lib, name)
    fn.argtypes = argtypes
    fn.restype = restype
    return fn


_version = _declare("moejit_version", [], ctypes.c_char_p)
_last_error = _declare("moejit_last_error", [], ctypes.c_char_p)
_warm = _declare("moejit_warm", [ctypes.POINTER(_Shape), ctypes.c_char_p, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.POINTER(_WarmReport)])
_cache_verify = _declare("moejit_cache_verify",
                         [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(_CacheReport)])
_cache_prune = _declare("moejit_cache_prune",
                        [ctypes.c_char_p, ctypes.c_uint64, ctypes.POINTER(_CacheReport)])
_runtime_create = _declare("moejit_runtime_create",
                           [ctypes.c_int, ctypes.POINTER(_RuntimeOptions),
                            ctypes.POINTER(ctypes.c_void_p)])
_runtime_destroy = _declare("moejit_runtime_destroy", [ctypes.c_void_p], None)
_cache_stats_get = _declare("moejit_cache_stats_get",
                            [ctypes.c_void_p, ctypes.POINTER(_CacheStats)])
_get = _declare("moejit_get", [ctypes.c_void_p, ctypes.POINTER(_Shape),
                               ctypes.POINTER(ctypes.c_void_p)])
_kernels_release = _declare("moejit_kernels_release", [ctypes.c_void_p], None)
_workspace_bytes = _declare("moejit_workspace_bytes",
                            [ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_size_t)])
_run = _declare("moejit_run", [ctypes.c_void_p, ctypes.POINTER(_Args), ctypes.c_void_p])


def _check(status: int) -> None:
    if status != 0:
        name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else str(status)
        raise MoejitError(name, _last_error().decode("utf-8", "replace"))


def _text(value: Optional[str], name: str) -> Optional[bytes]:
    """value as the C side's NUL-terminated string; a NUL inside would cut
    it short there (another path than the one given), so it is refused, as
    Python's own os functions refuse it."""
    if value is None:
        return None
    encoded = os.fsencode(value)
    if b"\0" in encoded:
        raise MoejitError("INVALID_ARGUMENT", f"{name} {value!r} holds a NUL byte")
    return encoded


_INT32 = (-(1 << 31), (1 << 31) - 1)
_INT64 = (-(1 << 63), (1 << 63) - 1)
_UINT64 = (0, (1 << 64) - 1)


def _int(value, name: str, bounds, status: str = "INVALID_ARGUMENT") -> int:
    """value as an int within the C type's `bounds`: ctypes would wrap one
    outside them silently (2**32 + 2 arriving as 2)."""
    try:
        number = operator.index(value)
    except TypeError:
        raise MoejitError(status, f"{name} {value!r} is not an integer") from None
    if not bounds[0] <= number <= bounds[1]:
        raise MoejitError(status, f"{name} {number} is outside [{bounds[0]}, {bounds[1]}]")
    return number


def version() -> str:
    """moejit's version, e.g. "0.2.0"."""
    return _version().decode()


@dataclass(frozen=True)
class Shape:
    """The shape a kernel set is specialised to (moejit::MoeShape)."""

    k: int
    hidden: int
    intermediate: int
    experts: int
    dtype: str = "bf16"

    def _c(self) -> _Shape:
        if self.dtype not in DTYPES:
            raise MoejitError("INVALID_SHAPE",
                              f"dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        return _Shape(*(_int(getattr(self, f), f, _INT32, "INVALID_SHAPE")
                        for f in ("k", "hidden", "intermediate", "experts")),
                      DTYPES[self.dtype])


@dataclass(frozen=True)
class WarmReport:
    shape: Shape
    kernels: int  # kernels the shape's plans use
    compiled: int  # compiled now; the rest were in the cache
    not_saved: int


@dataclass(frozen=True)
class CacheReport:
    entries_ok: int
    corrupt: int
    refused: int
    bad_records: int
    temporary: int
    stale_locks: int
    removed: int
    entry_bytes: int
    ok: bool


def warm(shapes: Iterable[Shape], arch: str, gpu: Optional[str] = None,
         cache_dir: Optional[str] = None) -> List[WarmReport]:
    """Compiles every kernel the shapes may use for `arch` ("sm_90a") into
    the cache (default root unless `cache_dir`), no GPU needed; `gpu` names
    the device whose tuned plan to include (default: every shipped table of
    the arch), for the combine mode MOEJIT_COMBINE gives. Raises MoejitError
    when anything fails or was not saved."""
    _preload_wheel_nvrtc()
    reports = []
    for shape in shapes:
        report = _sized(_WarmReport)
        _check(_warm(ctypes.byref(shape._c()), _text(arch, "arch"), _text(gpu, "gpu"),
                     _text(cache_dir, "cache_dir"), ctypes.byref(report)))
        reports.append(WarmReport(shape, report.kernels, report.compiled, report.not_saved))
    return reports


def _cache_report(report: _CacheReport) -> CacheReport:
    return CacheReport(report.entries_ok, report.corrupt, report.refused, report.bad_records,
                       report.temporary, report.stale_locks, report.removed,
                       report.entry_bytes, bool(report.ok))


def cache_verify(cache_dir: Optional[str] = None, fix: bool = False) -> CacheReport:
    """`moejit cache verify [--fix]`."""
    report = _sized(_CacheReport)
    _check(_cache_verify(_text(cache_dir, "cache_dir"), int(fix), ctypes.byref(report)))
    return _cache_report(report)


def cache_prune(max_bytes: int, cache_dir: Optional[str] = None) -> CacheReport:
    """`moejit cache prune --max-size`: least recently used entries go until
    the entries total at most `max_bytes`."""
    max_bytes = _int(max_bytes, "max_bytes", _UINT64)
    report = _sized(_CacheReport)
    _check(_cache_prune(_text(cache_dir, "cache_dir"), max_bytes, ctypes.byref(report)))
    return _cache_report(report)


def _preload_wheel_nvrtc() -> None:
    """Makes the NVRTC of the CUDA wheels this Python already has (the
    ones torch depends on) the one moejit finds: moejit looks for an NVRTC
    already loaded in the process before the loader path and
    /usr/local/cuda, so loading the wheel's copy here is enough. Skipped
    when MOEJIT_NVRTC_LIBRARY names one; a missing or broken wheel copy
    leaves moejit's own search order as it is."""
    if os.environ.get("MOEJIT_NVRTC_LIBRARY") or _preload_wheel_nvrtc.done:
        return
    # Done only once the search is over, under a lock: moejit looks for its
    # NVRTC once per process, at the first compile, so a thread let through
    # while another was still loading the wheel's copy could fix the
    # process on another NVRTC.
    with _preload_lock:
        if not _preload_wheel_nvrtc.done:
            _load_wheel_nvrtc()
            _preload_wheel_nvrtc.done = True


def _load_wheel_nvrtc() -> None:
    name = f"libnvrtc.so.{_build_info.NVRTC_MAJOR}"
    for folder in sys.path:
        for sub in (f"cu{_build_info.NVRTC_MAJOR}", "cuda_nvrtc"):
            path = os.path.join(folder or ".", "nvidia", sub, "lib", name)
            if os.path.isfile(path):
                try:
                    ctypes.CDLL(path, mode=os.RTLD_LOCAL | os.RTLD_NOW)
                    return
                except OSError:
                    continue


_preload_wheel_nvrtc.done = False
_preload_lock = threading.Lock()

TUNINGS = {None: -1, "records": 0, "heuristic": 1, "first_use": 2}
# moejit::Combine; None: MOEJIT_COMBINE.
COMBINES = {None: -1, "deterministic": 0, "fast": 1, "batch_invariant": 2}
INDEX_TYPES = {"int32": 0, "int64": 1}
WEIGHTS_TYPES = {"float32": 0, "model": 1}


@dataclass(frozen=True)
class CacheStats:
    hits: int
    misses: int
    compiles: int
    memory_only: bool


class _Owner:
    """An owner of one C handle, which its __del__ releases. A copy would
    share the handle and release it a second time (a double delete), and a
    pickle cannot carry it to another process: both are refused. __del__
    takes its release function as a default argument, bound when the class
    is defined: at interpreter exit this module's globals can be None
    before the last owner goes."""

    def __copy__(self):
        raise TypeError(f"moejit: a {type(self).__name__} owns a C handle and cannot be copied")

    def __deepcopy__(self, memo):
        return self.__copy__()

    def __reduce_ex__(self, protocol):
        raise TypeError(f"moejit: a {type(self).__name__} owns a C handle and cannot be "
                        f"pickled")


class KernelSet(_Owner):
    """The compiled, loaded kernels of one shape on one device
    (moejit_kernels). `run` takes raw device pointers; moejit.torch wraps
    it for tensors."""

    def __init__(self, handle: ctypes.c_void_p, shape: Shape):
        self._handle = handle
        self.shape = shape
        self._workspace: dict = {}  # tokens -> bytes: a call per step costs more

    def __del__(self, _release=_kernels_release):
        if getattr(self, "_handle", None):
            _release(self._handle)
            self._handle = None

    def workspace_bytes(self, tokens: int) -> int:
        found = self._workspace.get(tokens)
        if found is not None:
            return found
        out = ctypes.c_size_t()
        _check(_workspace_bytes(self._handle, _int(tokens, "tokens", _INT64), ctypes.byref(out)))
        if len(self._workspace) >= 4096:
            self._workspace.clear()
        self._workspace[tokens] = out.value
        return out.value

    def run(self, x: int, gate_up_proj: int, down_proj: int, top_k_index: int,
            top_k_weights: int, y: int, tokens: int, workspace: int, workspace_bytes: int,
            stream: int, expert_map: int = 0, expert_map_size: int = 0,
            index_type: int = 0, weights_type: int = 0) -> None:
        """Enqueues the MoE MLP on `stream` (moejit_run); pointers as ints,
        index_type / weights_type as the MOEJIT_INDEX_* / MOEJIT_WEIGHTS_*
        values (INDEX_TYPES, WEIGHTS_TYPES)."""
        # The counts and enums checked against their C types (ctypes would
        # wrap them); pointers from data_ptr() always fit.
        if not (_INT64[0] <= tokens <= _INT64[1] and 0 <= workspace_bytes <= _UINT64[1]
                and 0 <= expert_map_size <= _INT64[1] and _INT32[0] <= index_type <= _INT32[1]
                and _INT32[0] <= weights_type <= _INT32[1]):
            for value, name, bounds in ((tokens, "tokens", _INT64),
                                        (workspace_bytes, "workspace_bytes", _UINT64),
                                        (expert_map_size, "expert_map_size", (0, _INT64[1])),
                                        (index_type, "index_type", _INT32),
                                        (weights_type, "weights_type", _INT32)):
                _int(value, name, bounds)
        args = _Args(_ARGS_SIZE, x, gate_up_proj, down_proj, top_k_index, top_k_weights, y,
                     tokens, workspace, workspace_bytes, expert_map, expert_map_size,
                     index_type, weights_type)
        status = _run(self._handle, ctypes.byref(args), stream)
        if status:
            _check(status)


_ARGS_SIZE = ctypes.sizeof(_Args)


class Runtime(_Owner):
    """A moejit runtime on one CUDA device (moejit_runtime): it owns the
    kernel sets of that device and the in-process cache."""

    def __init__(self, device: int = 0, cache_dir: Optional[str] = None,
                 no_compile: Optional[bool] = None, tuning: Optional[str] = None,
                 combine: Optional[str] = None):
        if tuning not in TUNINGS:
            raise MoejitError("INVALID_ARGUMENT",
                              f"tuning {tuning!r} is not one of records, heuristic, first_use")
        if combine not in COMBINES:
            raise MoejitError("INVALID_ARGUMENT", f"combine {combine!r} is not one of "
                              "deterministic, fast, batch_invariant")
        _preload_wheel_nvrtc()
        options = _sized(_RuntimeOptions)
        device = _int(device, "device", _INT32)
        options.cache_dir = _text(cache_dir, "cache_dir")
        options.no_compile = -1 if no_compile is None else int(no_compile)
        options.tuning = TUNINGS[tuning]
        options.combine = COMBINES[combine]
        handle = ctypes.c_void_p()
        _check(_runtime_create(device, ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle
        self.device = device

    def __del__(self, _release=_runtime_destroy):
        if getattr(self, "_handle", None):
            _release(self._handle)
            self._handle = None

    def get(self, shape: Shape) -> KernelSet:
        """The kernel set of `shape`: from memory, the disk cache, or
        compiled (and tuned, with tuning="first_use") now."""
        handle = ctypes.c_void_p()
        _check(_get(self._handle, ctypes.byref(shape._c()), ctypes.byref(handle)))
        return KernelSet(handle, shape)

    def cache_stats(self) -> CacheStats:
        stats = _sized(_CacheStats)
        _check(_cache_stats_get(self._handle, ctypes.byref(stats)))
        return CacheStats(stats.hits, stats.misses, stats.compiles, bool(stats.memory_only))
