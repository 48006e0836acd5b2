"""tools/bench/sass_stats.py reads cache roots as hostile: entries that are
links, FIFOs, junk, sizes past the file or bad metadata are skipped with a
line each; a well-formed entry gives its kernel and cubin bytes."""

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


if __name__ == "__main__":
    unittest.main()
