#!/usr/bin/env python3
"""Plot one or more `moejit bench --json FILE` outputs into a PNG.

    python3 tools/bench/plot.py -o out.png a.json [b.json ...] [--label NAME ...]

One row per shape: left panel ms vs tokens, right panel % of the hardware
floor vs tokens; shapes measured at one token count that differ only in
experts share one row against experts. Each (file, config) pair is one
series. Cases that failed the correctness check are marked with a red x.
"""
import argparse
import json
import os
import sys

try:
    import matplotlib
except ImportError:  # say what to install instead of a bare traceback
    sys.exit("plot.py: needs matplotlib (python3 -m pip install matplotlib)")
matplotlib.use("Agg")  # headless: CI and the bench boxes have no display
import matplotlib.pyplot as plt  # noqa: E402  (must follow use("Agg"))
from matplotlib.ticker import LogFormatter, NullFormatter  # noqa: E402

REQUIRED = ("shape", "tokens", "ms")


class PlainLogFormatter(LogFormatter):
    # LogFormatter decides which log ticks get a label; print those as plain
    # numbers (0.4, 1.5) rather than 4e-01 or 4x10^-1.
    def __call__(self, x, pos=None):
        return f"{x:g}" if super().__call__(x, pos) else ""


def fail(msg):
    # Exit 2 like argparse does for usage errors, so scripts can tell "bad
    # input" from a crash (1) without parsing text.
    print(f"plot.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path} is not valid JSON: {e}")
    cases = doc.get("cases") if isinstance(doc, dict) else None
    if not isinstance(cases, list) or not cases:
        fail(f"{path} has no cases (expected the output of `moejit bench --json`)")
    for c in cases:
        if not isinstance(c, dict) or any(k not in c for k in REQUIRED):
            fail(f"{path}: a case lacks one of {', '.join(REQUIRED)}: {c!r}")
    # Old files have no "meta"; treat it as empty rather than special-casing.
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    return {"path": path, "device": doc.get("device"), "meta": meta, "cases": cases}


def file_label(run):
    m = run["meta"]
    if m.get("commit"):
        # Short hash and the day are enough to tell runs apart in a legend.
        return " ".join(s for s in (str(m["commit"])[:10], str(m.get("date", ""))[:10]) if s)
    return os.path.splitext(os.path.basename(run["path"]))[0]


# The meta fields that explain a difference in ms between two runs.
FOOTER = (("moejit_version", "moejit {}"), ("nvrtc_version", "NVRTC {}"),
          ("driver_version", "driver {}"), ("sm_clock_max_mhz", "SM max {} MHz"),
          ("mem_clock_max_mhz", "mem max {} MHz"))


def footer_line(m):
    return ", ".join(fmt.format(m[k]) for k, fmt in FOOTER if m.get(k))


def build_series(runs, labels):
    # Keep configs in the order the file lists them so colours are stable.
    per_file = [list(dict.fromkeys(str(c.get("config", "")) for c in r["cases"])) for r in runs]
    # Name the config only when it tells series apart (several configs anywhere).
    show_config = len({cfg for cfgs in per_file for cfg in cfgs}) > 1
    series = []
    for run, cfgs, base in zip(runs, per_file, labels):
        for cfg in cfgs:
            name = f"{base} [{cfg}]" if show_config and cfg else base
            cases = [c for c in run["cases"] if str(c.get("config", "")) == cfg]
            series.append({"label": name, "cases": cases})
    return series


def split_shapes(shapes):
    # Shape strings are long and mostly equal (only experts varies in the seed
    # set): print the shared key=value parts once in the title and only the
    # differing parts per row, so panel titles fit.
    parts = [s.split(",") for s in shapes]
    common = [p for p in parts[0] if all(p in q for q in parts)]
    rows = [",".join(p for p in q if p not in common) or "all cases" for q in parts]
    return ",".join(common), rows


def experts_of(shape):
    for part in shape.split(","):
        if part.startswith("experts="):
            return int(part.split("=", 1)[1])
    return None


