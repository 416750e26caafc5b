"""Shared by podsim's plot scripts: matplotlib from Debian's python3-matplotlib, CSV rows."""
import csv
import os
import stat
import sys


def pyplot():
    """matplotlib.pyplot with the Agg backend; re-runs the script under /usr/bin/python3 (where
    Debian's python3-matplotlib lives) when this interpreter has no matplotlib."""
    try:
        import matplotlib
    except ImportError:
        system = "/usr/bin/python3"
        if os.path.realpath(sys.executable) != os.path.realpath(system) and os.path.exists(system):
            os.execv(system, [system] + sys.argv)
        sys.exit("podsim: matplotlib is missing; install python3-matplotlib (scripts/install-deps.sh)")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def arguments(doc, input_name, default_output):
    """The parser every plot script starts from: its input file and -o; a script adds its own."""
    import argparse
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(input_name)
    parser.add_argument("-o", "--output", default=default_output)
    return parser


def ok_rows(path):
    """A sweep's or compare's rows whose point ran: status ok, or does_not_fit (a plan beyond HBM,
    simulated anyway with --allow-oom, so its figures are there)."""
    return [r for r in read_rows(path) if r.get("status") in ("ok", "does_not_fit")]


def read_rows(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError as e:
        sys.exit(f"podsim: cannot read {path}: {e.strerror}")


def number(row, key):
    value = row.get(key, "")
    try:
        return float(value)
    except ValueError:
        return None


def save(fig, path):
    """Writes the figure as podsim writes its files (sim/report/output_files.hpp): whole or not at
    all, by a rename over a regular file (a link's target) or nothing; through to a character
    device or FIFO (-o /dev/null); a directory, block device or socket is refused (exit 2)."""
    fig.tight_layout()
    for a, b in overlapping_labels(fig):
        print(f"podsim: warning: {path}: labels '{a}' and '{b}' overlap", file=sys.stderr)
    fmt = os.path.splitext(path)[1][1:].lower() or "png"
    try:
        mode = os.stat(path).st_mode   # follows a symbolic link
    except FileNotFoundError:
        mode = None
    except OSError as e:
        sys.exit(f"podsim: cannot write {path}: {e.strerror}")
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        with open(path, "wb") as f:
            fig.savefig(f, format=fmt, dpi=120)
    elif mode is not None and not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        print(f"podsim: error: -o {path}: is {kind}; expected a file's path, e.g. out/plot.png", file=sys.stderr)
        sys.exit(2)
    else:
        target = os.path.realpath(path)
        folder = os.path.dirname(target)
        os.makedirs(folder, exist_ok=True)
        temporary = os.path.join(folder, f".{os.path.basename(target)}.tmp{os.getpid()}")
        try:
            fig.savefig(temporary, format=fmt, dpi=120)
            os.replace(temporary, target)
        except BaseException:
            if os.path.exists(temporary):
                os.remove(temporary)
            raise
    print(f"wrote {path}")


def overlapping_labels(fig):
    """Pairs of annotation texts (a point's label) whose boxes overlap as drawn: a script that
    labels points says so when it wrote two on top of each other."""
    renderer = fig.canvas.get_renderer()
    boxes = []
    for ax in fig.axes:
        for text in ax.texts:
            if text.get_visible() and text.get_text():
                boxes.append((text.get_text(), text.get_window_extent(renderer)))
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1:] if box_a.overlaps(box_b)]


def swept_columns(rows, exclude=()):
    """The keys a `podsim sweep` varied (its CSV's columns between "point" and "status")."""
    columns = list(rows[0].keys())
    return [c for c in columns[1:columns.index("status")] if c not in exclude]


def group_rows(rows, keys):
    """Rows grouped by their values of `keys`, each group with a label, in sorted order."""
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys), []).append(r)
    return [(", ".join(f"{k.split('.')[-1]}={v}" for k, v in zip(keys, key)), groups[key]) for key in sorted(groups)]


UNIT_SUFFIXES = ("_s", "_Bps", "_bytes", "_per_s")


def metric_label(key):
    """A summary key as an axis label: its unit suffix dropped from the end only
    ("decode_step_time_s" -> "decode step time", "latency_s.mean" -> "latency (mean)")."""
    name, _, statistic = key.partition(".")
    for suffix in UNIT_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    name = name.replace("_", " ")
    return f"{name} ({statistic})" if statistic else name


def time_unit(seconds):
    """(factor, unit) that shows these times in s, ms, us or ns by their largest magnitude."""
    largest = max((abs(v) for v in seconds if v is not None), default=0)
    for factor, unit in ((1, "s"), (1e3, "ms"), (1e6, "us")):
        if largest >= 1 / factor:
            return factor, unit
    return 1e9, "ns"
