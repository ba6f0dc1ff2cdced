#!/usr/bin/env python3
"""Prints the runs of NVIDIA's cuda-samples that tests/gpu/run-samples-on-device.sh makes, one per line:
NAME<TAB>LABEL<TAB>ARGS (shell-quoted), from the samples found under BIN_DIR (one directory per sample, holding
its executable of the same name) and the arguments in cuda-samples' own test_args.json, as its run_tests.py
uses them. Samples marked "skip" there, or that need more GPUs than GPUS, are printed as NAME<TAB>SKIP<TAB>why.
    plan.py BIN_DIR TEST_ARGS_JSON GPUS"""
import json
import os
import shlex
import sys

bin_dir, args_file, gpus = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(args_file) as f:
    config = json.load(f)
for name in sorted(os.listdir(bin_dir)):
    exe = os.path.join(bin_dir, name, name)
    if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
        continue
    entry = config.get(name, {})
    if entry.get("skip"):
        print(f"{name}\tSKIP\tmarked skip in test_args.json")
        continue
    if entry.get("min_gpus", 1) > gpus:
        print(f"{name}\tSKIP\tneeds {entry['min_gpus']} GPUs")
        continue
    runs = [entry] if "args" in entry else entry.get("runs", [{}])
    runs = [r for r in runs if not r.get("skip")]
    for i, run in enumerate(runs):
        label = name if len(runs) == 1 else f"{name}#{i + 1}"
        print(f"{name}\t{label}\t{shlex.join(run.get('args', []))}")
