#!/usr/bin/env python3
"""What varies in a report between CPUs (issue 19, goal 5).

cmodes' own kernels (the products, the Lanczos basis work, the reductions)
and its own small dense routines (src/spectrum/dense.c: the Lanczos
projected problems and restarts, dense components up to 512) sum in a
fixed order on every CPU; the parts still done by OpenBLAS (ARPACK's BLAS
calls, dense problems above 512) run the kernels OpenBLAS picks for the
CPU at load time. OPENBLAS_CORETYPE forces that pick, so one machine can
replay what another CPU family would compute. This program runs
`cmodes analyze --json --no-timings` on each scene under every core type
this CPU can execute and prints, against the default pick, how many numeric
fields of each kind differ (eigenvalues and steps, residuals, mode shares,
the rest) and their largest relative difference.

    /usr/bin/python3 bench/bits_across_cpus.py [--cmodes build/cmodes]
        [--scene FILE ...] [--method auto,lanczos,arpack]

No numpy needed. Prints a markdown table (docs/report-format.md quotes it).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# core type -> CPU flags it needs (OpenBLAS DYNAMIC_ARCH names)
CORES = [("Prescott", []), ("Nehalem", ["sse4_2"]),
         ("Sandybridge", ["avx"]), ("Haswell", ["avx2", "fma"]),
         ("Zen", ["avx2", "fma"]), ("SkylakeX", ["avx512f"]),
         ("Cooperlake", ["avx512_bf16"])]


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def flat(o, p=""):
    if isinstance(o, dict):
        for k, v in o.items():
            yield from flat(v, p + "." + k)
    elif isinstance(o, list):
        for i, v in enumerate(o):
            yield from flat(v, f"{p}[{i}]")
    else:
        yield p, o


def run(cmodes, scene, method, core):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    if core:
        env["OPENBLAS_CORETYPE"] = core
    cmd = [cmodes, "analyze", "--json", "--no-timings", "--method", method,
           scene]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode not in (0, 3):  # 3: not converged, still a report
        sys.exit(f"bits_across_cpus: {' '.join(cmd)} failed "
                 f"({p.returncode}): {p.stderr.strip()}")
    return dict(flat(json.loads(p.stdout)))


def kind(key):
    """The field's kind: eigenvalues and steps, residuals, mode shares
    (from the eigenvectors), or anything else (counts, names, order)."""
    last = key.rsplit(".", 1)[-1]
    if "residual" in last:
        return "residual"
    if "share" in last:
        return "share"
    if last in ("h", "ratio", "lambda") or last.startswith(
            ("omega", "certified", "h_")):
        return "value"
    return "other"


def compare(a, b):
    """Per kind: fields differing, largest relative difference."""
    out = {k: [0, 0.0] for k in ("value", "residual", "share", "other")}
    for key in set(a) | set(b):
        v, w = a.get(key), b.get(key)
        if v == w:
            continue
        c = out[kind(key)]
        c[0] += 1
        if (isinstance(v, (int, float)) and isinstance(w, (int, float))
                and not isinstance(v, bool) and v != 0):
            c[1] = max(c[1], abs(v - w) / abs(v))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cmodes", default=os.path.join(ROOT, "build", "cmodes"))
    ap.add_argument("--scene", action="append")
    ap.add_argument("--method", default="auto,lanczos,arpack")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="cm-bits-")
    scenes = a.scene
    if not scenes:
        scenes = [os.path.join(ROOT, "data", s + ".json")
                  for s in ("pile3d", "fleet", "crystal_fcc")]
        big = os.path.join(tmp, "pile15k.json")
        subprocess.run([a.cmodes, "generate", "pile", "--dim", "3",
                        "--count", "5000", "--seed", "3", "-o", big],
                       check=True, capture_output=True)
        scenes.append(big)
    flags = cpu_flags()
    cores = [c for c, need in CORES if all(f in flags for f in need)]
    print(f"CPU: {cpu_model()}; reference: OpenBLAS' own pick for this CPU; "
          f"core types run: {', '.join(cores)}")
    print()
    print("| scene | method | core type | eigenvalues and steps: fields, "
          "max rel. diff | residuals | mode shares | other fields |")
    print("|---|---|---|---|---|---|---|")
    for s in scenes:
        for m in a.method.split(","):
            ref = run(a.cmodes, s, m, None)
            for c in cores:
                d = compare(ref, run(a.cmodes, s, m, c))
                cell = ["same" if d[k][0] == 0 else
                        f"{d[k][0]} differ, {d[k][1]:.1e}"
                        for k in ("value", "residual", "share")]
                other = "same" if d["other"][0] == 0 else \
                    f"{d['other'][0]} differ"
                print(f"| {os.path.basename(s)} | {m} | {c} | "
                      + " | ".join(cell) + f" | {other} |")
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
