"""The C ABI of libmoejit.so (include/moejit/moejit.h) through ctypes.

Structs mirror the header field by field; every call's status is turned
into a MoejitError carrying the status name and moejit's own message.
"""

import ctypes
import os
from dataclasses import dataclass
from typing import Iterable, List, Optional

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


def _check(status: int) -> None:
    if status != 0:
        name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else str(status)
        raise MoejitError(name, _last_error().decode("utf-8", "replace"))


def _text(value: Optional[str]) -> Optional[bytes]:
    return None if value is None else os.fsencode(value)


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
        return _Shape(self.k, self.hidden, self.intermediate, self.experts, DTYPES[self.dtype])


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
    the arch). Raises MoejitError when anything fails or was not saved."""
    reports = []
    for shape in shapes:
        report = _sized(_WarmReport)
        _check(_warm(ctypes.byref(shape._c()), arch.encode(), _text(gpu), _text(cache_dir),
                     ctypes.byref(report)))
        reports.append(WarmReport(shape, report.kernels, report.compiled, report.not_saved))
    return reports


def _cache_report(report: _CacheReport) -> CacheReport:
    return CacheReport(report.entries_ok, report.corrupt, report.refused, report.bad_records,
                       report.temporary, report.stale_locks, report.removed,
                       report.entry_bytes, bool(report.ok))


def cache_verify(cache_dir: Optional[str] = None, fix: bool = False) -> CacheReport:
    """`moejit cache verify [--fix]`."""
    report = _sized(_CacheReport)
    _check(_cache_verify(_text(cache_dir), int(fix), ctypes.byref(report)))
    return _cache_report(report)


def cache_prune(max_bytes: int, cache_dir: Optional[str] = None) -> CacheReport:
    """`moejit cache prune --max-size`: least recently used entries go until
    the entries total at most `max_bytes`."""
    if max_bytes < 0:
        raise MoejitError("INVALID_ARGUMENT", f"max_bytes {max_bytes} is negative")
    report = _sized(_CacheReport)
    _check(_cache_prune(_text(cache_dir), max_bytes, ctypes.byref(report)))
    return _cache_report(report)
