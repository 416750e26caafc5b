#!/usr/bin/env python3
"""MoE step time against routing skew, from a `podsim sweep` over the Zipf exponent of a training
(or inference) scenario with `workload.routing.distribution: zipf`: the simulated step, and what
the busiest-expert formula predicts from the sweep's even point (the step at s = 0 plus every MoE
layer waiting for its busiest chip: moe.busiest_extra_s, the busiest chips' expert compute less
the mean's), with the busiest chip's load over the mean on a second axis.

  podsim sweep scenarios/training_deepseek_v3_v5p_16x16x16_ep.yaml \\
      --set workload.routing.distribution=zipf --set workload.routing.zipf_s=0,0.5,1,1.5 \\
      --set topology.mesh.X=8 --set topology.mesh.Y=8 --set topology.mesh.Z=8 \\
      --set workload.batch_tokens=2097152 -o out/skew -j2        # 8 s on 2 cores
  python3 scripts/plot_moe_skew.py out/skew/sweep.csv -o out/skew/skew.png
"""
import sys

sys.path.insert(0, __import__("os").path.dirname(__file__))
import plotting  # noqa: E402

SKEW = "workload.routing.zipf_s"


def step_time(row):
    for key in ("step_time_s", "decode_step_time_s", "prefill_time_s"):
        value = plotting.number(row, key)
        if value is not None:
            return value
    return None


def main():
    parser = plotting.arguments(__doc__, "sweep_csv", "moe_skew.png")
    args = parser.parse_args()
    plt = plotting.pyplot()
    rows = plotting.ok_rows(args.sweep_csv)
    if not rows or SKEW not in rows[0]:
        sys.exit(f"podsim: no swept {SKEW} in the sweep (expected --set {SKEW}=0,0.5,1,...)")
    rows.sort(key=lambda r: plotting.number(r, SKEW))
    skew = [plotting.number(r, SKEW) for r in rows]
    step = [1e3 * step_time(r) for r in rows]
    even = rows[0]
    if plotting.number(even, SKEW) != 0:
        sys.exit(f"podsim: the formula needs the even point {SKEW}=0 in the sweep")
    # The busiest-expert formula: the even step, plus each layer's busiest chip's extra compute.
    extra = "moe.busiest_extra_s" if "moe.busiest_extra_s" in even else None
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.plot(skew, step, "o-", label="simulated step")
    if extra:
        base = step_time(even)
        predicted = [1e3 * (base + plotting.number(r, extra) - plotting.number(even, extra)) for r in rows]
        ax.plot(skew, predicted, "s--", label="even step + busiest chip's extra expert compute")
    ax.set_xlabel("Zipf exponent s of the routing (0: even)")
    ax.set_ylabel("step time (ms)")
    ax.grid(alpha=0.3)
    ratio_key = "moe.busiest_chip_over_mean"
    if ratio_key in even:
        right = ax.twinx()
        right.plot(skew, [plotting.number(r, ratio_key) for r in rows], "^:", color="gray", label="busiest chip / mean")
        right.set_ylabel("busiest expert-parallel chip's tokens / mean")
        right.legend(loc="lower right", fontsize=8)
    ax.set_title(rows[0].get("scenario", "MoE") + ": step time against routing skew")
    ax.legend(loc="upper left", fontsize=8)
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
