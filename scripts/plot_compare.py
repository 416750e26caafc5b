#!/usr/bin/env python3
"""Bar chart of `podsim compare`'s compare.csv: the workload's time on each mesh (and chip),
with algorithm bandwidth, MFU or tokens/s per chip beside it where the workload has them.

  build/podsim compare scenarios/v4p_4x4x4_book_question2.yaml --topologies 4x4x4,8x8,16x4,2x4x8 -o out/compare
  python3 scripts/plot_compare.py out/compare/compare.csv -o out/compare/compare.png
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import plotting  # noqa: E402


def main():
    parser = plotting.arguments(__doc__, "compare_csv", "compare.png")
    parser.add_argument("--title", help="the figure's title (default: the CSV's directory)")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.ok_rows(args.compare_csv)
    if not rows:
        sys.exit("podsim: no successful runs in " + args.compare_csv)
    chips = {r["chip"] for r in rows}
    labels = [r["topology"] + ("" if len(chips) == 1 else "\n" + r["chip"]) +
              ("\nwraps " + r["wraparound"] if r["wraparound"] != "-" else "") for r in rows]
    second = next((k for k in ("tokens_per_s_per_chip", "mfu", "algbw_Bps") if rows[0].get(k)), None)
    fig, axes = plt.subplots(1, 2 if second else 1, figsize=(11 if second else 6, 4.5), squeeze=False)
    seconds = [plotting.number(r, "time_s") for r in rows]
    factor, unit = plotting.time_unit(seconds)
    times = [factor * t for t in seconds]
    ax = axes[0][0]
    bars = ax.bar(labels, times, color="tab:blue")
    ax.bar_label(bars, fmt="%.3g", fontsize=8)
    ax.set_ylabel(f"{plotting.metric_label(rows[0]['time_metric'])} ({unit})")
    ax.set_title("time (lower is better)")
    if second:
        scale, unit = {"tokens_per_s_per_chip": (1, "tokens/s per chip"), "mfu": (100, "MFU (%)"),
                       "algbw_Bps": (1e-9, "algorithm bandwidth (GB/s)")}[second]
        values = [scale * (plotting.number(r, second) or 0) for r in rows]
        ax2 = axes[0][1]
        bars2 = ax2.bar(labels, values, color="tab:green")
        ax2.bar_label(bars2, fmt="%.3g", fontsize=8)
        ax2.set_ylabel(unit)
        ax2.set_title(unit.split(" (")[0] + " (higher is better)")
    for a in axes[0]:
        a.tick_params(axis="x", labelsize=8)
        a.grid(axis="y", alpha=0.3)
    title = args.title or os.path.basename(os.path.dirname(os.path.abspath(args.compare_csv)))
    fig.suptitle(title + ": the same workload per mesh")
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
