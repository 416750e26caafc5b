#!/usr/bin/env python3
"""Latency/throughput Pareto of decode steps from a `podsim sweep` over batch size (and context):
time per step (the per-token latency each sequence sees) against tokens/s per chip, a line per
context length, each point labelled with its batch; the rule of thumb (inference.md) dashed.

  podsim sweep scenarios/inference_llama3_70b_pareto_v5e_4x4.yaml \\
      --set workload.context_length=2048,8192 --set workload.batch=1,4,16,32,64,120,240 -o out/pareto
  python3 scripts/plot_pareto.py out/pareto/sweep.csv -o out/pareto/pareto.png
"""
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import plotting  # noqa: E402


def main():
    parser = plotting.arguments(__doc__, "sweep_csv", "pareto.png")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.ok_rows(args.sweep_csv)
    if not rows or "decode_step_time_s" not in rows[0]:
        sys.exit("podsim: no decode points in the sweep (expected a kind: inference, phase: decode scenario)")
    # A line per combination of the swept keys other than the batch (the columns between
    # "point" and "status" in sweep.csv).
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, points in plotting.group_rows(rows, plotting.swept_columns(rows, exclude=("workload.batch",))):
        label = label or "decode"
        points.sort(key=lambda r: plotting.number(r, "workload.batch"))
        x = [1e3 * plotting.number(r, "decode_step_time_s") for r in points]
        y = [plotting.number(r, "tokens_per_s_per_chip") for r in points]
        chips = plotting.number(points[0], "topology.chips") or 1
        rule_x = [1e3 * plotting.number(r, "rule_of_thumb_s") for r in points]
        rule_y = [plotting.number(r, "workload.batch") / (plotting.number(r, "rule_of_thumb_s") * chips) for r in points]
        (line,) = ax.plot(x, y, "o-", label=f"simulated, {label}")
        ax.plot(rule_x, rule_y, "--", color=line.get_color(), alpha=0.6, label=f"rule of thumb, {label}")
        for r, xi, yi in zip(points, x, y):
            fits = plotting.number(r, "fits_hbm")
            ax.annotate(f"B={int(plotting.number(r, 'workload.batch'))}" + ("" if fits != 0 else " (OOM)"),
                        (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xlabel("time per decode step = per-token latency (ms)")
    ax.set_ylabel("throughput (tokens/s per chip)")
    ax.set_title(rows[0].get("scenario", "decode") + ": latency vs throughput")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
