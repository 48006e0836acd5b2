#!/usr/bin/env python3
"""Prints the SASS of one kernel from a moejit cache root, no GPU needed:
sass.py CACHE_ROOT KERNEL_NAME [NVDISASM]. Fill the root first with
`moejit warm --arch sm_90a --cache-dir ROOT`. The entries are read as
sass_stats.py reads them (links, special files and malformed entries are
skipped); a cubin goes to nvdisasm (default: `nvdisasm` on PATH; the PyPI
wheel nvidia-cuda-nvdisasm has one for machines whose toolkit lacks it). A
grouped entry holds several kernels; only KERNEL_NAME's section is
printed."""
import os, subprocess, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sass_stats import cache_cubins  # noqa: E402


def main():
    root, kernel = sys.argv[1], sys.argv[2]
    nvdisasm = sys.argv[3] if len(sys.argv) > 3 else "nvdisasm"
    for _, cubin in cache_cubins(root):
        if kernel.encode() not in cubin:
            continue
        with tempfile.NamedTemporaryFile(suffix=".cubin") as elf:
            elf.write(cubin)
            elf.flush()
            text = subprocess.run([nvdisasm, "-c", elf.name], capture_output=True, text=True,
                                  check=True).stdout
        begin = text.find(".text." + kernel + ":")
        if begin < 0:
            continue
        end = text.find("\n\t.section", begin)
        print(text[begin:end if end > 0 else None])
        return 0
    print(f"{kernel}: not in any cache entry under {root}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
