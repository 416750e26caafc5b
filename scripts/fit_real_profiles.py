#!/usr/bin/env python3
"""Refit the shipped real-hardware profiles (scenarios/profiles/real/) from issue 26's
development set (scenarios/real/real_tpu.measurements.yaml; docs/calibration.md, "Real hardware").

Two calibrations:
  1. compute and ICI, with leave-one-out, on the dense single-slice rows, C1, P1 and the book's
     measured v5e collectives (F1's size sweep, #22, #23; T17, the MoE step, is in no fit: the shipped
     v6e profile predicts it): per generation a matmul efficiency and an ICI link efficiency (C1
     measures v6e's, F1 and #22 v5e's, the exposed tensor-parallel collectives v5p's), shared by all
     the latency structure of a collective, a cost per hop and a cost per collective launch (F1's
     small sizes cross 8 hops, #23 3, P1 pays 64 launches a token), the HBM efficiency fixed at C6's
     copy (1359.6 of 1640 GB/s); every row runs its rings with the antipodal split (real chips'
     bandwidth-optimal bidirectional ring, docs/modelling.md), which the profiles record;
  2. DCN, on the multi-slice rows up to 8 slices with stage 1's values fixed: the share of its NIC a
     host's DCN transfers achieve and their cost per transfer, shared by every generation (one
     multi-slice runtime), started from the values read by hand. The 16- and 32-slice rows are left
     out of both: they test the DCN model.
The profiles written merge the two: stage 1's values, stage 2's DCN values, and each row's
residual and leave-one-out prediction from the stage that fitted it.

Usage (from the repository root, after building):  python3 scripts/fit_real_profiles.py [--podsim build/podsim]
Takes about 50 minutes on two cores (stage 1 about 35, stage 2 about 15); stage 1's 11 collective
rows cost seconds, and its leave-one-out refits reuse the optimum's predictions (calibrate's memo).
"""
import argparse
import csv
import os
import shlex
import subprocess
import sys
import tempfile

import yaml

MEASUREMENTS = "scenarios/real/real_tpu.measurements.yaml"
OUT_DIR = "scenarios/profiles/real"
HOP_MODEL = "additive"       # a DCN transfer's fixed cost adds to its time (the M3/M5 slopes show it)
HBM_EFFICIENCY = "0.83"      # C6: an HBM copy at 1359.6 GB/s of v6e's 1640 (tpu-recipes microbenchmarks)
# T17 and V5-T1 (MoE) are in no fit: the profiles' out-of-sample checks. V6-T6 and V6-T7 (issue 43,
# real-measurements.md section E) are dense FSDP steps on v6e-8 to v6e-128 beside T13.
# V6-S1's two TPOT rows (vLLM on v6e-8 at 64 and 128 in flight) are the only rows that price a
# serving step's attention a sequence at a time; its TTFT and throughput rows stay out, as checks.
# Ironwood (issue 44): IW-C1's gathers and the dense steps IW-T14, IW-T15 (fp8) and IW-T12; IW-T1
# (MoE) and IW-I3a (serving) stay out, as checks. The shipped tpu7x.yaml came from these rows
# alone with the shared values fixed at this fit's (docs/calibration.md, "The tpu7x (Ironwood)
# profile"); a rerun of this script fits them jointly.
STAGE1_ROWS = "T?,T13*,T14*,V6-T6,V6-T7*,M?-1x,C1,P1,F1-*,K2?,V6-S1-*-tpot,IW-C1-*,IW-T14,IW-T15,IW-T12"
STAGE1_PER_GENERATION = "matmul_efficiency,link_efficiency,collective_overhead"
# attention_sequence_overhead: a paged-attention kernel's cost a sequence and layer (its serial grid
# step and the small DMAs its prefetch does not hide), shared: one kernel family on every
# generation, measured on v6e only (docs/calibration.md, "Paged attention's cost a sequence").
STAGE1_SHARED = "hop_latency,attention_sequence_overhead"
# Where stage 1 starts the ICI parameters: F1's plateau and #22 put v5e's links near 0.94, C1
# v6e's near 0.65; F1's small sizes and #23 a hop near the book's 1 us plus a few us a launch.
# From the ideal values (efficiency 1, no launch cost) the logistic's flat ends make the local fit crawl.
STAGE1_START = "link_efficiency=0.85,hop_latency=1.5 us,collective_overhead=3 us,attention_sequence_overhead=0.4 us"
STAGE2_ROWS = "M?-2x,M?-4x,M?-8x"
# No collective of v5p or v4 is measured: fitted on their training rows alone, their link
# efficiency trades against the matmul efficiency and ends on its 0.3 bound (a trial fit: v5p
# 0.3 with matmuls at 0.97). Until a collective of theirs is measured they take the measured
# generations' links, the inverse-variance mean of v5e's 0.938 +- 0.017 and v6e's 0.906 +- 0.057
# (C1 read with its additions on the core in series: issue 43); issue 26's shared 0.704 came from
# C1 read with them hidden (docs/calibration.md, "One profile per chip for small and large messages").
UNMEASURED_LINKS = "v5p:link_efficiency=0.935,v4:link_efficiency=0.935"
# A collective's launch cost is the software stack's as much as the chip's: P1 (PyTorch/XLA of 2023
# on v4, 64 small all-reduces a token) wants about 7 us, the book's v5e collectives (F1's small
# sizes, #23: JAX on v5e) about 1 us, and shared, neither fits (P1 -17%). Each generation has its
# own; no v5p or v6e row measures a launch (their training steps' collectives are megabytes), so
# theirs is fixed at the v5e value's scale, 1 us (docs/calibration.md).
UNMEASURED_LAUNCHES = "v5p:collective_overhead=1 us,v6e:collective_overhead=1 us"
STAGE1_FIT = ["--fit", STAGE1_PER_GENERATION, "--shared", STAGE1_SHARED,
              "--fix", "hbm_efficiency=" + HBM_EFFICIENCY + "," + UNMEASURED_LINKS + "," + UNMEASURED_LAUNCHES, "--start", STAGE1_START]
