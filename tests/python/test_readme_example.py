"""Runs the Python module's documented examples (every ```python block of docs/python.md, in order,
as one notebook would), so they cannot rot: from a scratch directory holding a link to
scenarios/, with matplotlib drawing off-screen (MPLBACKEND=Agg, set by CTest); the sweep
example must write its plot.

    PYTHONPATH=build/python MPLBACKEND=Agg /usr/bin/python3 tests/python/test_readme_example.py
"""
import os
import sys
import tempfile

SOURCE = os.environ.get("PODSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))


def readme_examples():
    with open(os.path.join(SOURCE, "docs", "python.md")) as f:
        section = f.read()
    blocks = section.split("```python\n")[1:]
    if not blocks:
        sys.exit("no ```python block in docs/python.md")
    return [block[:block.index("```")] for block in blocks]


def main():
    blocks = readme_examples()
    os.environ.setdefault("MPLBACKEND", "Agg")
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.join(os.path.abspath(SOURCE), "scenarios"), os.path.join(tmp, "scenarios"))
        os.chdir(tmp)
        namespace = {"__name__": "__main__"}
        for i, code in enumerate(blocks):
            exec(compile(code, f"docs/python.md (block {i + 1})", "exec"), namespace)
        png = os.path.join(tmp, "batch_sweep.png")
        if not os.path.exists(png) or os.path.getsize(png) < 1000:
            sys.exit("the README example did not write batch_sweep.png")
    print(f"docs/python.md's {len(blocks)} Python examples ran; batch_sweep.png written")


if __name__ == "__main__":
    main()
