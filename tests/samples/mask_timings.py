#!/usr/bin/env python3
"""Prints a sample's output with the figures that differ from run to run masked: numbers on lines that report
a time, a rate or a throughput, and hexadecimal addresses. What is left (results, device properties, PASS/FAIL
lines) must be the same natively and through vmcuda.
    mask_timings.py FILE"""
import re
import sys

TIMING = re.compile(r"(?i)(time|sec\b|secs|seconds|msec|\bms\b|\bus\b|usec|GB/s|MB/s|GiB/s|MiB/s|gflop|tflop|"
                    r"throughput|bandwidth|performance|elapsed|speed|\brate\b|clocks?\b|latency|cycles|"
                    r"per second|/s\b|ops/|samples/|keys/|\bTOPS\b|\bFLOPS\b)")
NUMBER = re.compile(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?")
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")

with open(sys.argv[1], errors="replace") as f:
    for line in f:
        line = ADDRESS.sub("0x#", line)
        if TIMING.search(line):
            line = NUMBER.sub("#", line)
        sys.stdout.write(line)
