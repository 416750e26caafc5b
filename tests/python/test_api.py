"""The Python module against the command line: same scenarios, same results.

Run by CTest (tests/CMakeLists.txt) with the system /usr/bin/python3, PYTHONPATH at the
module's directory, PODSIM_BINARY the CLI and PODSIM_SOURCE_DIR the repository. By hand:
    PYTHONPATH=build/python PODSIM_BINARY=build/podsim /usr/bin/python3 tests/python/test_api.py
"""
import contextlib
import csv
import json
import math
import os
import re
import signal
import subprocess
import tempfile
import threading
import unittest

import podsim

SOURCE = os.environ.get("PODSIM_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("PODSIM_BINARY", os.path.join(SOURCE, "build", "podsim"))
ALLGATHER = os.path.join(SOURCE, "scenarios", "v5e_8x4_allgather_y.yaml")
DECODE = os.path.join(SOURCE, "scenarios", "inference_llama3_70b_decode_v5e_4x2.yaml")
SERVING = os.path.join(SOURCE, "scenarios", "serving_llama3_70b_continuous_v5e_4x4.yaml")
TRAINING = os.path.join(SOURCE, "scenarios", "training_fsdp_critical_batch.yaml")
ALLTOALL = os.path.join(SOURCE, "scenarios", "compare_alltoall_64_chips.yaml")

# The serving scenario with fewer requests, so the test stays fast.
FEW_REQUESTS = {"workload.requests.poisson.count": 40}


def cli_run(scenario, out_dir, overrides=None):
    """`podsim run` of the same scenario: its stdout and its files."""
    args = [CLI, "run", scenario, "-o", out_dir, "-q"]
    for key, value in (overrides or {}).items():
        args += ["--set", f"{key}={value}"]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return done.stdout


# A training step of tens of seconds (one slow chip: every chip simulated): under way when an
# interrupt comes.
SLOW = os.path.join(SOURCE, "tests", "fixtures", "slow_step_llama2_13b_slow_chip_16x16x8.yaml")


@contextlib.contextmanager
def sigint_after(seconds):
    """SIGINT to this process after `seconds`, as a notebook's interrupt sends it; the handler and
    the timer are put back however the block ends."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)


def read_json(path):
    with open(path) as f:
        return json.load(f)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def without_wall_time(summary):
    return {k: v for k, v in summary.items() if k != "wall_time_s"}


class TablesEqualTheCsv:
    def assert_records_equal_csv(self, records, path):
        """Records as the module types them, cell by cell against the CLI's CSV text."""
        rows = read_csv(path)
        self.assertEqual(len(records), len(rows))
        for record, row in zip(records, rows):
            self.assertEqual(list(record.keys()), list(row.keys()))
            for key, text in row.items():
                value = record[key]
                if value is None:
                    self.assertEqual(text, "", key)
                elif isinstance(value, bool):
                    self.assertEqual(text, "true" if value else "false", key)
                elif isinstance(value, (int, float)):
                    self.assertEqual(value, type(value)(text), key)
                else:
                    self.assertEqual(value, text, key)


class LoadTest(unittest.TestCase):
    def test_load_file(self):
        s = podsim.load(ALLGATHER)
        self.assertEqual(s.name, "v5e-8x4-allgather-y")
        self.assertEqual(s.kind, "collectives")
        self.assertEqual(s.path, ALLGATHER)
        self.assertEqual(s.overrides, {})
        self.assertIn("all_gather", s.text)

    def test_overrides(self):
        s = podsim.load(DECODE, overrides={"workload.batch": 8})
        self.assertEqual(s.overrides, {"workload.batch": "8"})
        self.assertEqual(podsim.run(s).summary["workload"]["batch"], 8)
        # Python values become YAML; a str is YAML text, as after --set.
        self.assertEqual(podsim.run(DECODE, {"workload.batch": "4"}).summary["workload"]["batch"], 4)
        self.assertEqual(podsim.run(s.with_overrides({"workload.batch": 2})).summary["workload"]["batch"], 2)

    def test_load_dict_runs_as_the_file(self):
        document = {
            "version": 1,
            "name": "v5e-8x4-allgather-y",
            "hardware": {"preset": "v5e", "profile": "ideal"},
            "topology": {"mesh": {"X": 8, "Y": 4}},
            "workload": {
                "kind": "collectives",
                "operations": [
                    {"name": "allgather_y", "kind": "all_gather", "axes": ["Y"],
                     "array": "bf16[2048,8192]", "sharding": "[E_Y, F]"},
                ],
            },
        }
        from_dict = podsim.load_dict(document)
        self.assertIsNone(from_dict.path)
        self.assertEqual(from_dict.kind, "collectives")
        a = podsim.run(from_dict, reproducible=True).summary
        b = podsim.run(ALLGATHER, reproducible=True).summary
        self.assertEqual(a.pop("scenario_file"), "<dict>")
        b.pop("scenario_file")
        b.pop("description", None)
        self.assertEqual(a, b)


class RunTest(TablesEqualTheCsv, unittest.TestCase):
    def test_collectives_equal_the_cli(self):
        with tempfile.TemporaryDirectory() as tmp:
            stdout = cli_run(ALLGATHER, tmp)
            result = podsim.run(ALLGATHER)
            self.assertEqual(result.kind, "collectives")
            self.assertIsNone(result.output_dir)
            self.assertIsNone(result.requests)
            self.assertEqual(without_wall_time(result.summary), without_wall_time(read_json(f"{tmp}/summary.json")))
            self.assert_records_equal_csv(result.operations, f"{tmp}/operations.csv")
            # The table is the CLI's, but for the wall time it reports.
            wall = re.compile(r"wall time [0-9.e+]+ (ns|us|ms|s|h|d)")
            self.assertTrue(wall.sub("", stdout).startswith(wall.sub("", result.table)))
        op = result.operations[0]
        self.assertEqual(op["name"], "allgather_y")
        self.assertAlmostEqual(op["time_s"], 559.24e-6, delta=0.01 * 559.24e-6)
        self.assertEqual(result.summary["operations"][0]["name"], "allgather_y")

    def test_output_dir_keeps_the_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = podsim.run(ALLGATHER, output_dir=tmp, reproducible=True, fidelity="full")
            self.assertEqual(result.output_dir, tmp)
            self.assertEqual(sorted(os.path.basename(f) for f in result.files),
                             ["operations.csv", "summary.json", "trace.json"])
            self.assertEqual(result.summary, read_json(f"{tmp}/summary.json"))
            self.assertEqual(result.summary["fidelity"], "full")
            self.assertEqual(result.summary["wall_time_s"], 0)
        with self.assertRaises(ValueError):
            podsim.run(ALLGATHER, fidelity="reduced-ish")

    def test_serving_equals_the_cli(self):
        with tempfile.TemporaryDirectory() as tmp:
            cli_run(SERVING, tmp, FEW_REQUESTS)
            result = podsim.run(SERVING, FEW_REQUESTS)
            self.assertEqual(result.kind, "serving")
            self.assertIsNone(result.operations)
            self.assertEqual(without_wall_time(result.summary), without_wall_time(read_json(f"{tmp}/summary.json")))
            self.assert_records_equal_csv(result.requests, f"{tmp}/requests.csv")
            self.assert_records_equal_csv(result.steps, f"{tmp}/steps.csv")
        self.assertEqual(len(result.requests), 40)
        self.assertEqual(result.summary["requests"], 40)
        self.assertEqual([r["id"] for r in result.requests], list(range(40)))
        ttft = sorted(r["ttft_s"] for r in result.requests)
        self.assertAlmostEqual(result.summary["ttft_s"]["mean"], sum(ttft) / len(ttft), delta=1e-6)
        self.assertTrue({"prefill", "decode"} <= {s["kind"] for s in result.steps})
        self.assertIn("TTFT", result.table)


class SweepTest(TablesEqualTheCsv, unittest.TestCase):
    def test_sweep_over_the_batch(self):
        with tempfile.TemporaryDirectory() as tmp:
            points = podsim.sweep(DECODE, {"workload.batch": [1, 16, 0]}, output_dir=tmp, jobs=2)
            self.assertTrue(os.path.exists(f"{tmp}/sweep.csv"))
            cli_summary = read_json(f"{tmp}/points/00001/summary.json")
        self.assertEqual([p["parameters"] for p in points],
                         [{"workload.batch": 1}, {"workload.batch": 16}, {"workload.batch": 0}])
        ok, bad = points[:2], points[2]
        for p in ok:
            self.assertEqual(p["status"], "ok")
            self.assertIsNone(p["error"])
            self.assertEqual(p["summary"]["workload"]["batch"], p["parameters"]["workload.batch"])
        self.assertEqual(ok[1]["summary"], cli_summary)
        self.assertLess(ok[0]["summary"]["decode_step_time_s"], ok[1]["summary"]["decode_step_time_s"])
        self.assertEqual(bad["status"], "error")
        self.assertIsNone(bad["summary"])
        self.assertIn("workload.batch", bad["error"])

    def test_a_dict_scenario_with_overrides(self):
        document = {"version": 1, "name": "ring", "hardware": {"preset": "v5e"}, "topology": {"mesh": {"X": 16}},
                    "workload": {"kind": "collectives",
                                 "operations": [{"name": "ar", "kind": "all_reduce", "axes": ["X"], "bytes": "256 MiB"}]}}
        scenario = podsim.load_dict(document, overrides={"hardware.overrides.ici_bandwidth": "90 GB/s"})
        with tempfile.TemporaryDirectory() as tmp:
            points = podsim.sweep(scenario, {"workload.operations[0].bytes": ["1 MiB"],
                                             "topology.mesh.X": [8, 16]}, output_dir=tmp)
            self.assertTrue(os.path.exists(f"{tmp}/scenario.yaml"))
        # A key the dotted path cannot reach fails every point, with the message.
        self.assertTrue(all(p["status"] == "error" for p in points))
        points = podsim.sweep(scenario, {"topology.mesh.X": [8, 16]})
        self.assertEqual([p["status"] for p in points], ["ok", "ok"])
        # The all-reduce's links' time (its additions on the core, "ar.reduce", do not use them).
        def links_s(summary):
            return next(o["time_s"] for o in summary["operations"] if o["name"] == "ar")
        fast = links_s(points[1]["summary"])
        slow = links_s(podsim.run(podsim.load_dict(document)).summary)
        self.assertAlmostEqual(slow / fast, 2, delta=0.05)   # the override reached every point

    def test_a_dict_naming_a_request_trace(self):
        # A relative trace path in a dict is taken from base_dir, in a run and in a sweep (which
        # writes the scenario elsewhere).
        document = {"version": 1, "hardware": {"preset": "v5e"}, "topology": {"mesh": {"X": 4, "Y": 4}},
                    "workload": {"kind": "serving", "model": "llama3-70b", "weights": "int8", "kv_cache": "int8",
                                 "policy": "continuous", "requests": {"trace": "requests.csv"}}}
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "requests.csv"), "w") as f:
                f.write("arrival_s,prompt_tokens,output_tokens\n")
                f.writelines(f"{0.5 * i},{256 + 100 * i},{16 + i}\n" for i in range(6))
            scenario = podsim.load_dict(document, base_dir=tmp)
            self.assertEqual(podsim.run(scenario).summary["requests"], 6)
            points = podsim.sweep(scenario, {"workload.prefill_batch": [1, 2]})
        self.assertEqual([p["status"] for p in points], ["ok", "ok"])
        self.assertEqual(points[0]["summary"]["requests"], 6)

    def test_a_dict_naming_expert_loads(self):
        # A relative expert-load CSV in a dict is taken from base_dir too, in a run and in a sweep.
        model = {"layers": 2, "d_model": 256, "d_ff": 1024, "heads": 4, "kv_heads": 4, "head_dim": 64, "vocab": 0,
                 "moe": {"experts": 4, "experts_per_token": 2, "expert_d_ff": 512}}
        document = {"version": 1, "hardware": {"preset": "v5e"}, "topology": {"mesh": {"X": 2}},
                    "workload": {"kind": "inference", "model": model, "batch": 2, "context_length": 64,
                                 "routing": {"distribution": "loads", "loads": "loads.csv"}}}
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "loads.csv"), "w") as f:
                f.write("layer,e0,e1,e2,e3\n*,4,3,2,1\n")
            scenario = podsim.load_dict(document, base_dir=tmp)
            self.assertIn("decode_step_time_s", podsim.run(scenario).summary)
            points = podsim.sweep(scenario, {"workload.batch": [1, 2]})
            with self.assertRaisesRegex(podsim.InputError, "absent.csv"):
                podsim.load_dict({**document, "workload": {**document["workload"],
                                                           "routing": {"distribution": "loads", "loads": "absent.csv"}}},
                                 base_dir=tmp)
        self.assertEqual([p["status"] for p in points], ["ok", "ok"], [p.get("error") for p in points])

    def test_ctrl_c_stops_the_points_under_way(self):
        # As a notebook's interrupt does: SIGINT to this process while points run. A point of
        # this scenario takes seconds; it must be killed, not left running, and recorded.
        with tempfile.TemporaryDirectory() as tmp, sigint_after(0.5):
            with self.assertRaises(KeyboardInterrupt):
                podsim.sweep(SLOW, {"workload.matmul_efficiency": [0.5, 0.6, 0.7]}, output_dir=tmp, jobs=2)
            rows = read_csv(f"{tmp}/sweep.csv")
            self.assertEqual([r["status"] for r in rows], ["interrupted", "interrupted", "missing"])
            self.assertIn("killed by signal 15", rows[0]["error"])
            running = subprocess.run(["pgrep", "-f", f"podsim run .* -o {tmp}/"], capture_output=True, text=True)
            self.assertEqual(running.stdout, "")

    def test_ctrl_c_stops_a_compare(self):
        # As for a sweep: KeyboardInterrupt, no point left running, and compare.csv saying which
        # shapes were stopped or never started (not 'error' rows of zeros).
        with tempfile.TemporaryDirectory() as tmp, sigint_after(0.5):
            with self.assertRaises(KeyboardInterrupt):
                podsim.compare(SLOW, ["16x16x16", "16x16x16", "16x16x16"], output_dir=tmp, jobs=2)
            rows = read_csv(f"{tmp}/compare.csv")
            self.assertEqual([r["status"] for r in rows], ["interrupted", "interrupted", "missing"])
            self.assertIn("killed by signal 15", rows[0]["error"])
            self.assertIn("not run", rows[2]["error"])
            self.assertEqual([(r["chips"], r["time_s"]) for r in rows], [("", "")] * 3)
            running = subprocess.run(["pgrep", "-f", f"podsim run .* -o {tmp}/"], capture_output=True, text=True)
            self.assertEqual(running.stdout, "")

    def test_a_bad_base_scenario_raises(self):
        with self.assertRaises(podsim.InputError):
            podsim.sweep(DECODE, {"workload.batch": [1]}, overrides={"workload.phase": "sideways"})


