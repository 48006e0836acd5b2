"""moejit from Python.

The package holds libmoejit.so and reaches it through its C ABI
(include/moejit/moejit.h) with ctypes, so one wheel serves every Python 3
and needs nothing but the library. What needs no torch lives here: the
version, shapes, warming a cache for a named arch without a GPU, and the
cache upkeep. The torch op is `moejit.torch`; the Transformers backend
`moejit.transformers`.
"""

from ._capi import (CacheReport, MoejitError, Shape, WarmReport, cache_prune, cache_verify,
                    version, warm)

__version__ = version()

__all__ = ["CacheReport", "MoejitError", "Shape", "WarmReport", "cache_prune", "cache_verify",
           "version", "warm", "__version__"]