STAGE2_SHARED = "dcn_efficiency,dcn_latency"
# Where the DCN fit starts: M5's step from 1 to 8 slices and the M3/M5 slopes from 8 to 32 read by
# hand (docs/calibration.md). From the ideal DCN (efficiency 1, no cost per transfer) the local fit
# crawls along the logistic's flat end for hours.
STAGE2_START = "dcn_efficiency=0.45,dcn_latency=0.34 ms"
# What ships: the DCN values read from the slowdowns of M1, M3 and M5 (1 to 32 slices) relative
# to each model's one-slice step. A fit of stage 2 to the step times themselves (--stage2 fit) is
# dominated by each model's one-slice error (M3 +1.9%, M5 -2.0%), which no DCN value moves: it
# puts the cost per transfer at its 0 bound (sd 0.73 ms) and the efficiency at 0.72 +- 0.37.
DCN_BY_HAND = [("dcn_latency", '"0.34 ms"'), ("dcn_efficiency", "0.45")]


def calibrate(podsim, rows, args, out):
    command = [podsim, "calibrate", MEASUREMENTS, "--rows", rows, "--hop-model", HOP_MODEL, "-o", out] + args
    print("$ " + shlex.join(command), flush=True)
    subprocess.run(command, check=True)
    return command


def profiles(directory):
    """Each PROFILE.yaml of `directory`: its parsed document and its text."""
    out = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith(".yaml"):
            with open(os.path.join(directory, name)) as f:
                text = f.read()
            out[name[:-5]] = (yaml.safe_load(text), text)
    return out


def section_lines(text, header, indent):
    """The lines under `header` (a line of its own) as calibrate wrote them, each starting with
    `indent`: the values keep their units and comments."""
    lines, inside = [], False
    for line in text.splitlines():
        if line.startswith(header):
            inside = True
            continue
        if inside and line.startswith(indent):
            lines.append(line)
        elif inside:
            break
    return lines


def parameter_lines(text):
    return section_lines(text, "parameters:", "  ")


def residual_lines(text):
    return section_lines(text, "  residuals:", "    ")


