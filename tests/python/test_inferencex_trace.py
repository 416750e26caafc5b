#!/usr/bin/env python3
"""scripts/inferencex_random_trace.py, the IW-I3a request trace, against independent figures:
MT19937's published first outputs (Matsumoto and Nishimura's mt19937ar.c, init_genrand(5489):
3499211612, 581869302, 3890346734), the shipped trace regenerated to the byte, its token sums
computed with numpy's own RandomState when it was written (294,646 prompt and 295,581 output
tokens), and, where python3-numpy is installed, RandomState(seed).randint itself over seeded
ranges. Usage: test_inferencex_trace.py SOURCE_DIR"""
import importlib.util
import os
import random
import subprocess
import sys

source = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PODSIM_SOURCE_DIR", ".")
script = os.path.join(source, "scripts", "inferencex_random_trace.py")
spec = importlib.util.spec_from_file_location("inferencex_random_trace", script)
trace = importlib.util.module_from_spec(spec)
spec.loader.exec_module(trace)
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)


rng = trace.LegacyRandomState(5489)
first = [rng.next_uint32() for _ in range(3)]
check(first == [3499211612, 581869302, 3890346734], f"MT19937(5489) first outputs {first}")

command = [sys.executable, script, "--num-prompts", "320", "--input-len", "1024", "--output-len", "1024",
           "--range-ratio", "0.8"]
out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
with open(os.path.join(source, "scenarios", "real", "iwi3a_inferencex_1k1k.requests.csv")) as f:
    check(out == f.read(), "the shipped IW-I3a trace differs from the script's output")
rows = [line.split(",") for line in out.splitlines()[2:]]
check(len(rows) == 320, f"{len(rows)} requests, expected 320")
check(sum(int(r[1]) for r in rows) == 294646, "prompt tokens do not sum to 294,646")
check(sum(int(r[2]) for r in rows) == 295581, "output tokens do not sum to 295,581")
check(all(819 <= int(r[1]) <= 1024 and 819 <= int(r[2]) <= 1024 for r in rows), "a length outside [819, 1024]")

bad = subprocess.run([sys.executable, script, "--num-prompts", "0", "--input-len", "1", "--output-len", "1"],
                     capture_output=True, text=True)
check(bad.returncode != 0 and not bad.stdout, "a zero prompt count was not refused")

try:
    import numpy
except ImportError:
    numpy = None
if numpy is not None:
    draw = random.Random(44)
    for case in range(50):
        seed, low = draw.randrange(2**32), draw.randrange(0, 5000)
        high, size = low + draw.randrange(1, 70000), draw.randrange(1, 40)
        ours = trace.LegacyRandomState(seed).randint(low, high, size)
        theirs = numpy.random.RandomState(seed).randint(low, high, size).tolist()
        check(ours == theirs, f"case {case}: randint({low}, {high}, {size}) seed {seed} differs from numpy's")
else:
    print("python3-numpy not installed: the comparison with RandomState.randint is skipped")

for failure in failures:
    print("FAILED:", failure)
print(f"{'ok' if not failures else 'failed'}: inferencex_random_trace.py")
sys.exit(1 if failures else 0)
