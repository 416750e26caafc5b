#!/usr/bin/env python3
"""Latency/throughput Pareto of decode steps from a `podsim sweep` over batch size (and context):
time per step (the per-token latency each sequence sees) against tokens/s per chip, a line per
combination of the other swept keys; the rule of thumb (inference.md) in black, one line per
distinct curve (it does not depend on every swept key: collective matmuls leave it alone).
Points whose memory does not fit in HBM are drawn hollow and not joined into the lines. Each
batch is labelled once, beside the rule of thumb's point for it; throughput is on a log scale,
where the small batches would otherwise sit on one another.

  podsim sweep scenarios/inference_llama3_70b_pareto_v5e_4x4.yaml \\
      --set workload.context_length=2048,8192 --set workload.batch=1,4,16,32,64,120,240 -o out/pareto
  python3 scripts/plot_pareto.py out/pareto/sweep.csv -o out/pareto/pareto.png
"""
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import plotting  # noqa: E402

RULE_STYLES = ["--", ":", "-.", (0, (6, 2, 1, 2, 1, 2))]


def fits(row):
    """fits_hbm as the sweep writes it (1/0, or true/false); a row without it fits."""
    value = row.get("fits_hbm", "")
    return value not in ("0", "false", "False")


def rule_curves(groups):
    """The rule of thumb's distinct curves: groups whose curve is the same share one, labelled by
    the swept values those groups have in common."""
    curves = {}
    for label, points, _ in groups:
        chips = plotting.number(points[0], "topology.chips") or 1
        curve = tuple((int(plotting.number(r, "workload.batch")),
                       (round(1e3 * plotting.number(r, "rule_of_thumb_s"), 9),
                        round(plotting.number(r, "workload.batch") / (plotting.number(r, "rule_of_thumb_s") * chips), 6)))
                      for r in points)
        curves.setdefault(curve, []).append(label)
    out = []
    for curve, labels in curves.items():
        parts = [set(label.split(", ")) for label in labels]
        common = [p for p in labels[0].split(", ") if all(p in s for s in parts)]
        out.append((curve, ", ".join(common) if len(labels) > 1 else labels[0]))
    return out


def label_batches(ax, curves):
    """Each batch once, at its leftmost rule-of-thumb point (the rule is the fastest a step can
    be, so every simulated point lies to its right): to its left where the curve climbs, above it
    where the curve has flattened (the batch no longer buys throughput)."""
    leftmost = {}
    for curve, _ in curves:
        for batch, (x, y) in curve:
            if batch not in leftmost or x < leftmost[batch][0]:
                leftmost[batch] = (x, y)
    previous_y = None
    for batch, (x, y) in sorted(leftmost.items()):
        flat = previous_y is not None and y < 1.3 * previous_y
        ax.annotate(f"B={batch}", (x, y), textcoords="offset points", xytext=(0, 5) if flat else (-6, 0),
                    ha="center" if flat else "right", va="bottom" if flat else "center", fontsize=7)
        previous_y = y


def draw(plt, rows):
    """The figure for a sweep's decode rows."""
    # A line per combination of the swept keys other than the batch (the columns between
    # "point" and "status" in sweep.csv).
    fig, ax = plt.subplots(figsize=(9, 5.5))
    groups = []
    any_oom = False
    for label, points in plotting.group_rows(rows, plotting.swept_columns(rows, exclude=("workload.batch",))):
        label = label or "decode"
        points.sort(key=lambda r: plotting.number(r, "workload.batch"))
        xy = [(1e3 * plotting.number(r, "decode_step_time_s"), plotting.number(r, "tokens_per_s_per_chip")) for r in points]
        fitting = [p for r, p in zip(points, xy) if fits(r)]
        oom = [p for r, p in zip(points, xy) if not fits(r)]
        (line,) = ax.plot([p[0] for p in fitting], [p[1] for p in fitting], "o-", label=f"simulated, {label}")
        if oom:
            any_oom = True
            ax.plot([p[0] for p in oom], [p[1] for p in oom], "o", markerfacecolor="white", color=line.get_color())
        groups.append((label, points, xy))
    curves = rule_curves(groups)
    for (curve, label), style in zip(curves, RULE_STYLES * len(groups)):
        ax.plot([x for _, (x, _) in curve], [y for _, (_, y) in curve], linestyle=style, color="black", alpha=0.7,
                linewidth=1.2, label=f"rule of thumb, {label}")
    if any_oom:
        ax.plot([], [], "o", markerfacecolor="white", color="grey", label="does not fit in HBM (not joined)")
    label_batches(ax, curves)
    ax.set_yscale("log")
    ax.set_xlabel("time per decode step = per-token latency (ms)")
    ax.set_ylabel("throughput (tokens/s per chip, log scale)")
    ax.set_title(rows[0].get("scenario", "decode") + ": latency vs throughput")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right", handlelength=4)
    return fig


def main():
    parser = plotting.arguments(__doc__, "sweep_csv", "pareto.png")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.ok_rows(args.sweep_csv)
    if not rows or "decode_step_time_s" not in rows[0]:
        sys.exit("podsim: no decode points in the sweep (expected a kind: inference, phase: decode scenario)")
    plotting.save(draw(plt, rows), args.output)


if __name__ == "__main__":
    main()