def evidence_lines(text):
    """fit.evidence as calibrate wrote it: each fitted parameter's sd and the rows that inform it
    (their share of its information), which validate reads to mark a row the sole evidence for
    its parameter (docs/calibration.md, "Prediction intervals")."""
    lines = section_lines(text, "  evidence:", "    ")
    header = [l for l in text.splitlines() if l.startswith("  evidence:")]
    return header + lines if lines else []


def with_fields(text, fields):
    """fit.residuals' lines each with the row's `field` (calibrate writes it; a stage directory
    written before it did lacks it): which kind of figure the row's error speaks for."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("  residuals:"):
            inside = True
        elif inside and line.startswith("    ") and line.rstrip().endswith("}") and "field:" not in line:
            row = line.strip().split(":")[0]
            line = line.rstrip()[:-1] + ", field: " + fields[row] + "}"
        elif inside and not line.startswith("    "):
            inside = False
        out.append(line)
    return "\n".join(out) + "\n"


def write_checks(podsim, out_dir):
    """fit.checks: every row of the measurement file in no fit, as its profile predicts it
    (validate --measured), so a prediction of a kind the fit has few rows of (a serving TTFT, a
    throughput) states the spread of the runs most like it (docs/calibration.md, "Prediction
    intervals"). Replaces the checks a profile had."""
    with tempfile.TemporaryDirectory() as tmp:
        table = os.path.join(tmp, "rows.csv")
        command = [podsim, "validate", "--measured", MEASUREMENTS, "--profiles", out_dir, "--csv", table]
        print("$ " + shlex.join(command), flush=True)
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        with open(table) as f:
            every = list(csv.DictReader(f))
    # Each row's summary field as validate reads it (a published figure's is its step time).
    fields = {r["name"]: r["field"] for r in every}
    rows = [r for r in every if r["group"] == "held_out"]
    for name in sorted(os.listdir(out_dir)):
        if not name.endswith(".yaml"):
            continue
        path = os.path.join(out_dir, name)
        with open(path) as f:
            text = f.read()
        lines = text.splitlines()
        if "  checks:" in lines:   # the block calibrate never writes: the last of fit
            lines = lines[:lines.index("  checks:")]
        # Its own rows of no fit, and every other generation's MoE ones: the MoE program is the same
        # on every chip and each generation has one MoE row or none, so an MoE step's interval is
        # made of all of them (docs/calibration.md, "Prediction intervals").
        profile = name[:-5]
        mine = [r for r in rows if r["profile"] == profile or r["moe"] == "true"]
        if mine:
            lines.append("  checks:")
            lines += [f"    {r['name']}: {{measured: {r['measured']}, predicted: {r['profile_predicted']}, field: {r['field']}"
                      + (", moe: true" if r["moe"] == "true" else "")
                      + ("" if r["profile"] == profile else f", profile: {r['profile']}") + "}"
                      for r in mine]
        with open(path, "w") as f:
            f.write(with_fields("\n".join(lines) + "\n", fields))
        print(f"{path}: {len(mine)} checks")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--podsim", default="build/podsim")
    parser.add_argument("--out", default=OUT_DIR)
    parser.add_argument("--stage1", help="a directory stage 1 already wrote (its -o): skip running it again")
    parser.add_argument("--stage2", default="hand",
                        help="hand (default): the DCN values read from the slowdowns (DCN_BY_HAND); fit: run the "
                        "stage-2 fit on the step times; a directory a stage-2 fit already wrote (its -o); none: the "
                        "ideal DCN")
    parser.add_argument("--checks-only", action="store_true",
                        help="only (re)write fit.checks (and residuals' fields) of the profiles in --out")
    a = parser.parse_args()
    if a.checks_only:
        write_checks(a.podsim, a.out)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        stage1_dir, stage2_dir = os.path.join(tmp, "compute"), os.path.join(tmp, "dcn")
        if a.stage1:
            stage1_dir = a.stage1
            stage1 = [a.podsim, "calibrate", MEASUREMENTS, "--rows", STAGE1_ROWS, "--hop-model", HOP_MODEL, "-o", "DIR"] + STAGE1_FIT
        else:
            stage1 = calibrate(a.podsim, STAGE1_ROWS, STAGE1_FIT, stage1_dir)
        first = profiles(stage1_dir)
        fixed = ["hbm_efficiency=" + HBM_EFFICIENCY]
        for name, (doc, _) in first.items():
            if any(r.startswith("M") for r in doc["fit"]["residuals"]):   # a generation with multi-slice rows
                for key in STAGE1_PER_GENERATION.split(","):   # a value stage 1 fixed is in the profile too
                    fixed.append(f"{name}:{key}={doc['parameters'][key]}")
        shared = next(iter(first.values()))[0]["parameters"]
        for name in STAGE1_SHARED.split(","):   # one value for every profile
            fixed.append(f"{name}={shared[name]}")
        # No leave-one-out here (9 refits, ~40 min on two cores): the 16- and 32-slice rows, in
        # no fit, are the DCN model's test.
        stage2_args = ["--fit", "", "--shared", STAGE2_SHARED, "--start", STAGE2_START, "--no-leave-one-out",
                       "--fix", ",".join(fixed)]
        second, dcn, stage2 = {}, [], None
        if a.stage2 == "hand":
            dcn = [f"  {k}: {v}   # read from the slowdowns of M1, M3 and M5 (docs/calibration.md); shared by every generation"
                   for k, v in DCN_BY_HAND]
        elif a.stage2 != "none":
            if a.stage2 == "fit":
                stage2 = calibrate(a.podsim, STAGE2_ROWS, stage2_args, stage2_dir)
            else:
                stage2_dir = a.stage2
                stage2 = [a.podsim, "calibrate", MEASUREMENTS, "--rows", STAGE2_ROWS, "--hop-model", HOP_MODEL, "-o", "DIR"] + stage2_args
            second = profiles(stage2_dir)
            dcn = [l.split("   #")[0] + "   # stage 2 (DCN), shared by every generation"
                   for l in parameter_lines(next(iter(second.values()))[1]) if l.split(":")[0].strip() in STAGE2_SHARED.split(",")]
        os.makedirs(a.out, exist_ok=True)
        for name, (doc, text) in first.items():
            merged = ["# A podsim calibration profile for real " + doc["chip"] + " hardware (issue 26; docs/calibration.md,",
                      "# \"Real hardware\"), written by scripts/fit_real_profiles.py from its calibrations:",
                      "#   podsim " + shlex.join(stage1[1:]).replace(stage1_dir, "DIR")]
            if second:
                merged += ["#   podsim " + shlex.join(stage2[1:]), "# the second with the first's values fixed."]
            elif a.stage2 == "hand":
                merged += ["# and the DCN's values read by hand from the multi-slice curves (a fit to their step times",
                           "# cannot separate them from each model's one-slice error: docs/calibration.md)."]
            else:
                merged += ["# (the DCN is the ideal machine's)"]
            merged += ["# Used by name: hardware: {preset: " + doc["chip"] + ", profile: " + name + "}",
                      "version: 1", "name: " + name, "chip: " + doc["chip"], "hop_model: " + doc["hop_model"]]
            if doc.get("mxu_padding"):
                merged.append("mxu_padding: true")
            if doc.get("antipodal_split"):
                merged.append("antipodal_split: true")
            if doc.get("reductions_on_tensor_core"):
                merged.append("reductions_on_tensor_core: true")
            if doc.get("compute_model"):
                merged.append("compute_model: " + doc["compute_model"])
            merged.append("parameters:")
            merged += [l.replace("; shared by every profile of the fit", "; shared by every generation")
                       for l in parameter_lines(text)]
            merged += dcn
            merged += ["fit:", "  measurements: " + MEASUREMENTS]
            merged += evidence_lines(text)   # stage 1's: the DCN values are read, not fitted
            merged += ["  residuals:"]
            merged += residual_lines(text)
            if name in second:
                merged += residual_lines(second[name][1])
            with open(os.path.join(a.out, name + ".yaml"), "w") as f:
                f.write("\n".join(merged) + "\n")
            print("wrote " + os.path.join(a.out, name + ".yaml"))
    write_checks(a.podsim, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
