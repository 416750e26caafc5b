"""Seeded fuzzing of the Python-to-YAML converter behind podsim.load_dict, load's overrides and
sweep's grid values (sim/python/scenario_object.cpp): random nested dicts and lists (deep,
shared, cyclic) with odd scalars and keys. Each call must return a Scenario or raise
podsim.InputError, ValueError or TypeError; anything else fails, and a crash kills the process,
which CTest reports.

Run by CTest (tests/CMakeLists.txt, label python) for PODSIM_FUZZ_SECONDS (default 3).
Reproducible: PODSIM_FUZZ_SEED (default 24) fixes every case; each case prints its number
before it runs (the last one printed is the one that crashed), and PODSIM_FUZZ_CASE=N runs case
N alone. By hand:
    PYTHONPATH=build/python PODSIM_BINARY=build/podsim /usr/bin/python3 tests/python/fuzz_converter.py
"""
import faulthandler
import math
import os
import pathlib
import random
import sys
import time

import podsim

SOURCE = os.environ.get("PODSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
ALLGATHER = os.path.join(SOURCE, "scenarios", "v5e_8x4_allgather_y.yaml")

BASE = {"version": 1, "name": "fuzz", "hardware": {"preset": "v5e"}, "topology": {"mesh": {"X": 4, "Y": 2}},
        "workload": {"kind": "collectives",
                     "operations": [{"name": "ar", "kind": "all_reduce", "axes": ["X"], "bytes": "1 MiB"}]}}

KEYS = ["version", "name", "description", "hardware", "preset", "profile", "overrides", "topology", "mesh", "X",
        "Y", "wraparound", "workload", "kind", "operations", "axes", "bytes", "requests", "trace", "routing",
        "loads", "model", "batch", "perturbations", "expect", "compare", "simulation", "", " ", "a.b", "x[0]"]
DOTTED = ["description", "name", "workload.batch", "topology.mesh", "topology.mesh.X", "hardware.preset",
          "hardware.profile", "workload.operations", "workload.operations[0].bytes", "workload.requests.trace",
          "workload.routing.loads", "expect", "nope.nope"]


class Opaque:
    pass


class PathLike:
    def __fspath__(self):
        return "profiles/p.yaml"


def odd_scalar(rng):
    choices = [
        lambda: math.nan, lambda: math.inf, lambda: -math.inf, lambda: -0.0, lambda: 5e-324, lambda: 1.7976931348623157e308,
        lambda: 10 ** rng.randint(18, 400), lambda: -(2 ** 63), lambda: 2 ** 64, lambda: rng.randint(-5, 5),
        lambda: rng.random(), lambda: True, lambda: False, lambda: None,
        lambda: "", lambda: "\x00", lambda: "\x07\x1b[31m\x7f", lambda: "\ud800", lambda: "a\nb\r\tc", lambda: "'\"",
        lambda: "*a", lambda: "&a x", lambda: "!!python/object:os.system", lambda: "- x", lambda: ": y", lambda: "{[",
        lambda: "# c", lambda: "null", lambda: "~", lambda: "yes", lambda: "0x1F", lambda: "1e3", lambda: "é😀\u2028",
        lambda: "x" * rng.randint(0, 5000), lambda: "45 GB/s", lambda: "1 us", lambda: "v5e", lambda: "4x4",
        lambda: b"bytes", lambda: bytearray(b"x"), lambda: Opaque(), lambda: 1 + 2j, lambda: pathlib.Path("p.yaml"),
        lambda: PathLike(), lambda: {1, 2}, lambda: frozenset(), lambda: range(3),
    ]
    return rng.choice(choices)()


def odd_key(rng):
    if rng.random() < 0.9:
        return rng.choice(KEYS)
    return rng.choice([1, None, 1.5, (1, 2), b"k", True, "\ud800", "k\x00"])


def random_value(rng, depth, pool):
    """A random tree; containers go into `pool` for later sharing and cycles."""
    roll = rng.random()
    if depth <= 0 or roll < 0.35:
        return odd_scalar(rng)
    if roll < 0.45 and pool:
        return rng.choice(pool)   # shared: the same object twice in the tree
    if roll < 0.75:
        value = {odd_key(rng): random_value(rng, depth - 1, pool) for _ in range(rng.randint(0, 4))}
    elif roll < 0.95:
        value = [random_value(rng, depth - 1, pool) for _ in range(rng.randint(0, 4))]
    else:
        value = tuple(random_value(rng, depth - 1, pool) for _ in range(rng.randint(0, 3)))
    if not isinstance(value, tuple):
        pool.append(value)
    return value


def deep(rng, levels):
    value = odd_scalar(rng)
    for _ in range(levels):
        value = [value] if rng.random() < 0.5 else {rng.choice(KEYS): value}
    return value


def doubling(levels):
    value = [0]
    for _ in range(levels):
        value = [value, value]
    return value


def add_cycle(rng, pool):
    """Puts a container inside itself or inside one below it."""
    containers = [c for c in pool if isinstance(c, (dict, list))]
    if not containers:
        return
    inner, outer = rng.choice(containers), rng.choice(containers)
    if isinstance(inner, dict):
        inner[rng.choice(KEYS)] = outer
    else:
        inner.append(outer)


def mutate(rng, document, pool):
    """The base document with one random subtree replaced."""
    if rng.random() < 0.3:
        # A leaf the loader takes as text: odd strings get past it into a loaded Scenario.
        document[rng.choice(["name", "description"])] = odd_scalar(rng)
        return
    path = []
    node = document
    while isinstance(node, (dict, list)) and node and rng.random() < 0.7:
        key = rng.choice(list(node.keys())) if isinstance(node, dict) else rng.randrange(len(node))
        path.append((node, key))
        node = node[key]
    special = rng.random()
    if special < 0.05:
        value = deep(rng, rng.choice([rng.randint(95, 105), 50_000]))
    elif special < 0.08:
        value = doubling(rng.randint(10, 25))
    else:
        value = random_value(rng, rng.randint(1, 6), pool)
    if path:
        parent, key = path[-1]
        parent[key] = value
    else:
        document[rng.choice(KEYS)] = value


def copy_tree(value):
    if isinstance(value, dict):
        return {k: copy_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_tree(v) for v in value]
    return value


def run_case(seed, index):
    rng = random.Random(f"{seed}:{index}")
    pool = []
    document = copy_tree(BASE)
    if index > 0:
        for _ in range(rng.randint(1, 3)):
            mutate(rng, document, pool)
        if rng.random() < 0.2:
            add_cycle(rng, pool)
    overrides = None
    if index > 0 and rng.random() < 0.4:
        overrides = {rng.choice(DOTTED) if rng.random() < 0.9 else odd_key(rng): random_value(rng, 4, pool)
                     for _ in range(rng.randint(1, 3))}
        if rng.random() < 0.1:
            add_cycle(rng, pool)
    calls = [lambda: podsim.load_dict(document, overrides=overrides),
             lambda: podsim.load_dict(document, base_dir=rng.choice([".", "/nonexistent", "\x00"]), overrides=overrides),
             lambda: podsim.load(ALLGATHER, overrides=overrides if overrides is not None else {"description": document})]
    call = calls[0] if index == 0 else rng.choice(calls)
    try:
        scenario = call()
    except (podsim.InputError, ValueError, TypeError):
        return False
    repr(scenario)
    return True


def main():
    faulthandler.enable()
    seed = int(os.environ.get("PODSIM_FUZZ_SEED", "24"))
    seconds = float(os.environ.get("PODSIM_FUZZ_SECONDS", "3"))
    only = os.environ.get("PODSIM_FUZZ_CASE")
    if only is not None:
        print(f"case {only}: loaded" if run_case(seed, int(only)) else f"case {only}: refused")
        return 0
    print(f"fuzz_converter: seed {seed}, {seconds:g} s", flush=True)
    end = time.monotonic() + seconds
    index = loaded = 0
    while index == 0 or time.monotonic() < end:
        print(f"case {index}", flush=True)
        try:
            loaded += run_case(seed, index)
        except BaseException as error:
            print(f"case {index} (PODSIM_FUZZ_SEED={seed} PODSIM_FUZZ_CASE={index}): "
                  f"{type(error).__name__}: {error}"[:2000], flush=True)
            raise
        index += 1
    print(f"fuzz_converter: {index} cases, {loaded} loaded, {index - loaded} refused with a message")
    if loaded == 0:
        print("fuzz_converter: not even the unmutated document loaded")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
