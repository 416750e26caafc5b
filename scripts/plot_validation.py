#!/usr/bin/env python3
"""Collective validation: simulated time and the book's formula against message size, a panel
per mesh, a line per collective and axes, from `podsim validate --csv`.

  build/podsim validate --csv out/validate.csv
  python3 scripts/plot_validation.py out/validate.csv -o out/validate.png
"""
import math
import os
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(__file__))
import plotting  # noqa: E402


def main():
    parser = plotting.arguments(__doc__, "validate_csv", "validate.png")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.read_rows(args.validate_csv)
    if not rows or "simulated_s" not in rows[0]:
        sys.exit("podsim: expected the CSV of `podsim validate --csv`")
    meshes = defaultdict(lambda: defaultdict(list))
    for r in rows:
        wraps = "no" not in r["wraparound"]   # "yes", "no" or per axis "X:yes Y:no"
        meshes[r["mesh"] + (" (wraps)" if wraps else " (no wraparound)")][(r["collective"], r["axes"])].append(r)
    n = len(meshes)
    cols = min(3, n)
    fig, axes = plt.subplots(math.ceil(n / cols), cols, figsize=(5 * cols, 4 * math.ceil(n / cols)), squeeze=False)
    # Colour by collective, line style and marker by the axes it runs over: up to 12 series a
    # panel stay apart.
    colours = {"all_gather": "tab:blue", "reduce_scatter": "tab:orange", "all_reduce": "tab:green",
               "all_to_all": "tab:red"}
    styles = [("-", "o"), ("-.", "s"), (":", "^")]
    for ax, (mesh, lines) in zip([a for row in axes for a in row], sorted(meshes.items())):
        axis_sets = sorted({axis for (_, axis) in lines}, key=lambda a: (len(a), a))
        for (collective, axis), points in sorted(lines.items()):
            points.sort(key=lambda r: plotting.number(r, "bytes"))
            x = [plotting.number(r, "bytes") for r in points]
            style, marker = styles[axis_sets.index(axis) % len(styles)]
            colour = colours.get(collective, "tab:gray")
            # AllGather and ReduceScatter take the same time (the book's 2.3): AllGather's marks are
            # large and hollow, so that the ReduceScatter drawn over it leaves them visible.
            gather = collective == "all_gather"
            ax.plot(x, [plotting.number(r, "simulated_s") * 1e6 for r in points], linestyle=style, marker=marker,
                    ms=6 if gather else 3, markerfacecolor="none" if gather else colour, color=colour,
                    label=f"{collective} {axis}")
            ax.plot(x, [plotting.number(r, "analytic_s") * 1e6 for r in points], "--", color=colour, alpha=0.4,
                    linewidth=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(mesh, fontsize=10)
        ax.set_xlabel("bytes")
        ax.set_ylabel("time (us): simulated -o-, book --")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    for ax in [a for row in axes for a in row][n:]:
        ax.axis("off")
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
