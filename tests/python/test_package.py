"""The moejit Python package as a user gets it from `pip install .` into a
fresh virtual environment, without torch and without a GPU: the version,
warming a cache for a named arch, typed errors, and the cache upkeep."""

import copy
import ctypes
import glob
import os
import pickle
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

import moejit

SMALL = moejit.Shape(k=2, hidden=256, intermediate=128, experts=8)


class Package(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.TemporaryDirectory(prefix="moejit-python-test-")
        self.root = os.path.join(self.scratch.name, "cache")

    def tearDown(self):
        self.scratch.cleanup()

    def test_version_and_no_torch(self):
        self.assertEqual(moejit.version(), "0.2.0")
        self.assertEqual(moejit.__version__, "0.2.0")
        self.assertNotIn("torch", sys.modules)
        library = os.path.join(os.path.dirname(moejit.__file__), "libmoejit.so")
        self.assertTrue(os.path.isfile(library))

    def test_warm_compiles_then_finds_everything_cached(self):
        (first,) = moejit.warm([SMALL], "sm_80", cache_dir=self.root)
        self.assertGreater(first.kernels, 0)
        self.assertEqual(first.compiled, first.kernels)
        self.assertEqual(first.not_saved, 0)
        (again,) = moejit.warm([SMALL], "sm_80", cache_dir=self.root)
        self.assertEqual(again.compiled, 0)
        self.assertEqual(again.kernels, first.kernels)

    def test_fast_combine_warms_gemm2s_of_its_own(self):
        (deterministic,) = moejit.warm([SMALL], "sm_80", cache_dir=self.root)
        os.environ["MOEJIT_COMBINE"] = "fast"
        try:
            (fast,) = moejit.warm([SMALL], "sm_80", cache_dir=self.root)
        finally:
            del os.environ["MOEJIT_COMBINE"]
        # No combine pass; the GEMM1s and routing are shared, the GEMM2s
        # that add into y are compiled now.
        self.assertEqual(fast.kernels, deterministic.kernels - 1)
        self.assertGreater(fast.compiled, 0)
        self.assertLess(fast.compiled, fast.kernels)
        os.environ["MOEJIT_COMBINE"] = "sloppy"
        try:
            with self.assertRaises(moejit.MoejitError) as bad:
                moejit.warm([SMALL], "sm_80", cache_dir=self.root)
        finally:
            del os.environ["MOEJIT_COMBINE"]
        self.assertEqual(bad.exception.status, "INVALID_ARGUMENT")
        self.assertIn("MOEJIT_COMBINE=sloppy", bad.exception.message)
        # A mode the runtime options do not know: refused before any device
        # or library call.
        with self.assertRaises(moejit.MoejitError) as option:
            moejit._capi.Runtime(combine="sloppy")
        self.assertEqual(option.exception.status, "INVALID_ARGUMENT")
        self.assertIn("'sloppy'", option.exception.message)

    def test_errors_are_typed(self):
        with self.assertRaises(moejit.MoejitError) as bad_arch:
            moejit.warm([SMALL], "sm_80a", cache_dir=self.root)
        self.assertEqual(bad_arch.exception.status, "INVALID_ARGUMENT")
        self.assertIn("unsupported target 'sm_80a'", bad_arch.exception.message)
        self.assertFalse(os.path.exists(self.root), "a bad arch writes nothing")
        for shape in (moejit.Shape(2, 100, 128, 8), moejit.Shape(2, 256, 128, 8, "int8")):
            with self.assertRaises(moejit.MoejitError) as bad_shape:
                moejit.warm([shape], "sm_80", cache_dir=self.root)
            self.assertEqual(bad_shape.exception.status, "INVALID_SHAPE")
        not_a_folder = os.path.join(self.scratch.name, "a-file")
        open(not_a_folder, "w").close()
        with self.assertRaises(moejit.MoejitError) as unsaved:
            moejit.warm([SMALL], "sm_80", cache_dir=not_a_folder)
        self.assertIn("not saved", unsaved.exception.message)

    def test_cache_verify_and_prune(self):
        (warmed,) = moejit.warm([SMALL], "sm_80", cache_dir=self.root)
        report = moejit.cache_verify(self.root)
        self.assertTrue(report.ok)
        self.assertEqual(report.entries_ok, warmed.kernels)
        entry = sorted(glob.glob(os.path.join(self.root, "v1", "*", "*.cubin")))[0]
        with open(entry, "r+b") as f:
            f.seek(100)
            f.write(b"\xff\xff\xff\xff")
        report = moejit.cache_verify(self.root)
        self.assertFalse(report.ok)
        self.assertEqual(report.corrupt, 1)
        fixed = moejit.cache_verify(self.root, fix=True)
        self.assertEqual(fixed.removed, 1)
        self.assertTrue(moejit.cache_verify(self.root).ok)
        pruned = moejit.cache_prune(0, cache_dir=self.root)
        self.assertEqual(pruned.entry_bytes, 0)
        self.assertEqual(pruned.entries_ok, 0)
        with self.assertRaises(moejit.MoejitError):
            moejit.cache_prune(-1, cache_dir=self.root)

    def test_values_the_c_side_would_misread_are_refused(self):
        # ctypes wraps integers that do not fit the C type and C strings
        # end at a NUL: each would reach moejit as another value.
        (warmed,) = moejit.warm([SMALL], "sm_80", cache_dir=self.root)
        for huge in (2 ** 64, 2 ** 64 + 5):
            with self.assertRaises(moejit.MoejitError) as wrapped:
                moejit.cache_prune(huge, cache_dir=self.root)
            self.assertEqual(wrapped.exception.status, "INVALID_ARGUMENT")
            self.assertIn("max_bytes", wrapped.exception.message)
        with self.assertRaises(moejit.MoejitError) as nul:
            moejit.cache_prune(0, cache_dir=self.root + "\0/elsewhere")
        self.assertEqual(nul.exception.status, "INVALID_ARGUMENT")
        self.assertIn("NUL", nul.exception.message)
        # Nothing was pruned by either.
        self.assertEqual(moejit.cache_verify(self.root).entries_ok, warmed.kernels)
        with self.assertRaises(moejit.MoejitError) as big_shape:
            moejit.warm([moejit.Shape(2 ** 32 + 2, 2 ** 32 + 256, 128, 8)], "sm_80",
                        cache_dir=self.root)
        self.assertEqual(big_shape.exception.status, "INVALID_SHAPE")
        with self.assertRaises(moejit.MoejitError) as not_int:
            moejit.warm([moejit.Shape(2, 256.0, 128, 8)], "sm_80", cache_dir=self.root)
        self.assertEqual(not_int.exception.status, "INVALID_SHAPE")
        for arch in ("sm_80\0junk", None):
            with self.assertRaises(moejit.MoejitError):
                moejit.warm([SMALL], arch, cache_dir=self.root)
        with self.assertRaises(moejit.MoejitError) as device:
            moejit._capi.Runtime(device=2 ** 32)
        self.assertEqual(device.exception.status, "INVALID_ARGUMENT")


class NvrtcPreload(unittest.TestCase):
    def test_no_caller_goes_on_while_the_wheels_nvrtc_loads(self):
        """moejit looks for its NVRTC once, at the first compile: a second
        caller must not return while the first is still loading the CUDA
        wheel's copy (a stand-in here, found on sys.path and slow)."""
        capi = moejit._capi
        entered, loaded = threading.Event(), threading.Event()

        def slow_load(path, mode=0):
            entered.set()
            time.sleep(0.3)
            loaded.set()

        with tempfile.TemporaryDirectory() as folder:
            lib = os.path.join(folder, "nvidia", "cuda_nvrtc", "lib")
            os.makedirs(lib)
            open(os.path.join(lib, f"libnvrtc.so.{capi._build_info.NVRTC_MAJOR}"), "w").close()
            environment = {k: v for k, v in os.environ.items() if k != "MOEJIT_NVRTC_LIBRARY"}
            with mock.patch.object(capi._preload_wheel_nvrtc, "done", False), \
                    mock.patch.object(sys, "path", [folder] + sys.path), \
                    mock.patch.object(capi.ctypes, "CDLL", slow_load), \
                    mock.patch.dict(os.environ, environment, clear=True):
                first = threading.Thread(target=capi._preload_wheel_nvrtc)
                first.start()
                self.assertTrue(entered.wait(10))
                capi._preload_wheel_nvrtc()
                self.assertTrue(loaded.is_set(), "the second caller returned before the load")
                first.join()
                self.assertTrue(capi._preload_wheel_nvrtc.done)


class Handles(unittest.TestCase):
    """KernelSet and Runtime own a C handle that their __del__ releases."""

    @staticmethod
    def owners():
        class Held(ctypes.c_void_p):  # NULL, which C releases as a no-op, read as held
            def __bool__(self):
                return True

        kernels = moejit._capi.KernelSet(Held(), SMALL)
        runtime = object.__new__(moejit._capi.Runtime)  # (no device to create one on)
        runtime._handle = Held()
        return kernels, runtime

    def test_copies_and_pickles_are_refused(self):
        # A copy's __del__ released the handle the original still held.
        for owner in self.owners():
            for copier in (copy.copy, copy.deepcopy, pickle.dumps):
                with self.subTest(owner=type(owner).__name__, copier=copier.__name__):
                    with self.assertRaisesRegex(TypeError, "^moejit: .* owns a C handle"):
                        copier(owner)

    def test_release_needs_no_module_globals(self):
        # At interpreter exit the module's globals can be None before the
        # last owner goes: __del__ uses the function bound with the class.
        owners = self.owners()
        with mock.patch.object(moejit._capi, "_kernels_release", None), \
                mock.patch.object(moejit._capi, "_runtime_destroy", None):
            for owner in owners:
                owner.__del__()
                self.assertIsNone(owner._handle)


if __name__ == "__main__":
    unittest.main(verbosity=2)
