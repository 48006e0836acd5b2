#!/usr/bin/env python3
"""Compares ncu warp-state samples of two builds' kernels, instruction by
instruction: stall_diff.py A.csv B.csv [KERNEL_SUBSTRING]. The CSVs are
`ncu -i REP --page source --csv --print-source sass` (stalls.sh). Prints
per kernel the sample totals by stall reason (A, B, B-A), then the 25
most-sampled instructions of each build with their main reasons.
"Unclassified" is samples no exported reason column claims (on Hopper,
the HGMMA issue waits)."""
import collections, csv, sys


def load(path):
    kernels, current, header = {}, None, None
    for row in csv.reader(open(path)):
        if not row:
            continue
        if row[0] == "Kernel Name":
            current, header = row[1], None
            kernels[current] = []
        elif row[0] == "Address":
            header = row
        elif header and current:
            kernels[current].append(dict(zip(header, row)))
    return kernels


def num(value):
    try:
        return int(value)
    except ValueError:
        return 0


def totals(rows, reasons):
    t = collections.Counter()
    for r in rows:
        samples = num(r["# Samples"])
        claimed = sum(num(r[c]) for c in reasons)
        t["samples"] += samples
        t["unclassified"] += samples - claimed
        for c in reasons:
            t[c] += num(r[c])
    return t


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    pick = sys.argv[3] if len(sys.argv) > 3 else "moe_gemm"
    for name in a:
        if pick not in name or name not in b:
            continue
        reasons = [h for h in a[name][0] if h.startswith("stall_") and "Not Issued" not in h]
        ta, tb = totals(a[name], reasons), totals(b[name], reasons)
        print("==", name)
        for c in ["samples", "unclassified"] + reasons:
            if ta[c] or tb[c]:
                print(f"  {c:26s} {ta[c]:>8d} {tb[c]:>8d} {tb[c] - ta[c]:>+7d}")
        for label, rows in (("A", a[name]), ("B", b[name])):
            print(f"  -- {label}: most-sampled instructions")
            for r in sorted(rows, key=lambda r: -num(r["# Samples"]))[:25]:
                main_reasons = {c[6:]: num(r[c]) for c in reasons if num(r[c]) > 50}
                print(f"  {num(r['# Samples']):6d} {num(r['Instructions Executed']):9d} "
                      f"{r['Source'].strip()[:64]:64s} {main_reasons}")


if __name__ == "__main__":
    main()
