#!/usr/bin/env python3
"""bench/mjcf.py: time of `cmodes import mjcf` and of the analysis of its
system, on Debian's MuJoCo samples (libmujoco-samples): humanoid,
22_humanoids, humanoid100. Each step is run REPS times (default 5) and the
median wall time printed, with the machine's CPU, caches and a STREAM-like
triad bandwidth (numpy, two passes: a = 3c; a += b, counted as 3 arrays).
Prints a Markdown table. Usage (from the source tree, build/ built):

    /usr/bin/python3 bench/mjcf.py [REPS]

The analysis is timed three ways: `cmodes analyze --matrices` (process
wall time), its own timings.eigen, and cmodes.analyze in Python (the
system read once, analysed REPS times)."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

TOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
CLI = os.environ.get("CMODES_CLI", os.path.join(TOP, "build", "cmodes"))
sys.path.insert(0, os.path.join(TOP, "python"))
import cmodes  # noqa: E402

MODELS = [("humanoid", "humanoid/humanoid.xml", "1"),
          ("22_humanoids", "humanoid/22_humanoids.xml", "1"),
          ("humanoid100", "humanoid100/humanoid100.xml", "0.5")]


def machine():
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    keep = ("Model name", "L1d cache", "L2 cache", "L3 cache", "CPU(s)")
    lines = [ln.strip() for ln in out.splitlines() if ln.split(":")[0]
             .strip() in keep]
    n = 20_000_000
    a, b, c = np.zeros(n), np.ones(n), np.ones(n)
    best = 1e9
    for _ in range(5):
        t0 = time.perf_counter()
        np.multiply(c, 3.0, out=a)
        a += b
        best = min(best, time.perf_counter() - t0)
    lines.append("triad (numpy, 1 thread, best of 5): %.1f GB/s"
                 % (3 * 8 * n / best / 1e9))
    return lines


def median_time(fn, reps):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main(reps=5):
    for ln in machine():
        print("    " + ln)
    print("\nmeasured on a shared machine under load (other jobs running): "
          "medians of %d runs\n" % reps)
    print("| model | dofs | contacts | import (s) | analyze CLI (s) | "
          "eigen (s) | cmodes.analyze (s) | omega_max (rad/s) | top contact |")
    print("|---|---|---|---|---|---|---|---|---|")
    work = tempfile.mkdtemp(prefix="cmodes-mjcf-")
    for name, rel, settle in MODELS:
        path = os.path.join("/usr/share/mujoco/model", rel)
        if not os.path.exists(path):
            print("| %s | (not installed) |" % name)
            continue
        out = os.path.join(work, name)
        imp = [CLI, "import", "mjcf", "-q", "--settle", settle, "-o", out,
               path]
        t_imp = median_time(lambda: subprocess.run(imp, check=True), reps)
        man = os.path.join(out, "manifest.json")
        ana = [CLI, "analyze", "--json", "--matrices", man]
        t_cli = median_time(lambda: subprocess.run(ana, check=True,
                                                   capture_output=True), reps)
        rep = json.loads(subprocess.run(ana, check=True, capture_output=True,
                                        text=True).stdout)
        eig = statistics.median(
            json.loads(subprocess.run(ana, capture_output=True, text=True)
                       .stdout)["timings"]["eigen"] for _ in range(reps))
        system = cmodes.read_matrices(man)
        t_py = median_time(lambda: cmodes.analyze(system), reps)
        top = rep["modes"][0]["contacts"][0]
        print("| %s | %d | %d | %.3f | %.3f | %.4f | %.4f | %.6f | %s %.3f |"
              % (name, system.shape[1], system.shape[0], t_imp, t_cli, eig,
                 t_py, rep["omega_max"], top["name"], top["share"]))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