def plan_rows(runs):
    """One row per shape measured at several token counts (x = tokens); the
    shapes measured at one shared token count that differ only in experts
    (the seed set's E=8..64 cases) share one row with x = experts, instead
    of a row of single points each."""
    cases = [c for r in runs for c in r["cases"]]
    shapes = list(dict.fromkeys(c["shape"] for c in cases))
    tokens = {sh: {c["tokens"] for c in cases if c["shape"] == sh} for sh in shapes}
    singles = [sh for sh in shapes if len(tokens[sh]) == 1 and experts_of(sh) is not None]
    rest = lambda sh: ",".join(p for p in sh.split(",") if not p.startswith("experts="))  # noqa: E731
    sweep = []
    if len(singles) >= 2 and len({next(iter(tokens[sh])) for sh in singles}) == 1 and \
            len({rest(sh) for sh in singles}) == 1:
        sweep = singles
    common, names = split_shapes(shapes)
    rows = [{"title": name, "selects": (lambda c, sh=sh: c["shape"] == sh),
             "x": lambda c: c["tokens"], "xlabel": "tokens (log2)"}
            for sh, name in zip(shapes, names) if sh not in sweep]
    if sweep:
        # The sweep also takes the same T from the shapes with rows of
        # their own (the seed set's E=128 at T=8192).
        t, base = next(iter(tokens[sweep[0]])), rest(sweep[0])
        def selects(c):
            return c["tokens"] == t and rest(c["shape"]) == base and \
                experts_of(c["shape"]) is not None
        experts = sorted({experts_of(c["shape"]) for c in cases if selects(c)})
        rows.append({"title": f"T={t}, experts {experts[0]}..{experts[-1]}", "selects": selects,
                     "x": lambda c: experts_of(c["shape"]), "xlabel": f"experts (log2), T={t}"})
    return common, rows


