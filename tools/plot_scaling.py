#!/usr/bin/env python3
"""Draws the scaling curves `cargo bench --bench scaling` writes (target/scaling/*.csv) as PNG
charts in docs/scaling/ (the ones docs/performance.md links). Needs matplotlib (pip install matplotlib);
the bench itself needs nothing of this.

    cargo bench --bench scaling && python3 tools/plot_scaling.py
"""
import csv
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "target" / "scaling"
OUT = ROOT / "docs" / "scaling"

# (file(s), title, log x axis, y from zero)
CHARTS = [
    (["queues"], "Per-frame cost against send queues (loopback, 64 B)", True),
    (["objects_nop", "objects_alloc"], "Per-command cost against live objects", True),
    (["threads"], "Activation round trip against DPA threads of the process", True),
    (["workers"], "Packet processor (4 DPA threads, 256 in flight) against model workers", False),
]


def read(name):
    with open(SRC / f"{name}.csv", newline="") as f:
        rows = list(csv.reader(f))
    head, body = rows[0], rows[1:]
    return head, [float(r[0]) for r in body], [float(r[1]) for r in body]


def main():
    if not SRC.is_dir():
        sys.exit(f"no {SRC}: run `cargo bench --bench scaling` first")
    OUT.mkdir(parents=True, exist_ok=True)
    for names, title, logx in CHARTS:
        fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=100)
        for name in names:
            head, xs, ys = read(name)
            ax.plot(xs, ys, marker="o", label=head[1])
            ax.set_xlabel(head[0])
        if logx:
            ax.set_xscale("log")
        ax.set_ylim(bottom=0)
        ax.set_title(title, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = OUT / f"{names[0].split('_')[0]}.png"
        fig.savefig(path)
        plt.close(fig)
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    main()
