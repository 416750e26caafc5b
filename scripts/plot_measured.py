#!/usr/bin/env python3
"""Predicted against measured, from `podsim validate --measured ... --csv`: each measurement as
simulated by the ideal machine (crosses) and, when the CSV has them, by its calibration profile
(dots), one colour per profile (a chip generation), on log-log axes with the line y = x and
+-10% bands.

  podsim validate --measured scenarios/profiles/v5e_book.measurements.yaml \\
      --profile scenarios/profiles/v5e_book.yaml --csv out/measured.csv
  podsim validate --measured MEASUREMENTS.yaml --profiles PROFILES_DIR --csv out/measured.csv
  python3 scripts/plot_measured.py out/measured.csv -o out/measured.png
"""
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import plotting  # noqa: E402


def unit_label(rows):
    """Seconds when every field is a time (*_s, a published figure's step time), else as the fields say."""
    if all(r.get("field", "").endswith("_s") for r in rows):
        return "s"
    return "each field's unit: s for *_s fields"


def bands(ax, low, high):
    ax.plot([low, high], [low, high], "k-", linewidth=0.8, label="y = x (predicted = measured)")
    for factor in (0.9, 1.1):
        ax.plot([low, high], [factor * low, factor * high], "k--", linewidth=0.5)
    ax.fill_between([low, high], [0.9 * low, 0.9 * high], [1.1 * low, 1.1 * high], color="gray", alpha=0.15,
                    label="+-10%")


def profiles_of(rows):
    """The profile names in the order rows first name them (a CSV without the column: one)."""
    names = []
    for r in rows:
        name = r.get("profile") or "measurements"
        if name not in names:
            names.append(name)
    return names


def plot_profile(ax, rows, name, colour):
    own = [r for r in rows if (r.get("profile") or "measurements") == name]
    measured = [plotting.number(r, "measured") for r in own]
    ax.scatter(measured, [plotting.number(r, "default_predicted") for r in own], marker="x", color=colour, alpha=0.6,
               label=f"{name}: ideal machine")
    fitted = [(m, plotting.number(r, "profile_predicted")) for m, r in zip(measured, own)]
    fitted = [(m, p) for m, p in fitted if p is not None]
    if fitted:
        ax.scatter([m for m, _ in fitted], [p for _, p in fitted], marker="o", color=colour, label=f"{name}: profile")
    for r, m in zip(own, measured):
        y = plotting.number(r, "profile_predicted") or plotting.number(r, "default_predicted")
        ax.annotate(r["name"], (m, y), fontsize=6, xytext=(3, -8), textcoords="offset points")


def main():
    parser = plotting.arguments(__doc__, "measured_csv", "measured.png")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.read_rows(args.measured_csv)
    if not rows or "measured" not in rows[0]:
        sys.exit("podsim: not a validate --measured CSV (expected columns name, profile, field, measured, ...)")
    fig, ax = plt.subplots(figsize=(7, 6))
    for i, name in enumerate(profiles_of(rows)):
        plot_profile(ax, rows, name, f"C{i % 10}")
    measured = [plotting.number(r, "measured") for r in rows]
    bands(ax, min(measured) / 2, max(measured) * 2)
    unit = unit_label(rows)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"measured ({unit})")
    ax.set_ylabel(f"predicted ({unit})")
    ax.set_title("podsim against measurements, by profile")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
