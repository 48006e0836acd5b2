"""SASS of the kernels in moejit cache roots, without a GPU: per kernel the
instruction count, R2UR moves (per-thread values a wgmma descriptor or a
uniform operation needed), and the main loop's span (first to last HGMMA)
with its R2URs. Compares builds: warm each build's kernels into its own
root (`moejit warm --arch sm_90a --cache-dir DIR`), then

    python3 tools/bench/sass_stats.py base=DIR1 variant=DIR2 [--kernel REGEX] [--dump OUT]

The cubins are read out of the cache entries (cache/FORMAT.md), and of a
grouped program's cubin only the kernel's own function counts; the
disassembler is $CUOBJDUMP, else the CUDA toolkit's, else the one Triton's
wheel carries (`pip install triton` where the toolkit has none). The PyPI
wheels nvidia-cuda-cuobjdump and nvidia-cuda-nvdisasm serve as well
(`pip download --no-deps`, unzip): CUOBJDUMP=.../bin/cuobjdump and
NVDISASM_PATH=the folder of nvdisasm, which cuobjdump runs. --dump
writes each kernel's SASS to OUT/LABEL_KERNEL.sass.
"""

import argparse
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HEADER = 8 + 4 + 8  # magic and version, u32 metadata length, u64 cubin length


MAX_ENTRY = 64 << 20  # the store's own limits (cache/FORMAT.md)
MAX_METADATA = 64 << 10


def cache_cubins(root):
    """(kernel name, cubin bytes) of every entry under root that reads as
    one; anything else (not a regular file, too large, bad sizes or
    metadata) is skipped with a line on stderr. Links are not followed."""
    for path in sorted(glob.glob(os.path.join(root, "**", "*.cubin"), recursive=True)):
        why = None
        if os.path.islink(path) or not os.path.isfile(path):
            why = "not a regular file"
        elif os.path.getsize(path) > MAX_ENTRY:
            why = "larger than 64 MiB"
        else:
            with open(path, "rb") as f:
                data = f.read(MAX_ENTRY + 1)
            meta_len, cubin_len = (struct.unpack_from("<IQ", data, 8) if len(data) >= HEADER
                                   else (0, 0))
            if not data.startswith(b"MOEJITC") or len(data) < HEADER:
                why = "no entry header"
            elif meta_len > MAX_METADATA or HEADER + meta_len + cubin_len > len(data):
                why = "sizes past the file"
            else:
                try:
                    name = json.loads(data[HEADER:HEADER + meta_len])["kernel"]
                except (ValueError, KeyError, TypeError):
                    why = "unreadable metadata"
        if why:
            print(f"sass_stats: skipped {path}: {why}", file=sys.stderr)
            continue
        yield name, data[HEADER + meta_len:HEADER + meta_len + cubin_len]


def find_cuobjdump():
    candidates = [os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump"),
                  "/usr/local/cuda/bin/cuobjdump"]
    try:
        import triton  # noqa: F401 (only for its bundled binaries)
        candidates.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia",
                                       "bin", "cuobjdump"))
    except ImportError:
        pass
    for c in candidates:
        if c and os.path.exists(c):
            return c
    sys.exit("sass_stats: no cuobjdump (set CUOBJDUMP, or pip install triton; see the top of"
             " this file)")


INSTRUCTION = re.compile(r"/\*[0-9a-f]{4,}\*/\s+(.*?);")


def function_sass(sass, name):
    """cuobjdump's section for kernel `name`: a cache entry of a grouped
    program holds every kernel of the group in one cubin."""
    sections = re.split(r"\n\s*Function : ", sass)
    for section in sections[1:]:
        if section.split("\n", 1)[0].strip() == name:
            return section
    return sass


def stats(sass):
    lines = INSTRUCTION.findall(sass)
    hgmma = [i for i, ins in enumerate(lines) if "HGMMA" in ins]
    span = lines[hgmma[0]:hgmma[-1] + 1] if hgmma else []
    return {"instructions": len(lines), "r2ur": sum("R2UR" in ins for ins in lines),
            "hgmma": len(hgmma), "loop_span": len(span),
            "loop_r2ur": sum("R2UR" in ins for ins in span)}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("roots", nargs="+", help="LABEL=CACHE_DIR")
    p.add_argument("--kernel", default="moe_gemm", help="regex on kernel names")
    p.add_argument("--dump", help="folder for the SASS text")
    args = p.parse_args()
    cuobjdump = find_cuobjdump()
    pattern = re.compile(args.kernel)
    print(f"{'build':10s} {'kernel':70s} {'instr':>6s} {'R2UR':>5s} {'HGMMA':>5s} "
          f"{'loop':>5s} {'loopR2UR':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        for spec in args.roots:
            label, _, root = spec.partition("=")
            for name, cubin in cache_cubins(root):
                if not pattern.search(name):
                    continue
                path = os.path.join(tmp, "k.cubin")
                with open(path, "wb") as f:
                    f.write(cubin)
                sass = function_sass(subprocess.run([cuobjdump, "-sass", path],
                                                    capture_output=True, text=True,
                                                    check=True).stdout, name)
                if args.dump:
                    os.makedirs(args.dump, exist_ok=True)
                    with open(os.path.join(args.dump, f"{label}_{name}.sass"), "w") as f:
                        f.write(sass)
                s = stats(sass)
                print(f"{label:10s} {name:70s} {s['instructions']:6d} {s['r2ur']:5d} "
                      f"{s['hgmma']:5d} {s['loop_span']:5d} {s['loop_r2ur']:8d}")


if __name__ == "__main__":
    main()
