#!/usr/bin/env python3
"""Prints the SASS of one kernel from a moejit cache root, no GPU needed:
sass.py CACHE_ROOT KERNEL_NAME [NVDISASM]. Fill the root first with
`moejit warm --arch sm_90a --cache-dir ROOT`. A cache entry is moejit's
header and JSON, then the cubin (an ELF): the ELF part goes to nvdisasm
(default: `nvdisasm` on PATH; the PyPI wheel nvidia-cuda-nvdisasm has one
for machines whose toolkit lacks it). A grouped entry holds several
kernels; only KERNEL_NAME's section is printed."""
import glob, os, subprocess, sys, tempfile


def main():
    root, kernel = sys.argv[1], sys.argv[2]
    nvdisasm = sys.argv[3] if len(sys.argv) > 3 else "nvdisasm"
    for path in sorted(glob.glob(os.path.join(root, "**", "*.cubin"), recursive=True)):
        data = open(path, "rb").read()
        start = data.find(b"\x7fELF")
        if start < 0 or kernel.encode() not in data:
            continue
        with tempfile.NamedTemporaryFile(suffix=".cubin") as elf:
            elf.write(data[start:])
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
