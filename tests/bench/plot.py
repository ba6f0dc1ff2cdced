#!/usr/bin/env python3
"""Bandwidth plots from the benchmark tables (compare.sh / gpu-suite.sh output, e.g. bench.txt).

    python3 tests/bench/plot.py BENCH_TXT OUT.png

Reads every table row of the form
    metric  native  tcp  shm  tcp/nat  shm/nat  unit        (values may be n/a)
and draws, for native, vmcuda over TCP and vmcuda over the shared-memory ring:
  - H2D and D2H pageable bandwidth against transfer size (rows h2d_pageable_<N>KiB / d2h_pageable_<N>KiB);
  - when the block-size sweep is present (rows sweep_{h2d,d2h}_pageable_blk<B>_<S>), bandwidth against
    VMCUDA_BLOCK_SIZE for each transfer size (native as a flat reference line).
Other lines are ignored. Exit status 1 when there is nothing to plot. Needs matplotlib (Agg backend).
"""
import re
import sys

ROW = re.compile(r"^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$")
SIZE = re.compile(r"^(h2d|d2h)_pageable_(\d+)(KiB|MiB|GiB)$")
SWEEP = re.compile(r"^sweep_(h2d|d2h)_pageable_blk(\d+)(KiB|MiB|GiB)_(\d+)(KiB|MiB|GiB)$")
UNIT = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
MODES = ("native", "tcp", "shm")
STYLE = {"native": dict(color="black", marker="o"), "tcp": dict(color="tab:blue", marker="s"),
         "shm": dict(color="tab:orange", marker="^")}
LABEL = {"native": "native", "tcp": "vmcuda, TCP", "shm": "vmcuda, shared-memory ring"}


def num(s):
    try:
        return float(s)
    except ValueError:
        return None


def parse(path):
    """{direction: {size: {mode: GB/s}}}, {direction: {size: {block: {mode: GB/s}}}}"""
    sizes, sweep = {}, {}
    with open(path, errors="replace") as f:
        for line in f:
            m = ROW.match(line)
            if not m or m.group(7) != "GB/s":
                continue
            vals = dict(zip(MODES, (num(m.group(i)) for i in (2, 3, 4))))
            name = m.group(1)
            s = SIZE.match(name)
            if s:
                sizes.setdefault(s.group(1), {})[int(s.group(2)) * UNIT[s.group(3)]] = vals
                continue
            w = SWEEP.match(name)
            if w:
                block = int(w.group(2)) * UNIT[w.group(3)]
                size = int(w.group(4)) * UNIT[w.group(5)]
                sweep.setdefault(w.group(1), {}).setdefault(size, {})[block] = vals
    return sizes, sweep


def bytes_label(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div}{unit}"
    return str(b)


def main():
    if len(sys.argv) != 3:
        sys.stderr.write("usage: plot.py BENCH_TXT OUT.png\n")
        return 2
    sizes, sweep = parse(sys.argv[1])
    if not sizes and not sweep:
        sys.stderr.write(f"plot.py: no bandwidth rows in {sys.argv[1]}\n")
        return 1
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = (1 if sizes else 0) + (1 if sweep else 0)
    fig, axes = plt.subplots(rows, 2, figsize=(13, 4.8 * rows), squeeze=False)
    r = 0
    if sizes:
        for c, d in enumerate(("h2d", "d2h")):
            ax = axes[r][c]
            pts = sizes.get(d, {})
            xs = sorted(pts)
            for mode in MODES:
                x = [s for s in xs if pts[s][mode] is not None]
                ax.plot(x, [pts[s][mode] for s in x], label=LABEL[mode], **STYLE[mode])
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs)
            ax.set_xticklabels([bytes_label(s) for s in xs], rotation=45)
            ax.set_xlabel("transfer size (bytes)")
            ax.set_ylabel("GB/s (1e9 bytes/s)")
            ax.set_title(f"{'host to device' if d == 'h2d' else 'device to host'}, pageable: bandwidth vs transfer size")
            ax.grid(True, alpha=0.3)
            ax.legend()
        r += 1
    if sweep:
        widths = {}
        for c, d in enumerate(("h2d", "d2h")):
            ax = axes[r][c]
            per_size = sweep.get(d, {})
            all_sizes = sorted(per_size)
            for k, size in enumerate(all_sizes):
                widths[size] = 0.8 + 1.2 * k / max(1, len(all_sizes) - 1)
                pts = per_size[size]
                blocks = sorted(pts)
                for mode in ("tcp", "shm"):
                    x = [b for b in blocks if pts[b][mode] is not None]
                    if x:
                        ax.plot(x, [pts[b][mode] for b in x], linewidth=widths[size],
                                label=f"{LABEL[mode]}, {bytes_label(size)}iB", alpha=0.5 + 0.5 * k / max(1, len(all_sizes) - 1),
                                **STYLE[mode])
                nat = [pts[b]["native"] for b in blocks if pts[b]["native"]]
                if nat:
                    ax.axhline(nat[0], color="black", linestyle=":", linewidth=widths[size],
                               label=f"native, {bytes_label(size)}iB")
            blocks = sorted({b for s in per_size.values() for b in s})
            ax.set_xscale("log", base=2)
            if blocks:
                ax.set_xticks(blocks)
                ax.set_xticklabels([bytes_label(b) for b in blocks])
            ax.set_xlabel("VMCUDA_BLOCK_SIZE (bytes)")
            ax.set_ylabel("GB/s (1e9 bytes/s)")
            ax.set_title(f"{'host to device' if d == 'h2d' else 'device to host'}, pageable: bandwidth vs block size")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)
    print(f"plot.py: wrote {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