def plot(runs, labels, series, out):
    common, rows = plan_rows(runs)
    fig, axes = plt.subplots(len(rows), 2, figsize=(12, 1.2 + 2.9 * len(rows)), squeeze=False)
    # Default cycle minus C3 (red): red is reserved for the incorrect marker.
    colours = [f"C{i}" for i in (0, 1, 2, 4, 5, 6, 7, 8, 9)]
    any_bad, handles = False, {}  # handles: series index -> its first line
    for index, row in enumerate(rows):
        ax_ms, ax_pct = axes[index]
        tokens_seen = set()  # the x values of this row (tokens, or experts)
        for i, s in enumerate(series):
            pts = sorted((c for c in s["cases"] if row["selects"](c)), key=row["x"])
            if not pts:
                continue
            colour = colours[i % len(colours)]
            xs = [row["x"](c) for c in pts]
            tokens_seen.update(xs)
            # The legend takes each series' first line: not every series has
            # every shape (a "tuning" config may only cover the experts sweep).
            (line,) = ax_ms.plot(xs, [c["ms"] for c in pts], "o-", color=colour, ms=4,
                                 label=s["label"])
            handles.setdefault(i, line)
            pct = [(row["x"](c), c["pct_of_floor"]) for c in pts
                   if c.get("pct_of_floor") is not None]
            if pct:
                ax_pct.plot(*zip(*pct), "o-", color=colour, ms=4)
            # A fast wrong answer must not pass for a win: overlay a red x.
            bad = [c for c in pts if c.get("correct") is False]
            any_bad = any_bad or bool(bad)
            for ax, key in ((ax_ms, "ms"), (ax_pct, "pct_of_floor")):
                xy = [(row["x"](c), c[key]) for c in bad if c.get(key) is not None]
                if xy:
                    ax.plot(*zip(*xy), "x", color="red", ms=10, mew=2)
        top = max([100.0] + [c.get("pct_of_floor") or 0 for s in series for c in s["cases"]
                             if row["selects"](c)])
        ax_pct.set_ylim(0, top * 1.02)
        ax_ms.set_yscale("log")
        # Minor ticks get labels only when the range is too narrow for decades.
        ax_ms.yaxis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
        ax_ms.yaxis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False,
                                                          minor_thresholds=(1, 0.4)))
        lo, hi = ax_ms.get_ylim()
        if hi / lo < 1.5:  # one token count: don't blow 1% noise up to full height
            mid = (lo * hi) ** 0.5
            ax_ms.set_ylim(mid / 1.25, mid * 1.25)
        ax_ms.set_ylabel("ms (log)")
        ax_pct.set_ylabel("% of hardware floor")
        against = row["xlabel"].split(" ")[0]
        ax_ms.set_title(f"{row['title']}: ms vs {against}", fontsize=10)
        ax_pct.set_title(f"{row['title']}: % of hardware floor vs {against}", fontsize=10)
        for ax in (ax_ms, ax_pct):
            ax.set_xscale("log", base=2)
            # Label the measured token counts themselves, not powers of two
            # as 2^k, so a reader can match a point to a case name.
            ticks = sorted(tokens_seen)
            ax.set_xticks(ticks, [str(t) for t in ticks], fontsize=7)
            ax.xaxis.set_minor_formatter(NullFormatter())
            if len(ticks) == 1:  # a single point: give it some room either side
                ax.set_xlim(ticks[0] / 2, ticks[0] * 2)
            ax.grid(True, which="major", alpha=0.3)
        if index == len(rows) - 1 or row["xlabel"] != rows[-1]["xlabel"]:
            ax_ms.set_xlabel(row["xlabel"])
            ax_pct.set_xlabel(row["xlabel"])
    legend = [handles[i] for i in sorted(handles)]
    if any_bad:
        legend += axes[0][0].plot([], [], "x", color="red", ms=10, mew=2,
                                  label="incorrect (correct=false)")

    devices = list(dict.fromkeys(r["meta"].get("gpu") or r["device"] or "unknown device"
                                 for r in runs))
    lines = [(lbl, footer_line(r["meta"])) for r, lbl in zip(runs, labels)
             if footer_line(r["meta"])]
    # Footer: the software/clock context, once if every file has the same,
    # else per file (named, so an old meta-less file isn't read as covered).
    footer = ""
    if lines:
        same = len(lines) == len(runs) and len({t for _, t in lines}) == 1
        footer = lines[0][1] if same else "\n".join(f"{lbl}: {t}" for lbl, t in lines)
    # Lay out by hand, in inches: constrained layout overlaps an outside
    # legend with the suptitle, and ignores fig.text footers.
    h = fig.get_figheight()
    ncols = min(3, len(legend))
    top_in = 0.7 + 0.22 * -(-len(legend) // ncols)  # title + legend rows
    bottom_in = (0.14 * (footer.count("\n") + 1) + 0.1) if footer else 0.05
    fig.tight_layout(rect=(0, bottom_in / h, 1, 1 - top_in / h))
    fig.suptitle(f"{' vs '.join(devices)}\n{common}", fontsize=12, y=1 - 0.05 / h, va="top")
    fig.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, 1 - 0.62 / h),
               ncols=ncols, fontsize=8)
    if footer:
        fig.text(0.5, 0.05 / h, footer, ha="center", va="bottom", fontsize=7, color="0.35")
    try:
        fig.savefig(out, dpi=110)
    except OSError as e:
        fail(f"cannot write {out}: {e.strerror}")
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(description="Plot `moejit bench --json` outputs into a PNG.")
    p.add_argument("inputs", nargs="+", metavar="FILE.json", help="bench --json outputs")
    p.add_argument("-o", "--output", required=True, help="PNG to write")
    p.add_argument("--label", nargs="+", action="extend", default=[], metavar="NAME",
                   help="series label per input file, in file order (overrides meta/basename);"
                   " put it after the files, or end it with --")
    args = p.parse_args(argv)
    if len(args.label) > len(args.inputs):
        fail(f"{len(args.label)} labels for {len(args.inputs)} input files")
    runs = [load(path) for path in args.inputs]
    # Labels override the first N files; the rest keep their meta/basename.
    labels = args.label + [file_label(r) for r in runs[len(args.label):]]
    plot(runs, labels, build_series(runs, labels), args.output)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
