#!/usr/bin/env python3
"""Lists podsim's functions longer than a screen (80 lines) and fails on any without a reason.

Functions are found by Universal Ctags (Debian's universal-ctags, scripts/install-deps.sh),
from their first line to their closing brace, lambdas counted with the function that holds
them. A function may run longer only with a reason below: a table one row per entry, or a
declaration list that reads top to bottom. Anything else past the limit is split along its
concepts (docs/extending.md).

  scripts/check_function_sizes.py            check (exit 1 naming each offender)
  scripts/check_function_sizes.py --list     every function past the limit, longest first
"""
import argparse
import pathlib
import shutil
import subprocess
import sys

LIMIT = 80
ROOT = pathlib.Path(__file__).resolve().parent.parent
FOLDERS = ("topology", "collectives", "workloads", "sim")

# name -> why it may stay long. Keep this short: each entry is a reason, not an exemption.
ALLOWED = {
    "main": "sim/commands/main.cpp: the CLI's subcommands and options declared in one list (CLI11), "
            "read top to bottom as `podsim --help` prints them",
    "make_presets": "topology/chip_presets.cpp: the chip table, one block of constants per TPU generation "
                    "with each value's source",
    "summary_field_storage": "sim/report/summary_field_table.hpp: the summary-field table, one row per field",
}


def functions(paths):
    ctags = shutil.which("ctags") or shutil.which("universal-ctags")
    if not ctags:
        sys.exit("check_function_sizes.py: Universal Ctags is not installed (scripts/install-deps.sh installs it)")
    out = subprocess.run([ctags, "--fields=+ne", "--c++-kinds=f", "--language-force=C++", "-o", "-", *paths],
                         capture_output=True, text=True, check=True, cwd=ROOT).stdout
    for line in out.splitlines():
        cols = line.split("\t")
        if len(cols) < 4 or cols[3] != "f" or cols[0].startswith("__anon"):
            continue
        fields = dict(c.split(":", 1) for c in cols[4:] if ":" in c)
        if "line" in fields and "end" in fields:
            yield cols[0], cols[1], int(fields["line"]), int(fields["end"]) - int(fields["line"]) + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--list", action="store_true", help="list every function past the limit")
    args = parser.parse_args()
    paths = sorted(str(p.relative_to(ROOT)) for folder in FOLDERS for p in (ROOT / folder).rglob("*")
                   if p.suffix in (".cpp", ".hpp"))
    long = sorted((n, name, f"{path}:{line}") for name, path, line, n in functions(paths) if n > LIMIT)
    long.reverse()
    if args.list:
        for n, name, where in long:
            print(f"{n:5d}  {name}  {where}" + ("  (allowed)" if name in ALLOWED else ""))
        return 0
    bad = [(n, name, where) for n, name, where in long if name not in ALLOWED]
    for n, name, where in bad:
        print(f"{where}: {name} runs {n} lines (limit {LIMIT}): split it along its concepts, or give the "
              f"reason it reads better whole in scripts/check_function_sizes.py's ALLOWED")
    stale = sorted(set(ALLOWED) - {name for _, name, _ in long})
    for name in stale:
        print(f"scripts/check_function_sizes.py: ALLOWED names {name}, which is no longer past {LIMIT} lines: "
              "remove it")
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main())
