#!/usr/bin/env python3
"""Plans of `podsim plan`'s plan.csv: the step time of the first --top plans by rank (those not
simulated, bounded out or over the budget, hollow at their lower bound), and the memory per chip
of every plan that has one against the chip's HBM (--hbm-bytes): filled where it fits and was
simulated, hollow where it fits but was not simulated, crosses where it does not fit. Plans that
cannot be built have no memory and are counted in the title. `podsim plan -o DIR` draws
DIR/plan.png with it.

  build/podsim plan scenarios/training_llama2_7b_fsdp_compute_bound.yaml -o out/plan
  python3 scripts/plot_plan.py out/plan/plan.csv --hbm-bytes 95e9 -o out/plan/plan.png
"""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import plotting  # noqa: E402

GIB = 2.0 ** 30


def true(row, key):
    return row.get(key) == "true"


def step_panel(ax, rows, top):
    """Horizontal bars, the fastest at the top: each plan's simulated step, or its lower bound."""
    shown = [r for r in rows if plotting.number(r, "step_time_s") is not None or
             (plotting.number(r, "lower_bound_s") or 0) > 0][:top]
    seconds = [plotting.number(r, "step_time_s") or plotting.number(r, "lower_bound_s") for r in shown]
    factor, unit = plotting.time_unit(seconds)
    for i, (r, s) in enumerate(zip(shown, seconds)):
        simulated = true(r, "simulated")
        ax.barh(i, factor * s, height=0.7, color="tab:blue" if simulated else "white", edgecolor="tab:blue",
                hatch=None if simulated else "//")
    ax.set_yticks(range(len(shown)))
    ax.set_yticklabels([f"{r['rank']}. {r['plan']}" for r in shown], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"step time ({unit})")
    from matplotlib.patches import Patch
    handles = [Patch(facecolor="tab:blue", edgecolor="tab:blue", label="simulated step")]
    if not all(true(r, "simulated") for r in shown):
        handles.append(Patch(facecolor="white", edgecolor="tab:blue", hatch="//",
                             label="not simulated (bounded out or over the budget): its lower bound, compute alone"))
    ax.legend(handles=handles, fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.6 / (len(shown) + 2)),
              ncol=2, frameon=False)
    ax.set_title(f"step time of the first {len(shown)} plans by rank (shorter is better)", fontsize=9)
    ax.grid(axis="x", alpha=0.3)


def memory_panel(ax, rows, hbm_bytes):
    """Memory per chip by rank, against the HBM line."""
    kinds = [("fits, simulated", "o", "tab:blue", "tab:blue", lambda r: true(r, "fits_hbm") and true(r, "simulated")),
             ("fits, not simulated", "o", "white", "tab:blue",
              lambda r: true(r, "fits_hbm") and not true(r, "simulated")),
             ("does not fit", "x", "tab:red", "tab:red", lambda r: not true(r, "fits_hbm"))]
    with_memory = [r for r in rows if (plotting.number(r, "memory_per_chip_bytes") or 0) > 0]
    for label, marker, face, edge, keep in kinds:
        chosen = [r for r in with_memory if keep(r)]
        if chosen:
            ax.scatter([int(r["rank"]) for r in chosen], [plotting.number(r, "memory_per_chip_bytes") / GIB for r in chosen],
                       marker=marker, facecolors=face, edgecolors=edge if marker != "x" else None,
                       color=edge if marker == "x" else None, s=18, label=label)
    if hbm_bytes:
        ax.axhline(hbm_bytes / GIB, color="black", linestyle="--", linewidth=1, label=f"HBM {hbm_bytes / GIB:.1f} GiB")
    ax.set_yscale("log")
    # Sizes as numbers (20, 50, 100), not powers of ten: a plan's memory is read off the axis.
    from matplotlib.ticker import FuncFormatter
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    low, high = ax.get_ylim()
    digits = "23456789" if high / low < 10 else "25"   # within a decade every minor tick, else 2s and 5s
    ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in digits else ""))
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("rank")
    ax.set_ylabel("memory per chip (GiB, log scale)")
    impossible = len(rows) - len(with_memory)
    ax.set_title(f"memory per chip of {len(with_memory)} plans" +
                 (f" ({impossible} that cannot be built have none: not drawn)" if impossible else ""), fontsize=9)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4, frameon=False)
    ax.grid(alpha=0.3, which="both")


def main():
    parser = plotting.arguments(__doc__, "plan_csv", "plan.png")
    parser.add_argument("--hbm-bytes", type=float, help="the chip's HBM, drawn as a line on the memory panel")
    parser.add_argument("--top", type=int, default=20, help="plans on the step-time panel (default 20)")
    parser.add_argument("--title", help="the figure's title (default: the CSV's directory)")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.read_rows(args.plan_csv)
    if not rows or "memory_per_chip_bytes" not in rows[0]:
        sys.exit("podsim: no plans in " + args.plan_csv + " (expected podsim plan's plan.csv)")
    top = max(1, args.top)
    bars = min(top, len(rows))
    fig, (steps, memory) = plt.subplots(2, 1, figsize=(11, 3.5 + 0.22 * bars), height_ratios=[0.4 + 0.22 * bars, 3.2])
    step_panel(steps, rows, top)
    memory_panel(memory, rows, args.hbm_bytes)
    title = args.title or os.path.basename(os.path.dirname(os.path.abspath(args.plan_csv)))
    fig.suptitle(title + ": parallelism plans")
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
