#!/usr/bin/env python3
"""Latency against offered load from `podsim capacity`'s capacity.csv: one panel per SLO, the
statistic it bounds at every rate simulated (a line per server count), the SLO's bound, and the
rate the search found (the highest rate meeting every SLO with every lower tested rate meeting
them too, the row marked found).

  build/podsim capacity scenarios/serving_llama3_8b_swap_preemption_v5e_2x2.yaml \\
      --slo 'ttft_p99<=2s' --slo 'tpot_p99<=100ms' -o out/capacity
  python3 scripts/plot_capacity.py out/capacity/capacity.csv -o out/capacity/capacity.png
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import plotting  # noqa: E402


def slo_names(rows):
    """The SLOs' column stems: each has slo_<stem>_s, slo_<stem>_bound_s and slo_<stem>_met."""
    return [c[len("slo_"): -len("_met")] for c in rows[0] if c.startswith("slo_") and c.endswith("_met")]


def main():
    parser = plotting.arguments(__doc__, "capacity_csv", "capacity.png")
    parser.add_argument("--title", help="the figure's title (default: the CSV's directory)")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.read_rows(args.capacity_csv)
    if not rows:
        sys.exit("podsim: no simulations in " + args.capacity_csv)
    names = slo_names(rows)
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4.5), squeeze=False)
    groups = plotting.group_rows(rows, ["model_servers"])
    for ax, name in zip(axes[0], names):
        seconds = [plotting.number(r, "slo_" + name + "_s") for r in rows]
        bound = plotting.number(rows[0], "slo_" + name + "_bound_s")
        factor, unit = plotting.time_unit(seconds + [bound])
        for label, group in groups:
            group = sorted(group, key=lambda r: plotting.number(r, "rate_per_s"))
            rates = [plotting.number(r, "rate_per_s") for r in group]
            line, = ax.plot(rates, [factor * plotting.number(r, "slo_" + name + "_s") for r in group], marker="o",
                            label=label.replace("model_servers=", "") + " server(s)")
            for r in group:
                if r["found"] == "true":
                    ax.axvline(plotting.number(r, "rate_per_s"), color=line.get_color(), linestyle="--", alpha=0.7)
        ax.axhline(factor * bound, color="tab:red", linestyle=":", label="SLO")
        ax.set_xlabel("offered load (requests/s)")
        ax.set_ylabel(f"{name.replace('_', ' ')} ({unit})")
        ax.set_title(f"{name.replace('_', ' ')} <= {factor * bound:.4g} {unit}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    title = args.title or os.path.basename(os.path.dirname(os.path.abspath(args.capacity_csv)))
    fig.suptitle(title + ": latency against load (dashed: the highest rate meeting every SLO)")
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