class CommandsTest(TablesEqualTheCsv, unittest.TestCase):
    def test_compare_equals_the_cli(self):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([CLI, "compare", ALLTOALL, "--topologies", "4x4x4,8x8", "-o", tmp, "-q"],
                           capture_output=True, check=True)
            rows = podsim.compare(ALLTOALL, ["4x4x4", "8x8"])
            self.assert_records_equal_csv(rows, f"{tmp}/compare.csv")
        self.assertEqual([r["topology"] for r in rows], ["4x4x4", "8x8"])
        self.assertLess(rows[0]["time_s"], rows[1]["time_s"])   # the cube has wraparound

    def test_validate_equals_the_cli(self):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([CLI, "validate", "--quick", "--csv", f"{tmp}/validate.csv"], capture_output=True, check=True)
            report = podsim.validate(quick=True)
            self.assert_records_equal_csv(report["rows"], f"{tmp}/validate.csv")
        self.assertEqual(report["unexplained"], 0)
        self.assertEqual(report["book"] + report["explained"], len(report["rows"]))

    def test_plan_equals_the_cli(self):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([CLI, "plan", TRAINING, "-o", tmp, "-q"], capture_output=True, check=True)
            report = podsim.plan(TRAINING)   # one at a time; the CLI used every core
            self.assert_records_equal_csv(report["plans"], f"{tmp}/plan.csv")
        self.assertEqual(podsim.plan(TRAINING, jobs=2)["plans"], report["plans"])
        self.assertEqual(report["plans"][0]["rank"], 1)
        self.assertIn("simulated winner", report["table"])
        self.assertGreater(report["x_opt"], 0)


