#!/usr/bin/env python3
"""Predicted against measured, from `podsim validate --measured ... --csv`: each measurement as
simulated by the ideal machine and, when the CSV has them, by a calibration profile, on log-log
axes with the diagonal and a +-10% band.

  podsim validate --measured scenarios/profiles/v5e_book.measurements.yaml \\
      --profile scenarios/profiles/v5e_book.yaml --csv out/measured.csv
  python3 scripts/plot_measured.py out/measured.csv -o out/measured.png
"""
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import plotting  # noqa: E402


def main():
    parser = plotting.arguments(__doc__, "measured_csv", "measured.png")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.read_rows(args.measured_csv)
    if not rows or "measured" not in rows[0]:
        sys.exit("podsim: not a validate --measured CSV (expected columns name, field, measured, ...)")
    measured = [plotting.number(r, "measured") for r in rows]
    fig, ax = plt.subplots(figsize=(7, 6))
    ax.scatter(measured, [plotting.number(r, "default_predicted") for r in rows], marker="x", label="ideal machine")
    profile = [plotting.number(r, "profile_predicted") for r in rows]
    if any(p is not None for p in profile):
        ax.scatter([m for m, p in zip(measured, profile) if p is not None], [p for p in profile if p is not None],
                   marker="o", facecolors="none", edgecolors="C1", label="calibration profile")
    low, high = min(measured) / 2, max(measured) * 2
    ax.plot([low, high], [low, high], "k-", linewidth=0.8, label="predicted = measured")
    ax.fill_between([low, high], [0.9 * low, 0.9 * high], [1.1 * low, 1.1 * high], color="gray", alpha=0.15,
                    label="+-10%")
    for r, m in zip(rows, measured):
        ax.annotate(r["name"], (m, plotting.number(r, "default_predicted")), fontsize=6, xytext=(3, -8),
                    textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured")
    ax.set_ylabel("predicted")
    ax.set_title("podsim against measurements")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
