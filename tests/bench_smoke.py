#!/usr/bin/env python3
"""bench_smoke.py: the bench programs still run and print what
docs/performance.md quotes from them (issue 19's acceptance: bench/ prints
the goals' table with verdicts, on the machine it runs on), on a small
generated pile. Times are printed by the programs, never asserted here;
what is asserted is what must hold on any machine:

  - every program names the machine (`machine (lscpu): ...`) before its
    tables, and triad a positive bandwidth;
  - bench_step prints the goals table, goals 1 to 4 each with a verdict,
    and the step's omega_max (one mode) agrees with the full analysis's
    and with `cmodes analyze` to the tolerance (1e-6 on the residual, so
    far closer on the value);
  - bench_block's block Lanczos gives every block product's columns bit
    for bit and the sixth eigenvalue of `cmodes analyze` to 1e-6 (another
    method on the same operator);
  - bench_warm's cold and warm solves give `cmodes analyze`'s omega_max;
  - bench_modes (bench/run.sh's program) agrees with a dense LAPACK solve
    of the same operator to 1e-9, within its own bounds.

    bench_smoke.py --bench DIR --cmodes CMODES --data DIR
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

fails = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        fails.append(what)


def run(cmd, cwd=None, stderr=None):
    """cmd's standard output; its standard error goes into the list
    stderr when one is given."""
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=300)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:], sep="\n")
    check(p.returncode == 0, f"{os.path.basename(cmd[0])} exits 0")
    if stderr is not None:
        stderr.append(p.stderr)
    return p.stdout


def machine_line(out, prog):
    check(re.search(r"^machine \(lscpu\): \S", out, re.M) is not None,
          f"{prog} names the machine")


def analyze(cmodes, scene):
    out = subprocess.run([cmodes, "analyze", scene, "--json", "--no-timings",
                          "--tol", "1e-6"], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    return json.loads(out)


def rel(a, b):
    return abs(a - b) / abs(b)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--cmodes", required=True)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    b = lambda name: os.path.join(a.bench, name)
    with tempfile.TemporaryDirectory(prefix="bench_smoke.") as wd:
        out = run([b("triad"), "--mib", "8", "--reps", "2"])
        machine_line(out, "triad")
        m = re.search(r"^triad: ([0-9.]+) GB/s", out, re.M)
        check(m is not None and float(m.group(1)) > 0, "triad > 0 GB/s")

        scene = os.path.join(wd, "pile.cmsb")
        run([b("bench_step"), "--size", "3000", "--reps", "0", "--save",
             scene])
        ref = analyze(a.cmodes, scene)
        wmax = ref["omega_max"]
        err = []  # its runs' lines, each with its omega_max
        out = run([b("bench_step"), "--scene", scene, "--reps", "1",
                   "--baseline-cli", a.cmodes, "--cli", a.cmodes],
                  stderr=err)
        machine_line(out, "bench_step")
        for g in ("1", "2", "3", "4"):
            row = re.search(r"^\| %s: .*\|\s*$" % g, out, re.M)
            check(row is not None, f"bench_step's goals table has goal {g}")
        verdicts = re.findall(r"\*\*(holds|does not hold)\*\*", out)
        check(len(verdicts) >= 5, f"bench_step gives verdicts "
              f"({len(verdicts)})")
        m = re.search(r"omega_max equal: (yes|no)(?:\n\s+relative "
                      r"difference ([0-9.e+-]+))?", out)
        d = 0.0 if m and m.group(1) == "yes" else \
            float(m.group(2)) if m and m.group(2) else 1.0
        check(d < 1e-6, f"the step's omega_max is the full analysis's "
              f"(relative {d:.3g})")
        w = [float(x) for x in re.findall(r"omega_max ([0-9.]+)", err[0])]
        check(w and all(rel(x, wmax) < 1e-8 for x in w),
              f"bench_step's omega_max {w[:2]} is cmodes analyze's "
              f"{wmax:.5f}")

        out = run([b("bench_block"), "--scene", scene, "--ncv", "150",
                   "--reps", "1", "--blocks", "1,2"])
        machine_line(out, "bench_block")
        rows = re.findall(r"^\| ([12]) \|(.*)$", out, re.M)
        check(len(rows) == 2, "bench_block has rows for b = 1 and 2")
        lam6 = ref["modes"][5]["omega"] ** 2
        for bsize, rest in rows:
            cells = [c.strip() for c in rest.split("|")]
            check(cells[3] == "yes", f"b = {bsize}: block product columns "
                  "bit for bit")
            v = float(cells[8])
            check(rel(v, lam6) < 1e-6, f"b = {bsize}: sixth eigenvalue "
                  f"{v} against cmodes analyze's {lam6:.1f}")

        pile = os.path.join(a.data, "pile3d.json")
        out = run([b("bench_warm"), pile])
        machine_line(out, "bench_warm")
        # bench_warm solves the scene with 1% of its contacts 2% stiffer
        # (warm_row): the same change here, solved by the CLI
        with open(pile) as f:
            sc = json.load(f)
        nc = len(sc["contacts"])
        for i in range(nc // 100):
            sc["contacts"][(37 * i + 11) % nc]["stiffness"] *= 1.02
        changed = os.path.join(wd, "pile3d-changed.json")
        with open(changed, "w") as f:
            json.dump(sc, f)
        w3 = analyze(a.cmodes, changed)["omega_max"]
        row = re.search(r"^\| \S*pile3d.json \|(.*)$", out, re.M)
        cells = [c.strip() for c in row.group(1).split("|")] if row else []
        ok = len(cells) >= 7 and all(
            rel(float(cells[k]), w3) < 1e-8 for k in (5, 6))
        check(ok, f"bench_warm's cold and warm omega_max are cmodes "
              f"analyze's {w3:.6f}")
        # bench_modes (bench/run.sh's program): its JSON line, with a dense
        # LAPACK solve of the same operator beside the Lanczos one
        out = run([b("bench_modes"), "--scene", "pile", "--size", "1e3",
                   "--reps", "1", "--dense-max", "2000", "--no-mem"])
        r = json.loads(out.strip().splitlines()[-1])
        check(r.get("dense_agree", 1) < 1e-9, f"bench_modes: Lanczos "
              f"against dense dsyevr {r.get('dense_agree')}")
        check(r["omega_lower"] <= r["omega_max"] <= r["omega_upper"],
              "bench_modes: omega_max within its bounds")
        check(r["omega"][0] == r["omega_max"] and
              r["omega"] == sorted(r["omega"], reverse=True),
              "bench_modes: modes descending from omega_max")
    print(f"{len(fails)} failed" if fails else "all passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