class FileReferenceTest(unittest.TestCase):
    """A relative calibration profile, taken from beside the scenario (or base_dir) wherever the
    points run: sweep and compare write a dict's scenario into output_dir, and cwd may differ."""
    RING = {"version": 1, "hardware": {"preset": "v5e", "profile": "profiles/p.yaml"}, "topology": {"mesh": {"X": 8}},
            "workload": {"kind": "collectives",
                         "operations": [{"name": "ag", "kind": "all_gather", "axes": ["X"], "bytes": "1 KiB"}]}}
    TRAINING = {"version": 1, "hardware": {"preset": "v5e", "profile": "profiles/p.yaml"}, "topology": {"mesh": {"X": 4}},
                "workload": {"kind": "training", "model": {"preset": "llama2-7b", "layers": 2},
                             "batch_tokens": 16384, "sequence_length": 2048, "parallelism": {"data": ["X"]}}}

    @staticmethod
    def write_profile(hop_latency, name="p.yaml"):
        with open(os.path.join("sc", "profiles", name), "w") as f:
            f.write(f'version: 1\nname: {name}\nchip: v5e\nhop_model: additive\n'
                    f'parameters: {{hop_latency: "{hop_latency}"}}\n')

    def setUp(self):
        self.cwd = os.getcwd()
        self.tmp = tempfile.TemporaryDirectory()
        os.chdir(self.tmp.name)
        os.makedirs(os.path.join("sc", "profiles"))
        self.write_profile("1 us")
        with open(os.path.join("sc", "s.yaml"), "w") as f:
            json.dump(self.RING, f)   # JSON is YAML

    def tearDown(self):
        os.chdir(self.cwd)
        self.tmp.cleanup()

    def scenarios(self):
        return {"file": podsim.load(os.path.join("sc", "s.yaml")), "dict": podsim.load_dict(self.RING, base_dir="sc")}

    def test_sweep_and_compare(self):
        for how, scenario in self.scenarios().items():
            with self.subTest(how):
                points = podsim.sweep(scenario, {"topology.mesh.X": [4, 8]}, output_dir=f"o-{how}")
                self.assertEqual([p["status"] for p in points], ["ok", "ok"], [p["error"] for p in points])
                rows = podsim.compare(scenario, ["4", "8"], output_dir=f"c-{how}")
                self.assertEqual([r["status"] for r in rows], ["ok", "ok"], [r["error"] for r in rows])
                # A relative profile given as an override or a grid value is taken from the same place.
                self.write_profile("3 us", "q.yaml")
                points = podsim.sweep(scenario, {"hardware.profile": ["profiles/p.yaml", "profiles/q.yaml"]},
                                      overrides={"topology.mesh.X": 4}, output_dir=f"g-{how}")
                self.assertEqual([p["status"] for p in points], ["ok", "ok"], [p["error"] for p in points])
                self.assertLess(points[0]["summary"]["total_time_s"], points[1]["summary"]["total_time_s"])
                rows = podsim.compare(scenario, ["4"], overrides={"hardware.profile": "profiles/q.yaml"})
                self.assertEqual(rows[0]["status"], "ok", rows[0]["error"])

    def test_sweep_again_after_the_profile_changed(self):
        # In one process, as a notebook would: the second sweep must see the new profile.
        for how, scenario in self.scenarios().items():
            with self.subTest(how):
                self.write_profile("1 us")
                first = podsim.sweep(scenario, {"topology.mesh.X": [8]}, output_dir=f"o-{how}")
                self.write_profile("5 us")
                again = podsim.sweep(scenario, {"topology.mesh.X": [8]}, output_dir=f"o-{how}")
                self.assertEqual(again[0]["status"], "ok", again[0]["error"])
                self.assertLess(first[0]["summary"]["total_time_s"], again[0]["summary"]["total_time_s"])

    def test_loaded_then_changed_directory(self):
        # A Scenario remembers where its relative paths were taken from: a notebook that loads,
        # then changes directory, still sweeps and compares the same files.
        scenarios = self.scenarios()
        os.makedirs("elsewhere")
        os.chdir("elsewhere")
        for how, scenario in scenarios.items():
            with self.subTest(how):
                points = podsim.sweep(scenario, {"topology.mesh.X": [4]}, overrides={"topology.mesh.X": 8})
                self.assertEqual(points[0]["status"], "ok", points[0]["error"])
                rows = podsim.compare(scenario, ["4"])
                self.assertEqual(rows[0]["status"], "ok", rows[0]["error"])
                self.assertEqual(podsim.run(scenario.with_overrides({"topology.mesh.X": 4})).summary["topology"]["chips"], 4)
        self.assertEqual(scenarios["file"].path, os.path.join("sc", "s.yaml"))   # as given

    def test_plan(self):
        report = podsim.plan(podsim.load_dict(self.TRAINING, base_dir="sc"), budget_s=5)
        self.assertGreater(len(report["plans"]), 0)
        self.assertEqual(report["plans"][0]["rank"], 1)

    def test_plan_ignores_the_keys_it_searches_and_types_its_columns(self):
        scenario = podsim.load_dict(self.TRAINING, base_dir="sc")
        report = podsim.plan(scenario, budget_s=5)
        # 8 sequences do not split over 4 replicas x 3 microbatches: the loader refuses that in a
        # run, the planner searches microbatches itself and drops it (as `podsim plan` does).
        other = podsim.plan(scenario, overrides={"workload.microbatches": 3, "workload.parallelism.fsdp": True},
                            budget_s=5)
        self.assertEqual(other["plans"], report["plans"])
        for plan in report["plans"]:
            memory = plan["memory_per_chip_bytes"]
            if plan["feasible"]:
                self.assertIsInstance(memory, int)
            else:
                self.assertIsNone(memory)   # a plan that cannot be built has no layout
            if plan["simulated"]:
                self.assertIsInstance(plan["step_time_s"], float)
            else:
                self.assertIsNone(plan["step_time_s"])


