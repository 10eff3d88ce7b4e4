#!/usr/bin/python3
"""cmodes-mpi against the serial cmodes (docs/distributed.md), run by ctest.

  mpi_check.py CMODES CMODES_MPI DATA_DIR CASE

CASE is equal:SCENE (np = 1..4 give the serial omega_max, top modes, bounds
and counts to 1e-10 relative; the same bits on a repeated run with the same
np), partition (a scene smaller than np, ranks with no bodies, a component
spread over every rank) or errors (a missing file, a file missing on one
rank, a truncated file, a JSON scene: one message, the exit code, no hang)
or oom (an allocation failing on one rank: one message, exit 1, no hang),
damped:SCENE (with dashpots: the serial damped and certified steps) or
schur:SCENE (the Schur test of a cut component against a dense Cholesky),
matrices:SCENE (the scene exported as a matrix system, --matrices: np = 1
the serial report byte for byte, np = 2..4 to 1e-10 with the same names,
the same bits again; --vectors) or matrices-errors (a missing manifest, a
truncated M.mtx, an unwritable --vectors file, a partial result: one
message and the serial's exit code).
Exits 77 (skip) when cmodes-mpi was not built or mpirun is missing."""
import json
import math
import re
import os
import shutil
import subprocess
import sys
import tempfile

REL = 1e-10
TIMEOUT = 120


# odls_base_sigkill_timeout 0: when a rank exits non-zero (rank 0 with
# the job's status, after every rank has finished), mpirun otherwise waits
# one to two seconds before tearing the finished job down (OpenMPI 4.1:
# 2.4 s against 0.5 s for an error run of cmodes-mpi here), which was most
# of the error, options and oom cases' time
ENV = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1",
           OMPI_MCA_mpi_yield_when_idle="1",
           OMPI_MCA_odls_base_sigkill_timeout="0")


def sanitizer_env(tmp):
    """Under ASan (ASAN_OPTIONS set): OpenMPI's own leaks at exit are
    suppressed by name (tests/mpi/lsan-mpi.supp added to the suppressions
    given), which needs the slow unwinder and its plugins kept loaded."""
    if "ASAN_OPTIONS" not in os.environ:
        return
    supp = os.path.join(tmp, "lsan.supp")
    with open(supp, "w") as out:
        for opt in os.environ.get("LSAN_OPTIONS", "").split(":"):
            if opt.startswith("suppressions="):
                with open(opt.split("=", 1)[1]) as f:
                    out.write(f.read() + "\n")
        with open(os.path.join(os.path.dirname(__file__),
                               "lsan-mpi.supp")) as f:
            out.write(f.read())
    ENV["ASAN_OPTIONS"] = os.environ["ASAN_OPTIONS"] + \
        ":fast_unwind_on_malloc=0"
    ENV["LSAN_OPTIONS"] = ":".join(
        [o for o in os.environ.get("LSAN_OPTIONS", "").split(":")
         if o and not o.startswith("suppressions=")] +
        ["suppressions=" + supp])
    ENV["OMPI_MCA_mca_base_component_disable_dlclose"] = "1"


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True,
                          timeout=TIMEOUT, env=ENV, **kw)


