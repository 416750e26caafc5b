#!/usr/bin/env python3
"""Fit S2's serving-stack work per step from jetstream-pytorch's table (docs/calibration.md, "S2").

jetstream-pytorch's benchmarks/summary.md (2024-03-28, v5e-8) has four rows podsim can write on
S2's scenario: LLaMA-2 7B bf16 and int8 at batch 96, 13B bf16 at 48 and int8 at 96 (int8 is the
weights and the KV cache, as the table's $quantize sets both). Every request is sent at once, so
the steps a run takes do not depend on how long each lasts: with the host's work between device
steps, a run lasts  device + a x steps + b x (the steps' summed batches).  This simulates each row
on the device alone under the shipped v5e profile, then solves a and b by least squares on the
relative error of each row's predicted run time (the rows weigh alike whatever their length).

Usage (from the repository root, after building): python3 scripts/fit_s2_host.py [--podsim build/podsim]
Prints each row's device-alone throughput, its steps and summed batch, and the fit.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile

SCENARIO = "scenarios/real/s2_jetstream_llama2_7b_v5e_8.yaml"
# (row, --set overrides, measured output tokens/s): jetstream-pytorch benchmarks/summary.md
ROWS = [
    ("LLaMA-2 7B bf16, batch 96 (S2)", {}, 3663.0),
    ("LLaMA-2 7B int8, batch 96", {"workload.weights": "int8", "workload.kv_cache": "int8"}, 4783.0),
    ("LLaMA-2 13B bf16, batch 48", {"workload.model": "llama2-13b", "workload.max_batch": "48"}, 2056.0),
    ("LLaMA-2 13B int8, batch 96", {"workload.model": "llama2-13b", "workload.weights": "int8",
                                    "workload.kv_cache": "int8"}, 3458.0),
]


def device_alone(podsim, overrides, out):
    """Runs one row with no host work; returns (output tokens, run time, steps, summed batch)."""
    command = [podsim, "run", SCENARIO, "-o", out, "--set", "hardware.profile=v5e",
               "--set", "workload.host_overhead_per_step=0 s",
               "--set", "workload.host_overhead_per_sequence=0 s"]
    for key, value in overrides.items():
        command += ["--set", key + "=" + value]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    steps, batch = 0, 0
    with open(os.path.join(out, "steps.csv")) as f:
        for row in csv.DictReader(f):
            steps += 1
            batch += int(row["batch"])
    return summary["total_output_tokens"], summary["total_time_s"], steps, batch


def least_squares_2(rows):
    """Solves min sum ((device + a s + b n - measured) / measured)^2 for a, b."""
    saa = sab = sbb = sar = sbr = 0.0
    for device, steps, batch, measured in rows:
        x, y, r = steps / measured, batch / measured, (measured - device) / measured
        saa += x * x; sab += x * y; sbb += y * y; sar += x * r; sbr += y * r
    det = saa * sbb - sab * sab
    return (sar * sbb - sbr * sab) / det, (saa * sbr - sab * sar) / det


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--podsim", default="build/podsim")
    args = parser.parse_args()
    fitted = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, (name, overrides, measured_tps) in enumerate(ROWS):
            tokens, device, steps, batch = device_alone(args.podsim, overrides, os.path.join(tmp, str(index)))
            measured = tokens / measured_tps
            fitted.append((device, steps, batch, measured))
            print(f"{name}: device alone {tokens / device:.0f} tokens/s, {steps} steps, mean batch "
                  f"{batch / steps:.1f}, host a step it leaves {(measured - device) / steps * 1e3:.2f} ms")
    a, b = least_squares_2(fitted)
    print(f"host_overhead_per_step {a * 1e3:.2f} ms, host_overhead_per_sequence {b * 1e6:.0f} us")
    for (name, _, measured_tps), (device, steps, batch, measured) in zip(ROWS, fitted):
        predicted = device + a * steps + b * batch
        print(f"  {name}: {measured * measured_tps / predicted:.0f} tokens/s ({measured / predicted - 1:+.1%})")
    # Each term alone, to show that both are needed: the same least squares in one unknown.
    for label, pick in (("a per-step term alone", 1), ("a per-sequence term alone", 2)):
        x = [(row[pick] / row[3], (row[3] - row[0]) / row[3]) for row in fitted]
        c = sum(u * r for u, r in x) / sum(u * u for u, r in x)
        errors = [row[3] / (row[0] + c * row[pick]) - 1 for row in fitted]
        print(f"{label}: misses by {min(errors):+.1%} to {max(errors):+.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
