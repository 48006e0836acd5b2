"""tools/bench/sass_stats.py reads cache roots as hostile: entries that are
links, FIFOs, junk, sizes past the file or bad metadata are skipped with a
line each; a well-formed entry gives its kernel and cubin bytes; a grouped
program's cubin counts each kernel's own function."""

import contextlib
import io
import json
import os
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tools", "bench"))
import sass_stats  # noqa: E402


def entry(meta: bytes, cubin: bytes, cubin_len=None) -> bytes:
    size = len(cubin) if cubin_len is None else cubin_len
    body = b"MOEJITC\x01" + struct.pack("<IQ", len(meta), size) + meta + cubin
    return body + bytes(32)


class CacheEntries(unittest.TestCase):
    def test_only_well_formed_entries_are_read(self):
        with tempfile.TemporaryDirectory() as root:
            def write(name, data):
                with open(os.path.join(root, name), "wb") as f:
                    f.write(data)

            write("good.cubin", entry(json.dumps({"kernel": "moe_gemm1_x"}).encode(), b"ELF!"))
            write("junk.cubin", os.urandom(100))
            write("short.cubin", b"MOEJITC")
            write("past_end.cubin", entry(b"{}", b"", cubin_len=2**40))
            write("big_meta.cubin", b"MOEJITC\x01" + struct.pack("<IQ", 2**31, 0))
            write("bad_json.cubin", entry(b"{not json", b""))
            write("no_kernel.cubin", entry(b"[1, 2]", b""))
            os.symlink("/etc/passwd", os.path.join(root, "link.cubin"))
            os.mkfifo(os.path.join(root, "fifo.cubin"))
            err = io.StringIO()
            with contextlib.redirect_stderr(err):
                found = list(sass_stats.cache_cubins(root))
            self.assertEqual(found, [("moe_gemm1_x", b"ELF!")])
            for name in ("junk", "short", "past_end", "big_meta", "bad_json", "no_kernel",
                         "link", "fifo"):
                self.assertIn(f"{name}.cubin: ", err.getvalue())


class GroupedCubins(unittest.TestCase):
    SASS = ("\n\tcode for sm_90a\n"
            "\t\tFunction : moe_gemm2_a\n"
            "        /*0000*/                   R2UR UR4, R2 ;\n"
            "        /*0010*/                   HGMMA.64x256x16.F32.BF16 R24, gdesc[UR4], R24 ;\n"
            "\t\tFunction : moe_gemm1_b\n"
            "        /*0000*/                   MOV R1, c[0x0][0x28] ;\n"
            "        /*0010*/                   EXIT ;\n")

    def test_each_kernel_counts_only_its_own_function(self):
        a = sass_stats.stats(sass_stats.function_sass(self.SASS, "moe_gemm2_a"))
        b = sass_stats.stats(sass_stats.function_sass(self.SASS, "moe_gemm1_b"))
        self.assertEqual((a["instructions"], a["r2ur"], a["hgmma"]), (2, 1, 1))
        self.assertEqual((b["instructions"], b["r2ur"], b["hgmma"]), (2, 0, 0))

    def test_a_cubin_without_the_function_is_read_whole(self):
        self.assertEqual(sass_stats.stats(sass_stats.function_sass(self.SASS, "other"))
                         ["instructions"], 4)


if __name__ == "__main__":
    unittest.main()