class ConverterTest(unittest.TestCase):
    """Python values the YAML writer cannot take: a ValueError naming the key path, never a crash."""
    DOCUMENT = {"version": 1, "hardware": {"preset": "v5e"}, "topology": {"mesh": {"X": 4}},
                "workload": {"kind": "collectives",
                             "operations": [{"name": "ar", "kind": "all_reduce", "axes": ["X"], "bytes": "1 MiB"}]}}

    @staticmethod
    def bad_values():
        """(name, value, the key path below the value's own key the error names)."""
        cycle = {}
        cycle["x"] = cycle
        loop = [1]
        loop.append(loop)
        deep = []
        for _ in range(50_000):
            deep = [deep]
        return [("dict cycle", cycle, r"\.x' contains itself"),
                ("list cycle", loop, r"\[1\]' contains itself"),
                ("50,000 deep", deep, r"(\[0\]){99,100}'; expected at most 100 levels")]

    def test_load_dict(self):
        for name, value, where in self.bad_values():
            with self.subTest(name), self.assertRaisesRegex(ValueError, "description" + where):
                podsim.load_dict(dict(self.DOCUMENT, description=value))

    def test_overrides(self):
        for name, value, where in self.bad_values():
            with self.subTest(name), self.assertRaisesRegex(ValueError, "description" + where):
                podsim.load_dict(self.DOCUMENT, overrides={"description": value})
            with self.subTest(name + ", load"), self.assertRaisesRegex(ValueError, "description" + where):
                podsim.load(ALLGATHER, overrides={"description": value})

    def test_sweep_grid_values(self):
        for name, value, where in self.bad_values():
            with self.subTest(name), self.assertRaisesRegex(ValueError, "description" + where):
                podsim.sweep(ALLGATHER, {"description": ["fine", value]})
        # A grid that is itself a self-containing list is caught the same way.
        loop = []
        loop.append(loop)
        with self.assertRaisesRegex(ValueError, r"'description\[0\]' contains itself"):
            podsim.sweep(ALLGATHER, {"description": loop})

    def test_text_utf8_cannot_hold(self):
        # A lone surrogate (os.fsdecode's escape of a byte) was pybind11's bare RuntimeError.
        with self.assertRaisesRegex(ValueError, r"at 'description\.x'.*lone surrogates"):
            podsim.load_dict(dict(self.DOCUMENT, description={"x": "\ud800"}))
        with self.assertRaisesRegex(ValueError, "lone surrogates"):
            podsim.load(ALLGATHER, overrides={"description\udcff": "x"})

    def test_shared_values_are_not_cycles(self):
        # The same list twice is a tree as YAML sees it; only the path to a value matters.
        shared = ["X"]
        operation = {"name": "ar", "kind": "all_reduce", "axes": shared, "bytes": "1 MiB"}
        document = dict(self.DOCUMENT, workload={"kind": "collectives",
                                                 "operations": [operation, dict(operation, name="ar2", axes=shared)]})
        self.assertEqual(podsim.load_dict(document).kind, "collectives")
        # ... but sharing cannot multiply a document past a million values.
        wide = [0]
        for _ in range(30):
            wide = [wide, wide]
        with self.assertRaisesRegex(ValueError, "more than 1000000 values"):
            podsim.load_dict(dict(self.DOCUMENT, description=wide))
        # 100 levels are allowed (and fail as the scenario's own check, not the converter's).
        nested = "leaf"
        for _ in range(99):
            nested = [nested]
        with self.assertRaisesRegex(podsim.InputError, "description"):
            podsim.load_dict(dict(self.DOCUMENT, description=nested))


