#!/usr/bin/env python3
"""Check that a refactor leaves every shipped scenario's outputs byte-identical.

    scripts/compare_outputs.py snapshot DIR [--podsim build/podsim]   # run every scenario into DIR
    scripts/compare_outputs.py diff BEFORE AFTER                      # compare two snapshots

`snapshot` runs `podsim run` on each scenarios/*.yaml (and `podsim compare` on those with a
compare: block, which also runs it), each into DIR/<scenario name>/, and the trace at hop
detail for the collective scenarios, where hop events are the output that changes first.
Wall-clock times and the snapshot's own folder are the only things that may differ between
two snapshots of the same code (`run --reproducible` zeroes the times in summary.json;
compare's points print both): `diff` masks them. `diff` lists every other file that differs,
is missing or is new, and exits 1 if any does; for a JSON file it names the first differing
key path, so an intended change can be stated exactly.
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def scenario_commands(podsim, scenario, out_dir, engine=None):
    text = scenario.read_text()
    # Relative to the checkout (the runs start there), so summaries that name their scenario
    # compare between two checkouts.
    scenario = scenario.relative_to(ROOT)
    # `podsim run --engine`: both replays' outputs can be kept apart (compare doesn't take it).
    pinned = ["--engine", engine] if engine else []
    commands = [[podsim, "run", str(scenario), "--reproducible", *pinned, "-o", str(out_dir / "run")]]
    if "kind: collectives" in text:
        commands.append([podsim, "run", str(scenario), "--reproducible", "--trace-detail", "hops", *pinned,
                         "-o", str(out_dir / "hops")])
    if "\ncompare:" in text:
        commands.append([podsim, "compare", str(scenario), "-o", str(out_dir / "compare")])
    return commands


def snapshot(args):
    out = pathlib.Path(args.dir).resolve()
    podsim = str(pathlib.Path(args.podsim).resolve())
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    scenarios = sorted((ROOT / "scenarios").glob("*.yaml"))
    for scenario in scenarios:
        for command in scenario_commands(podsim, scenario, out / scenario.stem, args.engine):
            # A list of arguments, never a shell string: scenario names reach no shell.
            result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
            status = (out / scenario.stem / (pathlib.Path(command[-1]).name + ".status"))
            status.parent.mkdir(parents=True, exist_ok=True)
            # The exit status and stderr are part of the snapshot: a refusal must stay one.
            status.write_text(f"exit {result.returncode}\n{result.stderr}")
            if result.returncode != 0:
                failed.append(f"{scenario.name}: {' '.join(command[1:2])} exit {result.returncode}")
        print(f"{scenario.stem}", flush=True)
    for line in failed:
        print(f"note: {line}", file=sys.stderr)
    return 0


def first_json_difference(a, b, path="$"):
    if type(a) is not type(b):
        return f"{path}: {json.dumps(a)[:80]} -> {json.dumps(b)[:80]}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a:
                return f"{path}.{key}: new"
            if key not in b:
                return f"{path}.{key}: gone"
            found = first_json_difference(a[key], b[key], f"{path}.{key}")
            if found:
                return found
        if list(a) != list(b):
            return f"{path}: key order changed"
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_json_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        if len(a) != len(b):
            return f"{path}: length {len(a)} -> {len(b)}"
        return None
    if a != b:
        return f"{path}: {json.dumps(a)[:80]} -> {json.dumps(b)[:80]}"
    return None


# What a run measures of this machine rather than simulates: masked before comparing.
WALL_TIME = re.compile(rb'(wall time |"wall_time_s": ?)[0-9.e+-]+( ?[mun]?s\b)?')


def comparable(path, root):
    # Outputs name where they were written (compare's points print it): the snapshot's own folder.
    text = path.read_bytes().replace(str(root.resolve()).encode(), b"<snapshot>")
    return WALL_TIME.sub(rb"\1<wall>", text)


def explain(before, after):
    if before.suffix == ".json":
        try:
            found = first_json_difference(json.loads(before.read_text()),
                                          json.loads(after.read_text()))
            return found or "same values, different text (formatting or number printing)"
        except (ValueError, UnicodeDecodeError):
            pass
    a, b = before.read_bytes().splitlines(), after.read_bytes().splitlines()
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"line {i + 1}: {x[:100]!r} -> {y[:100]!r}"
    return f"{len(a)} -> {len(b)} lines"


def diff(args):
    before, after = pathlib.Path(args.before), pathlib.Path(args.after)
    names = sorted({p.relative_to(before) for p in before.rglob("*") if p.is_file()} |
                   {p.relative_to(after) for p in after.rglob("*") if p.is_file()})
    differences = 0
    for name in names:
        a, b = before / name, after / name
        if not a.exists():
            print(f"new      {name}")
        elif not b.exists():
            print(f"missing  {name}")
        elif comparable(a, before) != comparable(b, after):
            print(f"changed  {name}: {explain(a, b)}")
        else:
            continue
        differences += 1
    print(f"{len(names)} files, {differences} differ")
    return 1 if differences else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("snapshot", help="run every shipped scenario into DIR")
    s.add_argument("dir")
    s.add_argument("--podsim", default=str(ROOT / "build" / "podsim"))
    s.add_argument("--engine", choices=["auto", "simgrid", "native"], help="podsim run --engine (default: its own)")
    d = sub.add_parser("diff", help="compare two snapshots byte for byte")
    d.add_argument("before")
    d.add_argument("after")
    args = parser.parse_args()
    return snapshot(args) if args.command == "snapshot" else diff(args)


if __name__ == "__main__":
    sys.exit(main())