def mpirun(np, args, cwd=None):
    cmd = ["mpirun", "--oversubscribe", "-np", str(np)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    return run(cmd + args, cwd=cwd)


def rel(a, b):
    return abs(a - b) / max(abs(a), abs(b), 1e-300)


def check_close(what, a, b, fails):
    if a is None or b is None:
        if a != b:
            fails.append(f"{what}: {a} != {b}")
    elif rel(a, b) > REL:
        fails.append(f"{what}: {a!r} != {b!r} (rel {rel(a, b):.2e})")


def compare(ser, par, tag, fails):
    check_close(f"{tag} omega_max", ser["omega_max"], par["omega_max"], fails)
    if len(ser["modes"]) != len(par["modes"]):
        fails.append(f"{tag}: {len(par['modes'])} modes, serial "
                     f"{len(ser['modes'])}")
    for i, (a, b) in enumerate(zip(ser["modes"], par["modes"])):
        check_close(f"{tag} modes[{i}].omega", a["omega"], b["omega"], fails)
        for key in ("contacts", "bodies"):  # ties may list another member
            sa = sorted(c["share"] for c in a[key])
            sb = sorted(c["share"] for c in b[key])
            if len(sa) != len(sb) or any(abs(x - y) > 1e-8
                                         for x, y in zip(sa, sb)):
                fails.append(f"{tag} modes[{i}].{key} shares {sa} != {sb}")
    check_close(f"{tag} per_contact", ser["per_contact"]["omega_max"],
                par["per_contact"]["omega_max"], fails)
    check_close(f"{tag} omega_upper", ser["bounds"]["omega_upper"],
                par["bounds"]["omega_upper"], fails)
    if par["bounds"]["omega_upper_probabilistic"] < par["omega_max"] * (
            1 - REL):
        fails.append(f"{tag}: probabilistic bound below omega_max")
    for k in ("bodies", "moving_bodies", "fixed_bodies", "free_bodies",
              "dofs", "active_dofs", "contacts", "rows"):
        if ser["counts"][k] != par["counts"][k]:
            fails.append(f"{tag} counts.{k}: {par['counts'][k]} != "
                         f"{ser['counts'][k]}")
    ca = sorted(c["omega_max"] for c in ser["components"]["top"])
    cb = sorted(c["omega_max"] for c in par["components"]["top"])
    if ser["components"]["count"] != par["components"]["count"] or len(
            ca) != len(cb):
        fails.append(f"{tag}: components {par['components']['count']} != "
                     f"{ser['components']['count']}")
    for x, y in zip(ca, cb):
        check_close(f"{tag} component omega_max", x, y, fails)
    for k in ("tied", "tied_components"):  # the components tied at the top
        if ser["components"][k] != par["components"][k]:
            fails.append(f"{tag} components.{k}: {par['components'][k]} != "
                         f"{ser['components'][k]}")
    for k in ("central_difference", "rk4"):
        check_close(f"{tag} timestep.{k}.h", ser["timestep"][k]["h"],
                    par["timestep"][k]["h"], fails)


def compare_counts(ser, par, tag, fails):
    """The rank of J as the serial reports it (docs/distributed.md): the
    free motions, zero modes, whether they are sharp and their reason, and
    the rank of each component that both list (among tied components the
    listed members can differ), for components on one rank and cut ones
    alike."""
    for k in ("free_motions", "zero_modes", "rank_sharp", "reason"):
        if ser["counts"].get(k) != par["counts"].get(k):
            fails.append(f"{tag} counts.{k}: {par['counts'].get(k)!r} != "
                         f"{ser['counts'].get(k)!r}")
    ra = {c["index"]: c["rank"] for c in ser["components"]["top"]}
    rb = {c["index"]: c["rank"] for c in par["components"]["top"]}
    for i in sorted(set(ra) & set(rb)):  # ties may list other members
        if ra[i] != rb[i]:
            fails.append(f"{tag} component {i} rank: {rb[i]} != {ra[i]}")
    if not set(ra) & set(rb):
        fails.append(f"{tag}: no component listed by both")


def star(tmp):
    """A hub touching 100 disks (2D), the hub first in the Morton order: it
    owns every contact, so the ranks after it hold bodies of the cut
    component but no rows (PARPACK's local size 0), and some ranks in
    between hold nothing."""
    bodies = [{"name": "hub", "mass": 5.0, "inertia": 0.2,
               "position": [-1.5, -1.5]}]
    contacts = []
    for i in range(100):
        a = 2 * math.pi * i / 100
        p = [math.cos(a), math.sin(a)]
        d = [p[0] + 1.5, p[1] + 1.5]
        n = [d[0] / math.hypot(*d), d[1] / math.hypot(*d)]
        bodies.append({"name": f"leaf{i}", "mass": 1.0 + 0.01 * i,
                       "inertia": 0.01, "position": p})
        contacts.append({"a": f"leaf{i}", "b": "hub",
                         "point": [p[0] - 0.1 * n[0], p[1] - 0.1 * n[1]],
                         "normal": n, "stiffness": 1e5 * (1 + 0.003 * i)})
    out = os.path.join(tmp, "star.json")
    with open(out, "w") as f:
        json.dump({"format": "cmodes-scene", "version": 1, "dim": 2,
                   "bodies": bodies, "contacts": contacts}, f)
    return out


def derived(data, scene, tmp):
    """SCENE.json of data/, or NAME-tangential: NAME with a tangential
    spring of half the normal stiffness on every contact (version 2: rows
    normal + 2 tangents in 3D), or NAME-dashpots: with a normal dashpot."""
    if scene == "star":
        return star(tmp)
    base, _, kind = scene.partition("-")
    src = os.path.join(data, base + ".json")
    if not kind:
        return src
    with open(src) as f:
        doc = json.load(f)
    doc["version"] = 2
    for i, c in enumerate(doc["contacts"]):
        if kind == "tangential":
            c["stiffness_t"] = 0.5 * c["stiffness"]
        elif kind == "somedamped":  # dashpots on robots r0 and r1 only
            # (not among the tied fastest): the limit is the undamped one
            # of a robot on a rank whose components have no dashpots
            if c.get("name", "").split(".")[0] in ("r0", "r1"):
                c["damping_n"] = 1.0
        elif kind == "damped":  # zeta about 0.2 to 1: the step moves;
            # tangential dashpots without a tangential spring on every
            # other contact (rows of C that K does not have)
            c["damping_n"] = 30.0 if doc["dim"] == 2 else 5.0
            if doc["dim"] == 3 and i % 2:
                c["damping_t"] = 3.0
        else:
            c["damping_n"] = 1.0
    out = os.path.join(tmp, scene + ".json")
    with open(out, "w") as f:
        json.dump(doc, f)
    return out


def case_equal(cm, cmpi, data, scene, tmp):
    part = os.path.join(tmp, scene + ".cmpart")
    src = derived(data, scene, tmp)
    r = run([cmpi, "convert", src, part])
    if r.returncode:
        return [f"convert: {r.stderr}"]
    serial_text = subprocess.run(
        [cm, "analyze", "--json", "--no-timings", src], capture_output=True,
        text=True, check=True, timeout=TIMEOUT).stdout
    ser = json.loads(serial_text)
    fails = []
    # under ASan (several times slower with its slow unwinder) np = 1 (the
    # serial path) and 3 (a cut component with a middle rank) only
    nps = (1, 3) if "ASAN_OPTIONS" in os.environ else (1, 2, 3, 4)
    for np in nps:
        r = mpirun(np, [cmpi, "analyze", "--json", "--no-timings", part])
        if r.returncode:
            fails.append(f"np={np}: exit {r.returncode}: {r.stderr[-400:]}")
            continue
        compare(ser, json.loads(r.stdout), f"{scene} np={np}", fails)
        compare_counts(ser, json.loads(r.stdout), f"{scene} np={np}", fails)
        if np == 1 and r.stdout != serial_text:  # nothing cut: the same
            fails.append("np=1: the report is not the serial one byte for "
                         "byte")
        # the same bits again (not under ASan, whose slow unwinder makes
        # each run several times longer)
        if np in (2, 3) and "ASAN_OPTIONS" not in os.environ:
            r2 = mpirun(np, [cmpi, "analyze", "--json", "--no-timings",
                             part])
            if r2.stdout != r.stdout:
                fails.append(f"np={np}: a repeated run gave other bits")
        print(f"{scene} np={np}: checked", flush=True)
    if scene == "fleet":  # 7 components tied at the top, 1 listed: the
        # ranks send all theirs, so rank 0 counts every tie
        ser1 = json.loads(subprocess.run(
            [cm, "analyze", "--json", "--no-timings", "--top-components", "1",
             src], capture_output=True, text=True, check=True,
            timeout=TIMEOUT).stdout)
        for np in (1, 3):
            r = mpirun(np, [cmpi, "analyze", "--json", "--no-timings",
                            "--top-components", "1", part])
            if r.returncode:
                fails.append(f"--top-components 1 np={np}: exit "
                             f"{r.returncode}")
                continue
            compare(ser1, json.loads(r.stdout),
                    f"{scene} --top-components 1 np={np}", fails)
            print(f"{scene} --top-components 1 np={np}: checked", flush=True)
    return fails


VEC_REL = 1e-8  # per entry, relative (docs/distributed.md, "--vectors")
VEC_FLOOR = 1e-3  # of the vector's largest entry: below it, absolute


def vec_degenerate(omega, p):
    """Mode p's omega within 1e-6 (relative) of another listed mode's:
    its vector is any of a space (and among tied components the listed
    member can differ), so it is compared through the group."""
    return any(abs(omega[p] - w) <= 1e-6 * omega[p]
               for q, w in enumerate(omega) if q != p)


def vec_entries(tag, x, y, fails):
    scale = max((abs(t) for t in x), default=0) * VEC_FLOOR
    worst = 0.0
    for s, t in zip(x, y):
        worst = max(worst, abs(s - t) / max(abs(s), abs(t), scale, 1e-300))
    if len(x) != len(y) or worst > VEC_REL:
        fails.append(f"{tag}: differs by {worst:.2e} (relative, per entry)")
    return worst


def vec_group_diag(ser, par, modes, key):
    """The diagonal of the projector sum_p v_p v_p^T over a group of
    degenerate modes, sorted: the same for any basis of the same space,
    and for the same space of another identical component."""
    def diag(doc):
        return sorted(sum(doc[key][p][i] ** 2 for p in modes)
                      for i in range(len(doc[key][modes[0]])))
    return diag(ser), diag(par)


def compare_vectors(ser, par, tag, fails):
    """The --vectors file of cmodes-mpi against the serial one: the same
    keys in the same order, the same structure (rows, columns, names) and
    the mode shapes to VEC_REL per entry (non-degenerate modes; a group
    of degenerate ones through its projector's sorted diagonal)."""
    if list(ser) != list(par):
        fails.append(f"{tag}: keys {list(par)} != {list(ser)}")
        return 0.0
    bad = [k for k in ser
           if k not in ("omega", "z", "xi", "phi") and ser[k] != par[k]]
    for k in bad:
        fails.append(f"{tag}: {k} differs")
    if bad:
        return 0.0
    for a, b in zip(ser["omega"], par["omega"]):
        check_close(f"{tag} omega", a, b, fails)
    omega = ser["omega"]
    worst, done = 0.0, set()
    for p in range(ser["nmodes"]):
        if not vec_degenerate(omega, p):
            for key in ("z", "xi", "phi"):
                worst = max(worst, vec_entries(f"{tag} {key}[{p}]",
                                               ser[key][p], par[key][p],
                                               fails))
        elif p not in done:
            group = [q for q in range(len(omega))
                     if abs(omega[q] - omega[p]) <= 1e-6 * omega[p]]
            done.update(group)
            for key in ("z", "xi", "phi"):
                a, b = vec_group_diag(ser, par, group, key)
                vec_entries(f"{tag} {key} of modes {group} (projector)", a,
                            b, fails)
    return worst


def case_vectors(cm, cmpi, data, scene, tmp):
    """--vectors FILE at np = 1..4 against cmodes analyze --vectors FILE
    (--tol 1e-14, so that both solvers' vectors are accurate to about
    1e-9: at the default 1e-10 the last mode's differ by 2e-5, the
    eigenvector error being the residual over the gap); at np = 1 the
    same bytes."""
    part = os.path.join(tmp, scene + ".cmpart")
    src = derived(data, scene, tmp)
    r = run([cmpi, "convert", src, part])
    if r.returncode:
        return [f"convert: {r.stderr}"]
    opts = ["--tol", "1e-14", "--json", "--no-timings"]
    sfile = os.path.join(tmp, "ser.json")
    s = run([cm, "analyze"] + opts + ["--vectors", sfile, src])
    if s.returncode:
        return [f"serial: exit {s.returncode}: {s.stderr}"]
    with open(sfile) as f:
        stext = f.read()
    ser = json.loads(stext)
    fails = []
    nps = (1, 3) if "ASAN_OPTIONS" in os.environ else (1, 2, 3, 4)
    for np in nps:
        pfile = os.path.join(tmp, f"par{np}.json")
        r = mpirun(np, [cmpi, "analyze"] + opts + ["--vectors", pfile, part])
        if r.returncode != s.returncode:
            fails.append(f"np={np}: exit {r.returncode}: {r.stderr[-400:]}")
            continue
        if r.stdout != s.stdout and np == 1:
            fails.append("np=1: the report differs from the serial one")
        with open(pfile) as f:
            ptext = f.read()
        if np == 1 and ptext != stext:
            fails.append("np=1: the file is not the serial one byte for byte")
        worst = compare_vectors(ser, json.loads(ptext), f"{scene} np={np}",
                                fails)
        print(f"{scene} np={np}: {ser['nmodes']} modes, {ser['nrows']} rows, "
              f"{ser['ndofs']} dofs; non-degenerate entries within "
              f"{worst:.1e}", flush=True)
    if scene == "pile3d":
        vectors_oom(cmpi, part, opts, tmp, fails)
    return fails


def vectors_oom(cmpi, part, opts, tmp, fails):
    """--vectors with an allocation failing on rank 0 or 1 of the 3D pile
    cut over 2 ranks (CMODES_MPI_FAIL_ALLOC, as mpi_oom): the last ones
    (the shapes' gather and the file) and one in the middle each end both
    ranks with one message naming the rank and exit 1, within the
    timeout; one past the count writes the file of the uninjected run."""
    vfile = os.path.join(tmp, "oom.json")
    args = [cmpi, "analyze"] + opts + ["--vectors", vfile, part]
    ref = os.path.join(tmp, "oom-ref.json")  # the uninjected run's file
    if mpirun(2, [cmpi, "analyze"] + opts + ["--vectors", ref, part]
              ).returncode:
        fails.append("vectors oom: the uninjected run failed")
        return
    for rank in (0, 1):
        r = mpirun_env(2, args, {"CMODES_MPI_FAIL_ALLOC": f"{rank}:0"})
        m = re.search(rf"cmodes-mpi: rank {rank}: (\d+) tracked", r.stdout)
        if not m:
            fails.append(f"vectors oom rank {rank}: no count")
            continue
        k = int(m.group(1))
        for n in (k, k - 1, k - 2, k // 2, k + 1):
            r = mpirun_env(2, args,
                           {"CMODES_MPI_FAIL_ALLOC": f"{rank}:{n}"})
            own = [l for l in r.stderr.splitlines()
                   if l.startswith("cmodes-mpi analyze")]
            if n > k:
                with open(vfile) as f, open(ref) as g:
                    if r.returncode or f.read() != g.read():
                        fails.append(f"vectors oom rank {rank}: {n} > {k}:"
                                     f" exit {r.returncode} or another file")
            elif r.returncode != 1 or len(own) != 1 or \
                    f"(rank {rank})" not in own[0]:
                fails.append(f"vectors oom rank {rank} allocation {n}/{k}: "
                             f"exit {r.returncode}, messages {own}")
            print(f"vectors oom rank {rank} allocation {n}/{k}: exit "
                  f"{r.returncode}: {own}", flush=True)


def case_damped(cm, cmpi, data, scene, tmp):
    """With dashpots (docs/distributed.md, "The damped step"): np = 1..4
    give the serial report's damped central-difference limit, its modal
    limit and the limiting mode's zeta to 1e-10 relative (and everything
    compare() checks); the component is the serial one or tied with it;
    the certified step is the serial one to 1e-10 (the same bits at np = 1,
    where nothing is cut; when a component is cut, by the Schur complement
    test, which the reason names); a repeated run with the same np gives
    the same bits. On the piles, CMODES_MPI_SCHUR_MAX_DOFS below the
    shared dofs makes the bounds certify (a positive step at most the
    serial one, the reason saying why) and a malformed value is refused."""
    part = os.path.join(tmp, scene + ".cmpart")
    src = derived(data, scene, tmp)
    r = run([cmpi, "convert", src, part])
    if r.returncode:
        return [f"convert: {r.stderr}"]
    serial_text = subprocess.run(
        [cm, "analyze", "--json", "--no-timings", src], capture_output=True,
        text=True, check=True, timeout=TIMEOUT).stdout
    ser = json.loads(serial_text)
    scd = ser["timestep"]["central_difference"]
    if scd["model"] is None or "dashpots" not in scd["model"] or \
            scd["component"] is None:
        return [f"{scene}: the serial report has no damped step"]
    fails = []
    nps = (1, 3) if "ASAN_OPTIONS" in os.environ else (1, 2, 3, 4)
    for np in nps:
        r = mpirun(np, [cmpi, "analyze", "--json", "--no-timings", part])
        if r.returncode:
            fails.append(f"np={np}: exit {r.returncode}: {r.stderr[-400:]}")
            continue
        par = json.loads(r.stdout)
        tag = f"{scene} np={np}"
        compare(ser, par, tag, fails)
        pcd = par["timestep"]["central_difference"]
        for k in ("h", "modal_limit", "zeta"):
            check_close(f"{tag} central_difference.{k}", scd[k], pcd[k],
                        fails)
        for k in ("h", "certified"):
            check_close(f"{tag} undamped.{k}", scd["undamped"][k],
                        pcd["undamped"][k], fails)
        for m, (a, b) in enumerate(zip(ser["modes"], par["modes"])):
            if abs(a["zeta"] - b["zeta"]) > REL * max(a["zeta"], 1e-300):
                fails.append(f"{tag} modes[{m}].zeta {b['zeta']} != "
                             f"{a['zeta']}")
        if pcd["component"] != scd["component"] and \
                pcd["component"] not in [t["index"] for t in
                                         ser["components"]["tied_components"]]:
            fails.append(f"{tag} component {pcd['component']} != "
                         f"{scd['component']}")
        if pcd["model"] != scd["model"] or par["warning"] != ser["warning"]:
            fails.append(f"{tag}: model or warning differ")
        check_close(f"{tag} central_difference.certified",
                    scd["certified"], pcd["certified"], fails)
        if np == 1 and r.stdout != serial_text:
            fails.append(f"{tag}: not the serial report byte for byte")
        if np > 1 and scene.startswith("pile") and \
                "Schur complement" not in (pcd.get("reason") or ""):
            fails.append(f"{tag}: a cut component's reason does not name "
                         f"the Schur complement: {pcd.get('reason')}")
        if np in (2, 3) and "ASAN_OPTIONS" not in os.environ:
            r2 = mpirun(np, [cmpi, "analyze", "--json", "--no-timings",
                             part])
            if r2.stdout != r.stdout:
                fails.append(f"{tag}: a repeated run gave other bits")
        print(f"{tag}: h {pcd['h']!r} (serial {scd['h']!r}), certified "
              f"{pcd['certified']:.6g} (serial {scd['certified']:.6g}), "
              f"zeta {pcd['zeta']:.6g}, {pcd['damped_solves']} solves",
              flush=True)
    if scene.startswith("pile"):
        schur_cap_fallback(cmpi, scd, part, fails)
    if scene.startswith("pile"):  # cut at np = 2: a budget spent at once
        # stops the solves; no damped step is given (null, with the
        # reason), never the undamped one, and exit 5
        r = mpirun(2, [cmpi, "analyze", "--max-seconds", "1e-6", "--json",
                       part])
        code = r.returncode if r.returncode != 1 else \
            (5 if "Exit code:    5" in r.stderr else 1)
        pcd = json.loads(r.stdout)["timestep"]["central_difference"] \
            if r.stdout else {}
        if code != 5 or pcd.get("h") is not None or \
                "did not finish" not in pcd.get("reason", "") or \
                "time budget" not in r.stderr:
            fails.append(f"{scene} np=2 --max-seconds 1e-6: exit "
                         f"{r.returncode}, central_difference {pcd}, "
                         f"stderr ...{r.stderr[-600:]}")
        print(f"{scene} np=2 --max-seconds 1e-6: exit {code}, h "
              f"{pcd.get('h')}", flush=True)
    return fails


def schur_cap_fallback(cmpi, scd, part, fails):
    """The cap on shared dofs (CMODES_MPI_SCHUR_MAX_DOFS, a test knob)
    below the pile's at np = 2: the bounds certify a positive step at most
    the serial one and the reason says why; a malformed cap, on every rank
    or on rank 1 only, ends every rank with one message naming it (exit 2,
    a usage error), never a hang."""
    args = [cmpi, "analyze", "--json", "--no-timings", part]
    r = mpirun_env(2, args, {"CMODES_MPI_SCHUR_MAX_DOFS": "10"})
    pcd = json.loads(r.stdout)["timestep"]["central_difference"] \
        if r.returncode == 0 else {}
    why = pcd.get("reason") or ""
    if r.returncode or not (0 < pcd["certified"] <=
                            scd["certified"] * (1 + REL)) or \
            "cap" not in why or "not factored" not in why or \
            check_rel(pcd["h"], scd["h"]):
        fails.append(f"cap 10, np=2: exit {r.returncode}, {pcd}")
    print(f"cap 10 np=2: certified {pcd.get('certified')} (serial "
          f"{scd['certified']}): {why[:60]}...", flush=True)
    r = mpirun_env(2, args, {"CMODES_MPI_SCHUR_MAX_DOFS": "ten"})
    own = [l for l in r.stderr.splitlines() if l.startswith("cmodes-mpi")]
    failed = r.returncode == 2 or "Exit code:    2" in r.stderr
    if not failed or len(own) != 1 or \
            "CMODES_MPI_SCHUR_MAX_DOFS" not in own[0]:
        tail = r.stderr.strip().splitlines()[-12:]
        fails.append(f"cap 'ten': exit {r.returncode}, messages {own}; "
                     f"stderr ends: {tail}")
    print(f"cap 'ten' np=2: exit {r.returncode}: {own}", flush=True)
    # malformed on rank 1 only: the ranks agree before any collective
    cmd = ["mpirun", "--oversubscribe"] + \
        (["--allow-run-as-root"] if os.geteuid() == 0 else []) + \
        ["-np", "1"] + args + [":", "-np", "1", "env",
                               "CMODES_MPI_SCHUR_MAX_DOFS=ten"] + args
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT,
                       env=ENV)
    own = [l for l in r.stderr.splitlines() if l.startswith("cmodes-mpi")]
    failed = r.returncode == 2 or "Exit code:    2" in r.stderr
    if not failed or len(own) != 1 or "(rank 1)" not in own[0]:
        tail = r.stderr.strip().splitlines()[-12:]  # what mpirun said
        fails.append(f"cap 'ten' on rank 1: exit {r.returncode}, {own}; "
                     f"stderr ends: {tail}")
    print(f"cap 'ten' on rank 1 only: exit {r.returncode}: {own}",
          flush=True)


def check_rel(a, b):
    """True when a and b differ by more than REL (relative)."""
    return a is None or b is None or rel(a, b) > REL


def dense_definite(A):
    """A positive definite, by numpy's dense Cholesky (LAPACK)."""
    import numpy
    try:
        numpy.linalg.cholesky(A)
        return True
    except numpy.linalg.LinAlgError:
        return False


def case_schur(cm, cmpi, data, scene, tmp):
    """The Schur test of a cut component (src/mpi/schur.c) against a dense
    LAPACK Cholesky of A(h) = 4 (1 - 1e-9) M - h^2 K - 2 h C assembled here
    from `cmodes export` (M, J, k) and the scene's dashpots (c of each
    contact's normal row): h0, the threshold where A(h) stops being
    positive definite, by bisection on the dense Cholesky; at np = 2, 3, 4
    the Schur test (CMODES_MPI_SCHUR_PROBE) gives the dense answer at
    h0 (1 -+ 1e-6), h0 (1 -+ 1e-8) and the serial certified step, and the
    shared dofs are the same at every probe."""
    import numpy
    from scipy.io import mmread
    src = derived(data, scene, tmp)
    part = os.path.join(tmp, scene + ".cmpart")
    run([cmpi, "convert", src, part]).check_returncode()
    mats = os.path.join(tmp, "mats")
    run([cm, "export", src, "--matrices", mats, "--no-B"]).check_returncode()
    M = mmread(os.path.join(mats, "M.mtx")).toarray()
    M = numpy.tril(M) + numpy.tril(M, -1).T
    J = mmread(os.path.join(mats, "J.mtx")).toarray()
    k = numpy.asarray(mmread(os.path.join(mats, "k.mtx"))).ravel()
    with open(src) as f:
        contacts = json.load(f)["contacts"]
    rows = [int(l.split()[1]) for l in open(os.path.join(mats, "rows.txt"))
            if not l.startswith("#")]
    if len(rows) != len(contacts) or any("stiffness_t" in c or
                                         "damping_t" in c for c in contacts):
        return [f"{scene}: a scene with normal rows only is needed"]
    c = numpy.array([contacts[i].get("damping_n", 0.0) for i in rows])
    K, C = J.T @ (k[:, None] * J), J.T @ (c[:, None] * J)

    def A(h):
        return 4 * (1 - 1e-9) * M - h * h * K - 2 * h * C
    lo, hi = 0.0, 1.0  # definite at 0; hi doubled until not definite
    while dense_definite(A(hi)):
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if dense_definite(A(mid)) else (lo, mid)
    h0 = lo
    ser = json.loads(subprocess.run(
        [cm, "analyze", "--json", "--no-timings", src], capture_output=True,
        text=True, check=True, timeout=TIMEOUT).stdout)
    hc = ser["timestep"]["central_difference"]["certified"]
    probes = [h0 * (1 - 1e-6), h0 * (1 + 1e-6), h0 * (1 - 1e-8),
              h0 * (1 + 1e-8), hc]
    truth = [dense_definite(A(h)) for h in probes]
    fails = []
    if truth[:4] != [True, False, True, False] or not truth[4]:
        fails.append(f"{scene}: dense answers {truth} at {probes}")
    env = {"CMODES_MPI_SCHUR_PROBE": ",".join(repr(h) for h in probes)}
    for np in (2, 3, 4):
        r = mpirun_env(np, [cmpi, "analyze", "--json", "--no-timings", part],
                       env)
        got = re.findall(r"Schur probe: component \d+, h (\S+): "
                         r"(definite|not definite) \((\d+) shared dofs\)",
                         r.stderr)
        ans = [g[1] == "definite" for g in got]
        shared = {int(g[2]) for g in got}
        if r.returncode or ans != truth or len(shared) != 1 or \
                min(shared) <= 0 or \
                [float(g[0]) for g in got] != probes:
            fails.append(f"{scene} np={np}: exit {r.returncode}, Schur "
                         f"{got}, dense {truth}")
        print(f"{scene} np={np}: h0 {h0!r}, Schur {ans} (dense {truth}), "
              f"{sorted(shared)} shared dofs", flush=True)
    return fails


# Every option of the single options table (`cmodes options --json`), a
# value other than its default and what cmodes-mpi does with it on the 3D
# pile cut over 2 ranks: "same" (the serial report: compare() and every
# step), or "refused" (exit 2, one message naming the option). A new
# option in the table fails the test until it is classified here.
OPTION_CASES = {
    "modes": [("3", "same")],
    "tol": [("1e-8", "same")],
    "method": [("arpack", "same"), ("auto", "same"), ("dense", "refused"),
               ("lanczos", "refused")],
    "ncv": [("30", "same")],
    "max_iter": [("500", "same")],
    "max_seconds": [("600", "same")],
    "dense_max": [("10", "same"), ("20000", "same")],
    "chebyshev": [("1", "same"), ("4", "refused")],
    "damping_ratio": [("0.1", "same")],
    "newmark_gamma": [("0.6", "same")],
    "newmark_beta": [("0.2", "same")],
    "freq_tol": [("0.02", "same")],
    "failure_probability": [("1e-6", "same")],
    # 100: below the cut component's 900 rows (null with the reason)
    "rank_max_rows": [("0", "same"), ("100", "same")],
    "top_contacts": [("2", "same")],
    "top_bodies": [("7", "same")],
    "top_components": [("1", "same")],
}
# cmodes analyze's own options (not in the table): accepted as in cmodes,
# or refused naming them; --matrices takes other input, tested by
# case_matrices (mpi_matrices_*)
OTHER_CASES = {"--threads": (["--threads", "1"], "same"),
               "--json": ([], "same"), "--no-timings": ([], "same"),
               "--matrices": (["--matrices"], "matrices"),
               "--vectors": (["--vectors", "v.json"], "same")}


def steps_equal(ser, par, tag, fails):
    """Every step of the report but the probabilistic ones (their failure
    probability is split over the ranks, docs/distributed.md)."""
    for name, st in ser["timestep"].items():
        for k, v in st.items():
            if isinstance(v, float) and "probabilistic" not in k:
                check_close(f"{tag} timestep.{name}.{k}", v,
                            par["timestep"][name][k], fails)


def case_options(cm, cmpi, data, tmp):
    fails = []
    table = json.loads(run([cm, "options", "--json"]).stdout)["options"]
    names = [o["name"] for o in table]
    for n in names:
        if n not in OPTION_CASES:
            fails.append(f"option {n}: not classified in OPTION_CASES")
    for n in OPTION_CASES:
        if n not in names:
            fails.append(f"OPTION_CASES.{n}: not in the options table")
    helptext = run([cm, "analyze", "--help"]).stdout
    other = helptext.split("other options:")[1].split("exit codes")[0]
    for opt in re.findall(r"^ +(?:-\w, )?(--[a-z-]+)", other, re.M):
        if opt not in OTHER_CASES and opt != "--help":
            fails.append(f"cmodes analyze {opt}: not classified")
    src = os.path.join(data, "pile3d.json")
    part = os.path.join(tmp, "pile3d.cmpart")
    run([cmpi, "convert", src, part]).check_returncode()
    cli = {o["name"]: o["cli"] for o in table}
    cases = [(f"{cli[n]} {v}", [cli[n], v], e)
             for n in names if n in OPTION_CASES
             for v, e in OPTION_CASES[n]]
    cases += [(k, a, e) for k, (a, e) in OTHER_CASES.items()]
    if "ASAN_OPTIONS" in os.environ:  # several times slower: the refusals
        # and one accepted option of each kind (solver, steps, listing)
        keep = ("--method arpack", "--damping-ratio 0.1", "--top-bodies 7")
        cases = [c for c in cases if c[2] == "refused" or c[0] in keep]
    for tag, args, expect in cases:
        if expect == "matrices":  # a matrix system: case_matrices
            continue
        r = mpirun(2, [cmpi, "analyze", "--json"] + args + [part], cwd=tmp)
        name = args[0] if args else tag
        if expect == "refused":
            own = [l for l in r.stderr.splitlines()
                   if l.startswith("cmodes-mpi analyze")]
            if r.returncode == 0 or len(own) != 1 or name not in own[0]:
                fails.append(f"{tag}: exit {r.returncode}, messages {own}")
            print(f"{tag}: refused: {own}", flush=True)
            continue
        s = run([cm, "analyze", "--json"] + args + [src], cwd=tmp)
        if r.returncode != s.returncode:
            fails.append(f"{tag}: exit {r.returncode}, serial "
                         f"{s.returncode}: {r.stderr[-300:]}")
            continue
        ser, par = json.loads(s.stdout), json.loads(r.stdout)
        before = len(fails)
        compare(ser, par, tag, fails)
        compare_counts(ser, par, tag, fails)
        steps_equal(ser, par, tag, fails)
        if len(par["components"]["top"]) != len(ser["components"]["top"]):
            fails.append(f"{tag}: components listed differ")
        print(f"{tag}: {'same' if len(fails) == before else 'DIFFERS'}",
              flush=True)
    return fails


def partition_table(cmpi, part, np):
    r = mpirun(np, [cmpi, "analyze", "--partition", "--json", part])
    if r.returncode:
        raise RuntimeError(f"np={np}: exit {r.returncode}: {r.stderr}")
    lines = [l for l in r.stderr.splitlines()
             if re.match(r"^ *[0-9]+ +\[[0-9]+,[0-9]+\) ", l)]
    head = [l for l in r.stderr.splitlines() if "spread over ranks" in l]
    spread = int(head[0].split(",")[1].split()[0])
    rows = []
    for l in lines:
        f = l.split()
        b0, b1 = (int(x) for x in f[1].strip("[)").split(","))
        c0, c1 = (int(x) for x in f[2].strip("[)").split(","))
        rows.append((b1 - b0, c1 - c0, int(float(f[6]))))
    return json.loads(r.stdout), spread, rows


def case_partition(cm, cmpi, data, tmp):
    fails = []
    for scene, np in (("bar2d", 4), ("pile2d", 4), ("star", 3)):
        part = os.path.join(tmp, scene + ".cmpart")
        src = derived(data, scene, tmp)
        run([cmpi, "convert", src, part]).check_returncode()
        ser = json.loads(subprocess.run(
            [cm, "analyze", "--json", src], capture_output=True, text=True,
            check=True, timeout=TIMEOUT).stdout)
        rep, spread, rows = partition_table(cmpi, part, np)
        compare(ser, rep, f"{scene} np={np}", fails)
        if len(rows) != np:
            fails.append(f"{scene}: {len(rows)} rows in the table")
        if scene == "bar2d":  # 1 moving body on 4 ranks
            if sum(1 for b, c, p in rows if b == 0) < np - 1:
                fails.append(f"bar2d: expected {np - 1} ranks with no bodies")
            if spread != 0:
                fails.append("bar2d: a one-body component was cut")
        elif scene == "star":  # a cut component: a member with no rows
            if spread != 1 or not any(b > 0 and c == 0 and p > 0
                                      for b, c, p in rows):
                fails.append(f"star: no rank with bodies, no rows: {rows}")
            if not any(b == 0 for b, c, p in rows):
                fails.append(f"star: no rank with nothing: {rows}")
        else:  # one component over every rank, solved by PARPACK
            if spread != 1 or any(b == 0 or c == 0 or p == 0
                                  for b, c, p in rows):
                fails.append(f"pile2d: not spread over every rank: {rows}")
        print(f"{scene} np={np}: {rows}, spread {spread}", flush=True)
    return fails


def time_budget(cm, cmpi, data, pile):
    """--max-seconds on the cut 3D pile: a budget already spent after the
    first product stops PARPACK on every rank together (exit 5 as the
    serial cmodes with the same budget, converged false, the warning
    naming the time budget, an omega_max the Rayleigh quotient of a
    partial basis: > 0 and at most the converged one); a generous budget
    changes nothing (the serial omega_max to 1e-10)."""
    fails = []
    full = json.loads(run([cm, "analyze", "--json",
                           os.path.join(data, "pile3d.json")]).stdout)
    ser = run([cm, "analyze", "--max-seconds", "1e-6", "--json",
               os.path.join(data, "pile3d.json")])
    for np in (2, 3):
        r = mpirun(np, [cmpi, "analyze", "--max-seconds", "1e-6", "--json",
                        pile])
        code = r.returncode if r.returncode != 1 else \
            (5 if "Exit code:    5" in r.stderr else 1)
        if code != ser.returncode or code != 5:
            fails.append(f"time budget np={np}: exit {r.returncode}, serial "
                         f"{ser.returncode}")
            continue
        rep_ = json.loads(r.stdout)
        om = rep_["omega_max"]
        if rep_["solver"]["converged"] is not False or \
                "stopped by its time budget" not in r.stderr or \
                not (0 < om <= full["omega_max"] * (1 + REL)):
            fails.append(f"time budget np={np}: converged "
                         f"{rep_['solver']['converged']}, omega_max {om} "
                         f"(converged {full['omega_max']}), {r.stderr}")
        print(f"time budget np={np}: exit {code}, omega_max {om} of "
              f"{full['omega_max']}, matvecs {rep_['solver']['matvecs']}",
              flush=True)
    r = mpirun(2, [cmpi, "analyze", "--max-seconds", "600", "--json", pile])
    if r.returncode != 0 or rel(json.loads(r.stdout)["omega_max"],
                                full["omega_max"]) > REL:
        fails.append(f"generous budget: exit {r.returncode}")
    return fails


def kernels_env(cmpi, pile):
    """CMODES_KERNELS (docs/cli.md): a value naming no set, on every rank
    or on rank 1 only, ends every rank with one message naming it (exit 2)
    before any collective, never a hang; the baseline set gives the report
    of the CPU's own set, bit for bit."""
    fails = []
    args = [cmpi, "analyze", "--json", "--no-timings", pile]
    for where, cmd in (
            ("every rank", ["env", "CMODES_KERNELS=avx3"] + args),
            ("rank 1", ["sh", "-c", "[ $OMPI_COMM_WORLD_RANK = 1 ] && "
                        "export CMODES_KERNELS=avx3; exec \"$@\"", "sh"]
             + args)):
        r = mpirun(2, cmd)
        own = [l for l in r.stderr.splitlines()
               if l.startswith("cmodes-mpi")]
        failed = r.returncode == 2 or "Exit code:    2" in r.stderr
        if not failed or len(own) != 1 or \
                "CMODES_KERNELS='avx3' names no kernel set" not in own[0] or \
                (where == "rank 1") != ("(rank 1)" in own[0]):
            tail = r.stderr.strip().splitlines()[-12:]
            fails.append(f"CMODES_KERNELS=avx3 on {where}: exit "
                         f"{r.returncode}, messages {own}; stderr ends: "
                         f"{tail}")
        print(f"CMODES_KERNELS=avx3 on {where}: exit {r.returncode}: {own}",
              flush=True)
    want = mpirun(2, args)
    got = mpirun(2, ["env", "CMODES_KERNELS=baseline"] + args)
    if want.returncode or got.returncode or want.stdout != got.stdout:
        fails.append(f"CMODES_KERNELS=baseline: exit {got.returncode} "
                     f"(unset: {want.returncode}), same report: "
                     f"{want.stdout == got.stdout}")
    print(f"CMODES_KERNELS=baseline: the same report: "
          f"{want.stdout == got.stdout}", flush=True)
    return fails


def case_errors(cm, cmpi, data, tmp):
    fails = []
    part = os.path.join(tmp, "bar2d.cmpart")
    run([cmpi, "convert", os.path.join(data, "bar2d.json"),
         part]).check_returncode()
    with open(part, "rb") as f:
        blob = f.read()
    trunc = os.path.join(tmp, "trunc.cmpart")
    with open(trunc, "wb") as f:
        f.write(blob[:len(blob) - 7])
    dash = os.path.join(tmp, "dash.cmpart")
    run([cmpi, "convert", derived(data, "bar2d-dashpots", tmp),
         dash]).check_returncode()
    for d in ("d0", "d1"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
    shutil.copy(part, os.path.join(tmp, "d0", "s.cmpart"))
    one_rank = ["sh", "-c", f"cd {tmp}/d$OMPI_COMM_WORLD_RANK && exec "
                f"{cmpi} analyze s.cmpart"]
    cases = [
        ("missing file", [cmpi, "analyze", os.path.join(tmp, "none")], 3,
         "cannot open"),
        ("missing on rank 1", one_rank, 3, "s.cmpart: cannot open"),
        ("truncated", [cmpi, "analyze", trunc], 3, "do not match"),
        ("JSON scene", [cmpi, "analyze", os.path.join(data, "bar2d.json")],
         3, "cmodes-mpi convert"),
        ("bad option", [cmpi, "analyze", "--modes", "0", part], 2, "modes"),
        ("damping ratio and dashpots",
         [cmpi, "analyze", "--damping-ratio", "0.1", dash], 2,
         "damping_ratio: the scene has dashpots"),
    ]
    pile = os.path.join(tmp, "pile3d.cmpart")
    run([cmpi, "convert", os.path.join(data, "pile3d.json"),
         pile]).check_returncode()
    # a partial result: the cut pile stopped by --max-iter 1 (exit 5, the
    # report printed, converged false)
    r = mpirun(2, [cmpi, "analyze", "--max-iter", "1", "--json", pile])
    if r.returncode != 5 and "Exit code:    5" not in r.stderr:
        fails.append(f"not converged: exit {r.returncode}")
    elif json.loads(r.stdout)["solver"]["converged"] is not False or \
            "warning: not converged" not in r.stderr:
        fails.append("not converged: no partial report and warning")
    print(f"not converged: exit {r.returncode}", flush=True)
    fails += time_budget(cm, cmpi, data, pile)
    fails += kernels_env(cmpi, pile)
    for name, args, code, text in cases:
        r = mpirun(2, args)
        msgs = [l for l in r.stderr.splitlines()
                if l.startswith("cmodes") and "analyze" in l]
        own = [l for l in msgs if "try 'cmodes-mpi" not in l]
        if r.returncode == 0 or text not in r.stderr or len(own) != 1:
            fails.append(f"{name}: exit {r.returncode}, messages {own}")
        if code == 3 and not any(f"Exit code:    {code}" in l
                                 for l in r.stderr.splitlines()) and \
                r.returncode != code:
            fails.append(f"{name}: exit code {r.returncode}, want {code}")
        print(f"{name}: exit {r.returncode}: {own}", flush=True)
    return fails


def export_matrices(cm, data, scene, tmp):
    """data/SCENE.json as a matrix system: DIR/manifest.json. fleet2500:
    `cmodes generate fleet --count 2500 --seed 1` (3722 components, 1222
    tied at the top: more than the 1000 a report lists)."""
    out = os.path.join(tmp, scene + "-mtx")
    src = os.path.join(data, scene + ".json")
    if scene == "fleet2500":
        src = os.path.join(tmp, "fleet2500.json")
        subprocess.run([cm, "generate", "fleet", "--count", "2500", "--seed",
                        "1", "-o", src], capture_output=True, check=True,
                       timeout=TIMEOUT)
    subprocess.run([cm, "export", src, "--matrices", out],
                   capture_output=True, check=True, timeout=TIMEOUT)
    return os.path.join(out, "manifest.json")


def compare_names(ser, par, tag, fails):
    """Each mode's component, contacts (rows) and dofs, by index and name,
    as the serial lists them: a matrix system's components are never cut,
    so each is the serial's own analysis of the same matrices."""
    for i, (a, b) in enumerate(zip(ser["modes"], par["modes"])):
        for key in ("contacts", "dofs"):
            na = [(c["index"], c["name"]) for c in a[key]]
            nb = [(c["index"], c["name"]) for c in b[key]]
            if na != nb:
                fails.append(f"{tag} modes[{i}].{key}: {nb} != {na}")
        if a["component"] != b["component"]:
            fails.append(f"{tag} modes[{i}].component: {b['component']} "
                         f"!= {a['component']}")
    for key in ("count", "tied", "tied_components"):
        if ser["components"][key] != par["components"][key]:
            fails.append(f"{tag} components.{key} differ")
    ia = [c["index"] for c in ser["components"]["top"]]
    ib = [c["index"] for c in par["components"]["top"]]
    if ia != ib:
        fails.append(f"{tag} components.top: {ib} != {ia}")


def case_matrices(cm, cmpi, data, scene, tmp):
    """`cmodes-mpi analyze --matrices` against `cmodes analyze --matrices`
    on the scene's exported system (docs/distributed.md, "Matrix
    systems"): by manifest at np = 1..4 (1 and 3 under ASan), and by the
    three files (no names) at np = 2."""
    man = export_matrices(cm, data, scene, tmp)
    d = os.path.dirname(man)
    mtx = [os.path.join(d, f) for f in ("M.mtx", "J.mtx", "k.mtx")]
    fails = []
    asan = "ASAN_OPTIONS" in os.environ
    nps = (1, 3) if asan else (1, 2, 3, 4)
    runs = (([man], nps), (mtx, (2,)))
    if asan and scene == "fleet2500":
        # under the sanitizers only np = 3 by manifest: the large fleet's
        # runs took 116 s of a 25-minute CI on an AVX2 EPYC (session 14);
        # np = 1, the three files and --vectors are checked under the
        # sanitizers on the other scenes, and on this one without them
        runs = (([man], (3,)),)
    for inp, npl in runs:
        args = ["analyze", "--json", "--no-timings", "--matrices"] + inp
        serial_text = subprocess.run(
            [cm] + args, capture_output=True, text=True, check=True,
            timeout=TIMEOUT).stdout
        ser = json.loads(serial_text)
        if scene == "fleet2500" and ser["components"]["tied"] <= 1000:
            fails.append(f"fleet2500: {ser['components']['tied']} tied "
                         f"components, the test wants more than 1000")
        for np in npl:
            tag = f"{scene} matrices np={np}" + (" (M J k)" if inp == mtx
                                                 else "")
            r = mpirun(np, [cmpi] + args)
            if r.returncode:
                fails.append(f"{tag}: exit {r.returncode}: "
                             f"{r.stderr[-400:]}")
                continue
            par = json.loads(r.stdout)
            compare(ser, par, tag, fails)
            compare_counts(ser, par, tag, fails)
            compare_names(ser, par, tag, fails)
            if np == 1 and r.stdout != serial_text:
                fails.append(f"{tag}: the report is not the serial one "
                             f"byte for byte")
            if np in (2, 3) and not asan:
                r2 = mpirun(np, [cmpi] + args)
                if r2.stdout != r.stdout:
                    fails.append(f"{tag}: a repeated run gave other bits")
            print(f"{tag}: checked", flush=True)
    if not (asan and scene == "fleet2500"):  # as above
        fails += matrices_vectors(cm, cmpi, man, tmp)
    return fails


def matrices_vectors(cm, cmpi, man, tmp):
    """--vectors FILE with --matrices at np = 1 and 3 against `cmodes
    analyze --matrices --vectors FILE`: np = 1 the same bytes, np = 3 the
    same structure and names, the shapes to 1e-8 per entry
    (compare_vectors)."""
    fails = []
    sfile = os.path.join(tmp, "mser.json")
    args = ["analyze", "--json", "--no-timings", "--vectors"]
    s = run([cm] + args + [sfile, "--matrices", man])
    if s.returncode:
        return [f"serial --vectors: exit {s.returncode}: {s.stderr}"]
    with open(sfile) as f:
        stext = f.read()
    for np in (1, 3):
        pfile = os.path.join(tmp, f"mpar{np}.json")
        r = mpirun(np, [cmpi] + args + [pfile, "--matrices", man])
        if r.returncode or (np == 1 and r.stdout != s.stdout):
            fails.append(f"--vectors np={np}: exit {r.returncode}, the "
                         f"report {'same' if r.stdout == s.stdout else 'differs'}")
            continue
        compare(json.loads(s.stdout), json.loads(r.stdout),
                f"--vectors np={np}", fails)
        with open(pfile) as f:
            ptext = f.read()
        if np == 1 and ptext != stext:
            fails.append("--vectors np=1: not the serial file byte for byte")
        worst = compare_vectors(json.loads(stext), json.loads(ptext),
                                f"--vectors np={np}", fails)
        print(f"--vectors np={np}: entries within {worst:.1e}", flush=True)
    return fails


def case_matrices_errors(cm, cmpi, data, tmp):
    """Bad input to --matrices (and a --vectors file that cannot be
    written) ends every rank with one message and the exit code `cmodes
    analyze --matrices` gives; a partial result (exit 5) prints the
    serial's partial report."""
    man = export_matrices(cm, data, "fleet", tmp)
    bad = os.path.join(tmp, "bad")
    shutil.copytree(os.path.dirname(man), bad)
    with open(os.path.join(bad, "M.mtx")) as f:
        text = f.read()
    with open(os.path.join(bad, "M.mtx"), "w") as f:
        f.write(text[:len(text) // 2])
    fails = []
    cases = [
        ("missing manifest", [os.path.join(tmp, "none", "manifest.json")],
         "cannot open the manifest"),
        ("truncated M.mtx", [os.path.join(bad, "manifest.json")],
         "truncated"),
        ("two files", [man, man], "expected a manifest or three"),
        ("--vectors unwritable",
         ["--vectors", os.path.join(tmp, "none", "v.json"), man],
         "cannot write the mode shapes"),
    ]
    for name, inp, text in cases:
        ser = subprocess.run([cm, "analyze", "--matrices"] + inp,
                             capture_output=True, text=True, timeout=TIMEOUT)
        want = ser.returncode
        # np = 1 without the sanitizers only (its message path is the
        # serial's; under them this case took 67 s, session 14)
        for np in (3,) if "ASAN_OPTIONS" in os.environ else (1, 3):
            r = mpirun(np, [cmpi, "analyze", "--matrices"] + inp)
            own = [l for l in r.stderr.splitlines()
                   if l.startswith("cmodes-mpi analyze")]
            got = r.returncode
            if want and f"Exit code:    {want}" in r.stderr:
                got = want  # mpirun's own code: the first rank's
            if got != want or want == 0 or len(own) != 1 or \
                    text not in own[0]:
                fails.append(f"{name} np={np}: exit {r.returncode} (want "
                             f"{want}), messages {own}")
            print(f"{name} np={np}: exit {r.returncode}: {own}", flush=True)
    # --max-iter 1 with ARPACK: not converged, exit 5, the partial report
    pile = export_matrices(cm, data, "pile3d", tmp)
    args = ["analyze", "--json", "--no-timings", "--method", "arpack",
            "--max-iter", "1", "--matrices", pile]
    ser = subprocess.run([cm] + args, capture_output=True, text=True,
                         timeout=TIMEOUT)
    r = mpirun(2, [cmpi] + args)
    code5 = r.returncode == 5 or "Exit code:    5" in r.stderr
    if ser.returncode != 5 or not code5 or r.stdout != ser.stdout or \
            "warning: not converged" not in r.stderr:
        fails.append(f"not converged: exit {r.returncode}, serial "
                     f"{ser.returncode}, same report {r.stdout == ser.stdout}")
    print(f"not converged: exit {r.returncode}", flush=True)
    fails += matrices_oom(cmpi, man, tmp)
    return fails


def matrices_oom(cmpi, man, tmp):
    """An allocation failing on rank 0 or 1 of the fleet's system at np = 2
    with --vectors (CMODES_MPI_FAIL_ALLOC, as mpi_oom; spread over each
    rank's count: the read, the parts, the records, the names, the
    shapes): one message naming the rank, exit 1, within the timeout; one
    past the count gives the uninjected report."""
    fails = []
    args = [cmpi, "analyze", "--json", "--no-timings", "--vectors",
            os.path.join(tmp, "oom.json"), "--matrices", man]
    ref = mpirun(2, args)
    if ref.returncode:
        return [f"matrices oom: the uninjected run exits {ref.returncode}"]
    for rank in (0, 1):
        r = mpirun_env(2, args, {"CMODES_MPI_FAIL_ALLOC": f"{rank}:0"})
        m = re.search(rf"cmodes-mpi: rank {rank}: (\d+) tracked", r.stdout)
        if r.returncode or not m:
            fails.append(f"matrices oom rank {rank}: no count")
            continue
        k = int(m.group(1))
        pts = 3 if "ASAN_OPTIONS" in os.environ else 6
        for n in sorted({1 + (k - 1) * i // (pts - 1)
                         for i in range(pts)}) + [k + 1]:
            fails += injected_oom(args, rank, n, k, ref, "matrices oom")
    return fails


def injected_oom(args, rank, n, k, ref, label):
    """np = 2 with rank's n-th of k tracked allocations failing
    (CMODES_MPI_FAIL_ALLOC): past k the uninjected report (ref's stdout,
    exit 0), else exit 1 with one message naming the rank and "out of
    memory". Returns the failures."""
    r = mpirun_env(2, args, {"CMODES_MPI_FAIL_ALLOC": f"{rank}:{n}"})
    own = [l for l in r.stderr.splitlines()
           if l.startswith("cmodes-mpi analyze")]
    if n > k:
        if r.returncode != 0 or r.stdout != ref.stdout:
            return [f"{label} rank {rank}: {n} > {k} allocations changed "
                    f"the run ({r.returncode})"]
        return []
    print(f"{label} rank {rank} allocation {n}/{k}: exit {r.returncode}: "
          f"{own}", flush=True)
    failed = r.returncode == 1 or "Exit code:    1" in r.stderr
    if not failed or len(own) != 1 or "out of memory" not in own[0] or \
            f"(rank {rank})" not in own[0]:
        return [f"{label} rank {rank} allocation {n}/{k}: exit "
                f"{r.returncode}, messages {own}"]
    return []


def mpirun_env(np, args, env):
    cmd = ["mpirun", "--oversubscribe", "-np", str(np)]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    for k in env:
        cmd += ["-x", k]
    return subprocess.run(cmd + args, capture_output=True, text=True,
                          timeout=TIMEOUT, env=dict(ENV, **env))


def case_oom(cmpi, data, tmp):
    """Out of memory on one rank, injected (CMODES_MPI_FAIL_ALLOC=RANK:N
    makes that rank's N-th tracked allocation fail; RANK:0 counts them):
    on the 3D pile cut over 2 ranks, for either rank and N spread over
    its allocations (reading, halo plan, operator, basis, bound, gather,
    report), every rank ends within the timeout with one message naming
    the rank and exit 1; one past the last gives the uninjected report.
    MPI_CHECK_OOM_ALL=1 tries every N (by hand: minutes)."""
    fails = []
    pile = os.path.join(tmp, "pile3d.cmpart")
    run([cmpi, "convert", os.path.join(data, "pile3d.json"),
         pile]).check_returncode()
    args = [cmpi, "analyze", "--json", "--no-timings", pile]
    ref = mpirun(2, args)
    if ref.returncode != 0:
        return [f"oom: the uninjected run exits {ref.returncode}"]
    every = os.environ.get("MPI_CHECK_OOM_ALL") == "1"
    for rank in (0, 1):
        r = mpirun_env(2, args, {"CMODES_MPI_FAIL_ALLOC": f"{rank}:0"})
        m = re.search(rf"cmodes-mpi: rank {rank}: (\d+) tracked", r.stdout)
        if r.returncode != 0 or not m:
            fails.append(f"oom rank {rank}: no count ({r.returncode})")
            continue
        k = int(m.group(1))
        pts = 3 if "ASAN_OPTIONS" in os.environ else 8  # ASan: slower runs
        ns = range(1, k + 1) if every else \
            sorted({1 + (k - 1) * i // (pts - 1) for i in range(pts)})
        for n in list(ns) + [k + 1]:
            fails += injected_oom(args, rank, n, k, ref, "oom")
    return fails


def main():
    cm, cmpi, data, case = sys.argv[1:5]
    if not cmpi or not os.path.exists(cmpi):
        print("SKIP: cmodes-mpi was not built (MPI or PARPACK not found)")
        return 77
    if not shutil.which("mpirun"):
        print("SKIP: no mpirun on PATH")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        sanitizer_env(tmp)
        if case.startswith("schur:"):
            fails = case_schur(cm, cmpi, data, case[6:], tmp)
        elif case.startswith("damped:"):
            fails = case_damped(cm, cmpi, data, case[7:], tmp)
        elif case.startswith("vectors:"):
            fails = case_vectors(cm, cmpi, data, case[8:], tmp)
        elif case.startswith("matrices:"):
            fails = case_matrices(cm, cmpi, data, case[9:], tmp)
        elif case == "matrices-errors":
            fails = case_matrices_errors(cm, cmpi, data, tmp)
        elif case.startswith("equal:"):
            fails = case_equal(cm, cmpi, data, case[6:], tmp)
        elif case == "options":
            fails = case_options(cm, cmpi, data, tmp)
        elif case == "oom":
            fails = case_oom(cmpi, data, tmp)
        elif case == "partition":
            fails = case_partition(cm, cmpi, data, tmp)
        else:
            fails = case_errors(cm, cmpi, data, tmp)
    for f in fails:
        print("FAIL:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
