#!/usr/bin/env python3
"""The step-time distribution of random stragglers, from `podsim run --draws N`: a histogram of
the draws' step times with the pod without stragglers and the mean, p50, p90 and p99 marked
(draws.json), and each draw's step against its slowest chip's factor (draws.csv), which for a
synchronous step lies on one line: T = E + f_max C.

  podsim run scenarios/perturbation_stragglers_fsdp_v5p_4x4x4.yaml --draws 100 -o out/draws
  python3 scripts/plot_draws.py out/draws/draws.csv -o out/draws/draws.png
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import plotting  # noqa: E402


def main():
    parser = plotting.arguments(__doc__, "draws_csv", "draws.png")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.read_rows(args.draws_csv)
    if not rows or "step_time_s" not in rows[0]:
        sys.exit(f"podsim: {args.draws_csv} is not a draws.csv (expected podsim run --draws's step_time_s column)")
    summary_path = os.path.join(os.path.dirname(args.draws_csv) or ".", "draws.json")
    try:
        with open(summary_path) as f:
            summary = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"podsim: cannot read {summary_path} beside it: {e}")
    times = [plotting.number(r, "step_time_s") for r in rows]
    factors = [plotting.number(r, "max_compute_slowdown") for r in rows]
    scale, unit = plotting.time_unit(times + [summary["uniform_s"]])
    fig, (hist, line) = plt.subplots(1, 2, figsize=(11, 4.5))
    hist.hist([scale * t for t in times], bins=min(40, max(5, len(times) // 3)), color="tab:blue", alpha=0.7)
    marks = [("without stragglers", summary["uniform_s"], "k"), ("mean", summary["mean_s"], "tab:red"),
             ("p50", summary["p50_s"], "tab:green"), ("p90", summary["p90_s"], "tab:orange"),
             ("p99", summary["p99_s"], "tab:purple")]
    for label, value, colour in marks:
        hist.axvline(scale * value, color=colour, linestyle="--", label=f"{label} {scale * value:.4g} {unit}")
    hist.set_xlabel(f"{summary['metric']} ({unit})")
    hist.set_ylabel("draws")
    hist.legend(fontsize=8)
    hist.set_title(f"{summary['scenario']}: {summary['draws']} draws")
    line.plot(factors, [scale * t for t in times], "o", alpha=0.7)
    line.set_xlabel("slowest chip's compute slowdown (1: none slowed)")
    line.set_ylabel(f"{summary['metric']} ({unit})")
    line.grid(alpha=0.3)
    line.set_title("each draw against its slowest chip")
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
