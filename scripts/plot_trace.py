#!/usr/bin/env python3
"""A picture of a podsim trace.json (the timeline Perfetto shows): a row per track, a bar per
span, coloured by category, for the first --tracks tracks (or every track of the --chips
chosen) and an optional time window.

  build/podsim run scenarios/training_llama2_13b_fsdp1024_tp4.yaml -o out/train
  python3 scripts/plot_trace.py out/train/trace.json -o out/train/trace.png --tracks 8
  python3 scripts/plot_trace.py out/slow/trace.json -o out/slow/trace.png --chips 0,57

A chip is its number in its slice (the chip id of a one-slice pod), or S/N for chip N of
slice S; a chip the trace does not hold is an error (exit 2) listing the chips it holds.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import plotting  # noqa: E402


# A chip's tracks have tids chip x LANE_STRIDE + lane within its slice's pid (sim/report/run_trace.cpp).
LANE_STRIDE = 1000


def chip_of(track):
    pid, tid = track
    return (pid, tid // LANE_STRIDE)


def chip_text(chip, slices):
    return f"{chip[0]}/{chip[1]}" if slices > 1 else str(chip[1])


def ranges_text(chips, slices):
    """The chips as runs: "0-63", or "0/0-15, 1/0-15" across slices."""
    runs = []
    for chip in sorted(chips):
        if runs and runs[-1][1][0] == chip[0] and runs[-1][1][1] + 1 == chip[1]:
            runs[-1][1] = chip
        else:
            runs.append([chip, chip])
    return ", ".join(chip_text(a, slices) + ("" if a == b else "-" + str(b[1])) for a, b in runs)


def chosen_chips(text, present):
    """--chips "0,37" or "1/5" as (slice, chip) pairs; each must be in the trace (exit 2)."""
    slices = len({pid for pid, _ in present})
    chosen = []
    for item in text.split(","):
        match = re.fullmatch(r"\s*(?:(\d+)/)?(\d+)\s*", item)
        if not match:
            print(f"podsim: error: --chips: '{item}' is not a chip; expected chip numbers, e.g. 0,37 (or S/N: "
                  "chip N of slice S)", file=sys.stderr)
            sys.exit(2)
        chip = (int(match.group(1) or 0), int(match.group(2)))
        if chip not in present:
            print(f"podsim: error: --chips: chip {chip_text(chip, max(slices, 1 + chip[0]))} is not in the trace; "
                  f"its chips: {ranges_text(present, slices)}", file=sys.stderr)
            sys.exit(2)
        if chip not in chosen:
            chosen.append(chip)
    return chosen


def drawn_tracks(spans, names, lo, hi, chips=None, limit=None):
    """The (pid, tid) rows to draw: those with a span in [lo, hi], of the `chips` ("0,57") in
    that order when given, at most `limit` (default 8, or every track of the chips)."""
    tracks = sorted({(e["pid"], e["tid"]) for e in spans if e["ts"] + e["dur"] >= lo and e["ts"] <= hi})
    if chips is not None:
        # A chip's tracks are named "s0/chip(1,2,3) compute", "... comm #2" (run_trace.cpp).
        chosen = chosen_chips(chips, {chip_of(k) for k, name in names.items() if "/chip(" in name})
        tracks = sorted((k for k in tracks if chip_of(k) in chosen), key=lambda k: (chosen.index(chip_of(k)), k))
    return tracks[: limit if limit is not None else (None if chips else 8)]


def main():
    parser = plotting.arguments(__doc__, "trace_json", "trace.png")
    parser.add_argument("--tracks", type=int, default=None,
                        help="rows to draw (the first, in trace order; default 8, or all of the --chips)")
    parser.add_argument("--chips", help="draw only these chips' tracks, in this order, e.g. 0,57 (a slow chip beside chip 0)")
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
    tracks = drawn_tracks(spans, names, lo, hi, args.chips, args.tracks)
    if not tracks:
        sys.exit("podsim: no span of " + args.trace_json + " (of the --chips) falls inside the window")
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
    # Each chip's number (what --chips takes) before its track's name.
    slices = len({pid for pid, _ in names})
    ax.set_yticklabels([f"[{chip_text(chip_of(k), slices)}] " + names.get(k, f"{k[0]}/{k[1]}") for k in tracks], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(lo / 1e3, hi / 1e3)
    ax.set_xlabel("time (ms)")
    ax.legend(handles.values(), handles.keys(), fontsize=7, loc="upper right", ncol=min(4, len(handles)))
    ax.set_title((args.title or os.path.basename(os.path.dirname(os.path.abspath(args.trace_json)))) + ": timeline")
    plotting.save(fig, args.output)


if __name__ == "__main__":
    main()
