#!/usr/bin/env python3
"""A picture of a podsim trace.json (the timeline Perfetto shows): a row per track, a bar per
span, coloured by category, for the first --tracks tracks and an optional time window.

  build/podsim run scenarios/training_llama2_13b_fsdp1024_tp4.yaml -o out/train
  python3 scripts/plot_trace.py out/train/trace.json -o out/train/trace.png --tracks 8
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import plotting  # noqa: E402


def main():
    parser = plotting.arguments(__doc__, "trace_json", "trace.png")
    parser.add_argument("--tracks", type=int, default=8, help="rows to draw (the first, in trace order)")
    parser.add_argument("--start-ms", type=float, default=None)
    parser.add_argument("--end-ms", type=float, default=None)
    parser.add_argument("--title", help="default: the trace's directory")
    args = parser.parse_args()
    plt = plotting.pyplot()
    try:
        with open(args.trace_json) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"podsim: cannot read a Chrome trace from {args.trace_json}: {e}")
    names = {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    spans = [e for e in events if e.get("ph") == "X"]
    if not spans:
        sys.exit("podsim: no spans in " + args.trace_json)
    lo = args.start_ms * 1e3 if args.start_ms is not None else min(e["ts"] for e in spans)
    hi = args.end_ms * 1e3 if args.end_ms is not None else max(e["ts"] + e["dur"] for e in spans)
    # Only tracks with a span inside the window: one busy only later (a chip's third
    # communication track) would be an empty row.
    tracks = sorted({(e["pid"], e["tid"]) for e in spans if e["ts"] + e["dur"] >= lo and e["ts"] <= hi})[: args.tracks]
    if not tracks:
        sys.exit("podsim: no span of " + args.trace_json + " falls inside the window")
    colours, handles = {}, {}
    cmap = plt.get_cmap("tab10")
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(tracks) + 1.5))
    for row, key in enumerate(tracks):
        for e in spans:
            if (e["pid"], e["tid"]) != key or e["ts"] + e["dur"] < lo or e["ts"] > hi:
                continue
            cat = e.get("cat", e["name"])
            colour = colours.setdefault(cat, cmap(len(colours) % 10))
            bar = ax.barh(row, e["dur"] / 1e3, left=e["ts"] / 1e3, height=0.7, color=colour, edgecolor="none")
            handles.setdefault(cat, bar)
    ax.set_yticks(range(len(tracks)))
    ax.set_yticklabels([names.get(k, f"{k[0]}/{k[1]}") for k in tracks], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(lo / 1e3, hi / 1e3)
    ax.set_xlabel("time (ms)")
    ax.legend(handles.values(), handles.keys(), fontsize=7, loc="upper right", ncol=min(4, len(handles)))
    ax.set_title((args.title or os.path.basename(os.path.dirname(os.path.abspath(args.trace_json)))) + ": timeline")
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
