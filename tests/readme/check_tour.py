"""Runs the README's tour and checks that every output line it shows is what the command prints,
so no figure in it can go stale: each ``` block of the "## A tour" section whose lines start
with "$ build/podsim" is run (as an argument vector, never through a shell, with its -o
directory in a scratch one), and each line shown under a command must be a line of its output
(stdout, then stderr), the scratch directory read back as the README's; a shown line ending in
"..." must begin a printed line.

    /usr/bin/python3 tests/readme/check_tour.py SOURCE_DIR PODSIM_BINARY
"""
import os
import shlex
import subprocess
import sys
import tempfile


def tour_blocks(readme):
    start = readme.index("\n## A tour\n")
    end = readme.index("\n## ", start + 1)
    section = readme[start:end]
    blocks = []
    for chunk in section.split("```")[1::2]:
        lines = chunk.split("\n")
        if lines[0].strip() not in ("", "text"):   # ```sh blocks are commands to copy, not shown output
            continue
        if any(line.startswith("$ build/podsim") for line in lines):
            blocks.append([line for line in lines[1:] if line.strip()])
    return blocks


def commands_and_lines(block):
    """[(argv, shown output lines)] in the block's order."""
    out = []
    for line in block:
        if line.startswith("$ "):
            out.append((shlex.split(line[2:]), []))
        elif out:
            out[-1][1].append(line.rstrip())
    return out


def run(argv, binary, source, scratch):
    argv = list(argv)
    if argv[0] != "build/podsim":
        sys.exit(f"the tour runs {argv[0]}: only build/podsim commands are checked")
    argv[0] = binary
    shown_dir = None
    if "-o" in argv:
        i = argv.index("-o") + 1
        shown_dir = argv[i]
        argv[i] = os.path.join(scratch, shown_dir.replace("/", "_"))
    result = subprocess.run(argv, cwd=source, capture_output=True, text=True, timeout=600)
    text = result.stdout + result.stderr
    if shown_dir is not None:
        text = text.replace(argv[argv.index("-o") + 1], shown_dir)
    return result.returncode, [line.rstrip() for line in text.split("\n")]


def matches(shown, printed):
    if shown.endswith("..."):
        prefix = shown[:-3].rstrip()
        return any(line.startswith(prefix) for line in printed)
    return shown in printed


def main():
    source, binary = sys.argv[1], sys.argv[2]
    with open(os.path.join(source, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    blocks = tour_blocks(readme)
    if not blocks:
        sys.exit("no tour block with a build/podsim command in README.md")
    failures, checked = [], 0
    with tempfile.TemporaryDirectory() as scratch:
        for block in blocks:
            for argv, shown in commands_and_lines(block):
                status, printed = run(argv, binary, source, scratch)
                command = " ".join(argv)
                if status != 0:
                    failures.append(f"{command}: exit status {status}\n  " + "\n  ".join(printed[-5:]))
                    continue
                for line in shown:
                    checked += 1
                    if not matches(line, printed):
                        failures.append(f"{command}\n  the README shows: {line}\n  the command printed:\n    " +
                                        "\n    ".join(l for l in printed if l))
    if failures:
        print("\n\n".join(failures))
        sys.exit(f"{len(failures)} tour line(s) differ from what the commands print")
    print(f"{checked} tour lines match what their commands print")


if __name__ == "__main__":
    main()
