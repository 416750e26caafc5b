#!/usr/bin/env python3
"""Fails when docs/design.md does not name a source file of topology/, collectives/,
workloads/ or sim/ (as `name.hpp`, `name.cpp`, `name.hpp/.cpp` or `name`), so the architecture
it describes stays the one in the tree. Run from anywhere; exits 1 naming each file missing.
"""
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FOLDERS = ("topology", "collectives", "workloads", "sim")


def main():
    try:
        files = subprocess.run(["git", "ls-files", *FOLDERS], capture_output=True, text=True, check=True,
                               cwd=ROOT).stdout.split()
    except (OSError, subprocess.CalledProcessError):   # a tree without git: every file in the folders
        files = [str(p.relative_to(ROOT)) for folder in FOLDERS for p in (ROOT / folder).rglob("*")]
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    missing = []
    for path in files:
        name = pathlib.Path(path)
        if name.suffix not in (".cpp", ".hpp"):
            continue
        forms = (name.name, f"{name.stem}.hpp", f"{name.stem}.cpp", f"`{name.stem}")
        if not any(form in design for form in forms):
            missing.append(path)
    for path in missing:
        print(f"docs/design.md does not name {path}: say where it sits and what it is for")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