class InputErrorTest(unittest.TestCase):
    def test_located_message_equals_the_cli(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "bad.yaml")
            with open(ALLGATHER) as f:
                text = f.read().replace('kind: all_gather', 'kind: all_gathre')
            with open(path, "w") as f:
                f.write(text)
            line = text.splitlines().index("      kind: all_gathre") + 1
            cli = subprocess.run([CLI, "run", path, "-o", tmp], capture_output=True, text=True)
            self.assertEqual(cli.returncode, 2)
            with self.assertRaises(podsim.InputError) as caught:
                podsim.load(path)
        error = caught.exception
        self.assertIsInstance(error, ValueError)
        self.assertEqual("podsim: error: " + str(error), cli.stderr.strip())
        self.assertEqual(error.file, path)
        self.assertEqual(error.line, line)
        self.assertEqual(error.key, "workload.operations[0].kind")
        self.assertEqual(error.value, "all_gathre")
        self.assertTrue(str(error).startswith(f"{path}:{line}:"))

    def test_override_and_dict_errors_are_located(self):
        with self.assertRaises(podsim.InputError) as caught:
            podsim.run(DECODE, {"workload.batch": "many"})
        self.assertEqual(caught.exception.key, "workload.batch")
        self.assertIn("--set workload.batch=many", str(caught.exception))
        with self.assertRaises(podsim.InputError) as caught:
            podsim.load_dict({"version": 1, "hardware": {"preset": "v9"}, "topology": {"mesh": {"X": 4}},
                              "workload": {"kind": "collectives", "operations": []}})
        self.assertEqual(caught.exception.file, "<dict>")
        self.assertEqual(caught.exception.key, "hardware.preset")
        self.assertGreater(caught.exception.line, 0)
        with self.assertRaises(podsim.InputError):
            podsim.load(os.path.join(SOURCE, "no-such-scenario.yaml"))
        with self.assertRaises(podsim.InputError) as caught:
            podsim.plan(ALLGATHER)
        self.assertIn("training workload", str(caught.exception))
        with self.assertRaises(TypeError):
            podsim.load_dict({"version": 1, "workload": {"batch": object()}})


if __name__ == "__main__":
    unittest.main(verbosity=2)
