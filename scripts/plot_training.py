#!/usr/bin/env python3
"""T_math against T_comms of one layer's MLP block, per training strategy, from a `podsim sweep`
of a training scenario over the batch (the book's critical-batch pictures): the first swept
key is the x axis; a pair of lines (math solid, communication dashed) per value of the others.

  build/podsim sweep scenarios/training_fsdp_critical_batch.yaml \\
      --set workload.batch_tokens=40800,81600,163200,326400 -o out/train-sweep
  python3 scripts/plot_training.py out/train-sweep/sweep.csv -o out/train-sweep/training.png
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import plotting  # noqa: E402


def main():
    parser = plotting.arguments(__doc__, "sweep_csv", "training.png")
    parser.add_argument("--block", default="mlp", help="per_layer block: mlp or attn")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.ok_rows(args.sweep_csv)
    math_key, comms_key = f"per_layer.{args.block}.t_math_s", f"per_layer.{args.block}.t_comms_s"
    if not rows or math_key not in rows[0]:
        sys.exit("podsim: no training points with " + math_key + " in the sweep")
    swept = plotting.swept_columns(rows)
    x_key = swept[0]
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, points in plotting.group_rows(rows, swept[1:]):
        points.sort(key=lambda r: plotting.number(r, x_key))
        x = [plotting.number(r, x_key) for r in points]
        (line,) = ax.plot(x, [1e6 * plotting.number(r, math_key) for r in points], "o-",
                          label=("T_math " + label).strip())
        ax.plot(x, [1e6 * plotting.number(r, comms_key) for r in points], "s--", color=line.get_color(),
                label=("T_comms " + label).strip())
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(x_key)
    ax.set_ylabel(f"one layer's {args.block} time (us)")
    ax.set_title(rows[0].get("scenario", "training") + ": compute vs communication")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
