#!/usr/bin/env python3
"""lammps-threshold.py: bisects the time step at which LAMMPS itself blows up
on a settled granular bed, live.

Usage:
  scripts/lammps-threshold.py DECK DUMP [options]     # one deck
  scripts/lammps-threshold.py --all [options]          # the committed decks

DECK is a LAMMPS input with a `mode` switch (data/lammps/decks/in.*,
bench/lammps/in.pile-threshold):
  -var mode settle      pours and settles the bed exactly as committed and
                        writes the state twice: the text dump (DUMP's file
                        name, in the working directory) and a binary restart
                        (-var restart FILE), which also holds the contact
                        history (the tangential springs' shear displacement
                        of every pair and wall contact);
  -var mode threshold   reads that restart (read_restart) and runs nsteps at
                        -var dt DT with the deck's own model, walls and
                        gravity, printing the kinetic energy (translational
                        c_kt + rotational c_rke) every `every` steps and
                        stopping early (fix halt) once it exceeds -var
                        keratio times its value at the start or a sphere
                        leaves the box.
So every run continues the settled state bit for bit, with its velocities
and contact history, at a new time step: nothing is re-settled, no spring
starts unloaded. A text dump or data file cannot carry the contact history
(restarting from one makes the frictional beds re-settle by micrometres and
kick every mode hard), and binary restarts are not portable, so the restart
is made live by the settle run (2-5 s for the small decks) and never
committed. The settle run is deterministic for a given LAMMPS build; its
fresh dump is compared with the committed DUMP (reported as `same` when
identical byte for byte) and, with --out-dir, kept for `cmodes import`.

Perturbation. Before each run a seeded random velocity (each component
normal, standard deviation --perturb = 1e-5 m/s, LAMMPS' normal() atom
variables seeded from --seed, so deterministic) is added to every sphere.
It is needed: the qe criterion below is relative to its starting value,
which without a perturbation is the settled bed's tiny residual, and then
settling events pass it (--perturb 0 on the Hertz-Mindlin deck: "unstable"
12000-step runs down to 1.07e-4 s, 28 % below the threshold).
It raises the seed of every mode, the stiffest ones included, to a known
level (displacements ~ perturb/omega ~ 1e-9 m, far below the overlaps, so
the bed stays linear); without it the damped decks' stiff modes start
from whatever the settling left, sometimes far below roundoff of KE0,
and growth just past the threshold takes more steps than a run has
(Hertz-Mindlin deck, judged by the kinetic energy alone: 3 % too high a
threshold without it).

Classification (stable / unstable at DT). Two energies are printed every
--every steps: the kinetic energy KE (translation + rotation) and the
force measure
    qe = dt^2/2 * sum_i (|f_i|^2 / m_i + |torque_i|^2 / I_i),
the kinetic energy one step of the current net forces (gravity, contacts,
walls) would add: ~ (omega dt)^2 times the energy of each mode, so it is
dominated by the stiffest modes and blind to the slow rearrangements
(rattlers rolling, creep) that make KE wander. It is needed because
velocity Verlet's full-step velocities of a mode at omega*dt ~ 2 are ~ 0
(its discrete invariant is v^2 + omega^2 x^2 (1 - (omega dt/2)^2)): the
mode that goes unstable barely shows in KE until it is large. (In the
2000-sphere pile at 2.53e-4 s an unstable mode saturates with qe at 1e5
times its start while KE stays at 5e-10 J.) KE1 and Q1 are the values at
the start of the run. A run is UNSTABLE when, within --steps (3000), any of
  * KE > --ke-ratio (5) KE1, or qe > --q-ratio (1e4) Q1 (fix halt stops
    the run there);
  * qe's largest value in the last quarter of the run is more than --rise
    (100) times its smallest before, that minimum floored at --floor
    (1e-2) Q1 -- so for a damped bed: qe ends above Q1. Damped beds shed
    the perturbation first (qe falls by 1e10 and more) and a mode just
    past the threshold then grows from there and keeps growing or stays
    saturated, while a rattler's impact or a sphere settling makes a jump
    that decays again (up to ~0.1 Q1 in the 2000-sphere pile at its own
    step, hence the floor);
  * a sphere leaves the box (LAMMPS loses it), an energy is not finite, or
    LAMMPS stops with an error about lost or out-of-range atoms;
otherwise STABLE. What the stable runs do: undamped decks keep KE ~ KE1
and qe at 2-3 Q1 (the step change redistributes the modes' energy; a mode
just below the threshold is amplified by 1/(1-(omega dt/2)^2), 12x at the
stable end of the frictional deck), damped ones shed qe by 1e8-1e15.
Unstable ones pass 1e4 Q1 within tens to a few thousand steps. Why not
"the bed flies apart": with unilateral and frictional contacts a growing
mode often saturates (its contact opens or slides) and the bed never
flies apart; a criterion at that scale (the energy to lift the bed by a
radius, or 1000 KE1) put the damped Hooke deck's threshold ~6 % above
the onset of growth, the linear stability limit cmodes computes.
How fast: on an undamped mode with omega*dt = 2(1+d) velocity Verlet
multiplies the amplitude by ~1+2*sqrt(2d) per step (1.09 at d = 0.1 %),
qe by its square: 1e4 in ~50 steps. With dashpots a single real
eigenvalue crosses -1 instead and the growth rate is only ~d per step:
0.2 % past the threshold needs thousands of steps. So the bisection (to
--rtol = 0.2 %) is followed by a confirmation: the stable end is re-run
--confirm (4) times longer and stepped down by the bracket width until
that long run is stable too (an unstable run stays unstable when run
longer: same trajectory). Growth too slow to show within the long run is
classified stable, so the bracket can only err upward.

Initial bracket: --lo/--hi when given (each is checked and the bracket
widened by --grow when it does not hold), else from the deck's own time
step (its `variable dt index X`, or --dt0) upward by factors --grow.

Prints one line per LAMMPS run and a table; --json FILE writes the results
as JSON. Exit status 0, 1 on an error, 77 with --skip-missing when no lmp
is installed. Stdlib only; runs one serial lmp at a time.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECKS = os.path.join(TOP, "data", "lammps", "decks")
# the committed small decks: (name, deck, settled dump)
ALL = [(n, os.path.join(DECKS, "in." + n), os.path.join(DECKS, n + ".dump"))
       for n in ("hooke-frictionless", "hooke-friction", "hooke-damped",
                 "hertz-mindlin", "hooke-triclinic", "hooke-damped-triclinic",
                 "hooke-viscous", "hooke-langevin", "hooke-tether")]


def find_lmp(explicit=None):
    if explicit:
        return explicit if shutil.which(explicit) else None
    for b in ("lmp", "lmp_serial", "lmp_stable"):
        if shutil.which(b):
            return b
    return None


def read_dump(path):
    """The last snapshot of a LAMMPS text dump: (step, box, columns, rows)."""
    with open(path) as f:
        lines = f.read().split("\n")
    snaps = [i for i, l in enumerate(lines) if l.startswith("ITEM: TIMESTEP")]
    if not snaps:
        raise ValueError(f"{path}: not a LAMMPS dump")
    i = snaps[-1]
    step = int(lines[i + 1])
    n = int(lines[i + 3])
    box = [tuple(lines[i + 5 + k].split()[:2]) for k in range(3)]
    cols = lines[i + 8].split()[2:]
    for need in ("id", "radius", "mass"):
        if need not in cols:
            raise ValueError(f"{path}: dump has no column {need}")
    rows = [lines[i + 9 + k].split() for k in range(n)]
    return step, box, cols, rows


def dump_diff(a, b):
    """'same' when the files are identical, else the largest relative
    difference of the numbers of the two dumps' last snapshots."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        if fa.read() == fb.read():
            return "same"
    _, _, ca, ra = read_dump(a)
    _, _, cb, rb = read_dump(b)
    if ca != cb or len(ra) != len(rb):
        return "different columns or atom count"
    worst = 0.0
    for x, y in zip(ra, rb):
        for u, v in zip(x, y):
            u, v = float(u), float(v)
            if u != v:
                worst = max(worst, abs(u - v) / max(abs(u), abs(v), 1e-300))
    return f"differs (max relative difference {worst:.3g})"


def deck_timestep(deck):
    """The default of the deck's `variable dt index X` (its own step)."""
    with open(deck) as f:
        for line in f:
            m = re.match(r"\s*variable\s+dt\s+index\s+(\S+)", line)
            if m:
                return float(m.group(1))
    return None


def lmp_run(lmp, deck, workdir, log, variables):
    cmd = [lmp, "-in", os.path.abspath(deck)]
    for k, v in variables:
        cmd += ["-var", k, v]
    cmd += ["-log", log, "-screen", "none", "-nocite"]
    # Debian's lmp is an MPI program run as a singleton: Open MPI is told
    # not to start its daemon (LAMMPS never spawns). A run that fails with
    # no line starting ERROR (LAMMPS' own) failed to start rather than
    # judged the deck: it is reported and run again, up to three runs.
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.setdefault("OMPI_MCA_ess_singleton_isolated", "1")
    t0 = time.time()
    for attempt in (1, 2, 3):
        p = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=env)
        text = ""
        if os.path.exists(os.path.join(workdir, log)):
            with open(os.path.join(workdir, log)) as f:
                text = f.read()
        if p.returncode == 0 or re.search(r"^ERROR", text + "\n" + p.stdout,
                                          re.M):
            break
        print(f"lmp run {attempt} of 3 failed (status {p.returncode}) "
              f"in {workdir}: ...{p.stdout.strip()[-600:]}", file=sys.stderr,
              flush=True)
    wall = time.time() - t0
    return cmd, p, text, wall


def settle(lmp, deck, dump, workdir, verbose):
    """Runs DECK's settle mode in WORKDIR: (fresh dump, restart, KE0,
    comparison with the committed dump, seconds)."""
    restart = os.path.join(workdir, "settled.restart")
    cmd, p, text, wall = lmp_run(
        lmp, deck, workdir, "settle.log",
        [("mode", "settle"), ("restart", restart),
         ("deckdir", os.path.dirname(os.path.abspath(deck)))])
    m = None
    for line in text.split("\n"):
        if re.match(r"^(SETTLED|PILE) ", line):
            m = line
    fresh = os.path.join(workdir, os.path.basename(dump))
    if p.returncode != 0 or m is None or not os.path.exists(restart) \
            or not os.path.exists(fresh):
        raise RuntimeError(f"settle run failed: {' '.join(cmd)} "
                           f"(status {p.returncode}) {p.stdout[-500:]}")
    ket = float(re.search(r"ke_trans (\S+)", m).group(1))
    ker = float(re.search(r"ke_rot (\S+)", m).group(1))
    same = dump_diff(fresh, dump)
    if verbose:
        print(f"  settle: {m.strip()}  ({wall:.1f} s); fresh dump vs "
              f"{os.path.relpath(dump, TOP)}: {same}", flush=True)
    return fresh, restart, ket + ker, same, wall


class Runner:
    def __init__(self, lmp, deck, restart, natoms, a, workdir):
        self.lmp, self.deck, self.restart = lmp, deck, restart
        self.natoms, self.keratio = natoms, a.ke_ratio
        self.qratio, self.rise, self.floor = a.q_ratio, a.rise, a.floor
        self.perturb, self.pseed = a.perturb, a.seed
        self.steps, self.every, self.verbose = a.steps, a.every, a.verbose
        self.workdir = workdir
        self.runs = []
        self.seconds = 0.0
        self.ke1, self.s1 = self.probe()

    def probe(self):
        """KE1 and S1 of the perturbed settled state, from a LAMMPS process
        of its own (-var probe 1): the threshold runs must be the only
        `run` of theirs, since a second run's setup changes pair granular
        beds (see the decks' threshold section)."""
        cmd, p, text, wall = lmp_run(
            self.lmp, self.deck, self.workdir, "probe.log",
            [("mode", "threshold"), ("probe", "1"), ("restart", self.restart),
             ("deckdir", os.path.dirname(os.path.abspath(self.deck))),
             ("perturb", repr(self.perturb)), ("pseed", str(self.pseed))])
        self.seconds += wall
        m = re.search(r"^PROBE ke1 (\S+) s1 (\S+)", text, re.M)
        if p.returncode != 0 or not m:
            # what LAMMPS (or MPI's start-up) said: its output, else its log
            said = (p.stdout or "").strip() or text.strip()
            raise RuntimeError(f"{' '.join(cmd)}: no PROBE line "
                               f"(status {p.returncode}); it said: "
                               f"...{said[-600:]}")
        return float(m.group(1)), float(m.group(2))

    def run(self, dt):
        cmd, p, text, wall = lmp_run(
            self.lmp, self.deck, self.workdir, "threshold.log",
            [("mode", "threshold"), ("restart", self.restart),
             ("deckdir", os.path.dirname(os.path.abspath(self.deck))),
             ("dt", repr(dt)), ("nsteps", str(self.steps)),
             ("every", str(self.every)), ("keratio", repr(self.keratio)),
             ("qratio", repr(self.qratio)),
             ("perturb", repr(self.perturb)), ("pseed", str(self.pseed)),
             ("ke1", repr(self.ke1)), ("s1", repr(self.s1))])
        self.seconds += wall
        kes, qs = [], []
        n_last, first_step, last_step, error = self.natoms, None, 0, None
        in_thermo = False
        for line in text.split("\n"):
            w = line.split()
            if w[:5] == ["Step", "v_n", "c_kt", "c_rke", "v_qe"]:
                in_thermo = True       # keep the last block
                kes, qs, first_step = [], [], None
                continue
            if in_thermo:
                if len(w) == 5 and re.match(r"^\d+$", w[0]):
                    last_step, n_last = int(w[0]), int(float(w[1]))
                    if first_step is None:
                        first_step = last_step
                    kes.append(float(w[2]) + float(w[3]))
                    qs.append(float(w[4]))
                    continue
                if line.startswith("Loop time"):
                    in_thermo = False
            if line.startswith("ERROR"):
                error = line.strip()
        if p.returncode != 0 and error is None:
            error = f"lmp exit status {p.returncode}: {p.stdout.strip()[-300:]}"
        if not kes and error is None:
            raise RuntimeError(f"no thermo output from {' '.join(cmd)}")
        steps = last_step - (first_step or 0)
        ke1 = kes[0] if kes else float("nan")
        kemax = self.keratio * ke1
        kemax_seen = max(kes) if kes else float("nan")
        finite = all(math.isfinite(k) for k in kes + qs)
        q1 = qs[0] if qs else float("nan")
        # the rise of qe in the last quarter of the run over its minimum
        # before (floored at floor * Q1): damped beds shed the perturbation
        # first (qe falls by 1e10 and more) and a mode just past the
        # threshold then grows from far below Q1 and keeps growing (or
        # stays, saturated), while a rattler's impact makes a jump that
        # decays again
        rise = 1.0
        if finite and q1 > 0 and len(qs) >= 4:
            k = len(qs) * 3 // 4
            low = min(max(q, self.floor * q1) for q in qs[:k])
            rise = max(qs[k:]) / low
        if error is not None:
            why = "lmp error: " + error
        elif not finite:
            why = "energy not finite"
        elif n_last < self.natoms:
            why = f"lost {self.natoms - n_last} spheres"
        elif kemax_seen > kemax:
            why = f"ke > {self.keratio:g} KE1"
        elif qs and max(qs) > self.qratio * q1:
            why = f"qe > {self.qratio:g} Q1"
        elif rise > self.rise:
            why = f"qe at the end > {self.rise:g} x its minimum before"
        else:
            why = None
        unstable = why is not None
        rec = dict(dt=dt, unstable=unstable, why=why or "", steps=steps,
                   ke_start=ke1, ke_max=kemax_seen,
                   ke_max_ratio=kemax_seen / ke1 if ke1 > 0 else float("nan"),
                   q_start=q1, q_max=max(qs) if qs else float("nan"),
                   q_last=qs[-1] if qs else float("nan"), rise=rise,
                   ke_last=kes[-1] if kes else float("nan"),
                   seconds=round(wall, 3))
        self.runs.append(rec)
        if error is not None and not re.search(
                r"[Ll]ost atoms|Out of range|[Nn]eighbor|nan|inf", error):
            # an error that is not a blow-up symptom is the harness' fault
            raise RuntimeError(f"{' '.join(cmd)}: {error}")
        if self.verbose:
            print(f"  dt {dt:.6e}  {'UNSTABLE' if unstable else 'stable  '}"
                  f"  steps {steps:6d}  ke max {kemax_seen:.3e}"
                  f" ({rec['ke_max_ratio']:.3g} KE1) qe {q1:.2e} -> "
                  f"{rec['q_last']:.2e} (rise {rise:.3g})"
                  f"  {why or ''}"
                  f"  ({wall:.1f} s)", flush=True)
        return unstable


def bisect(r, lo, hi, grow, rtol, dt0, confirm):
    """[lo, hi] with lo stable, hi unstable and (hi-lo)/lo <= rtol."""
    while r.run(lo):
        hi = lo if hi is None or lo < hi else hi
        lo /= grow
        if lo < dt0 * 1e-3:
            raise RuntimeError("no stable time step found")
    if hi is None or hi <= lo:
        hi = lo * grow
    while not r.run(hi):
        lo = hi
        hi *= grow
        if hi > dt0 * 1e4:
            raise RuntimeError("no unstable time step found")
    while (hi - lo) / lo > rtol:
        mid = 0.5 * (lo + hi)
        if r.run(mid):
            hi = mid
        else:
            lo = mid
    # confirm the stable end with a run `confirm` times longer: slow growth
    # (damped decks just past the threshold) may not show in `steps`. An
    # unstable short run stays unstable when run longer (the same
    # trajectory), so only lo needs it; step lo down by the bracket width
    # until the long run is stable too.
    if confirm > 1:
        short = r.steps
        r.steps = short * confirm
        down, start = 0, lo
        while r.run(lo):
            hi = lo
            lo = lo * (1.0 - rtol)
            down += 1
            if down > 10:
                # the short runs called stable what the long ones do not
                # over more than 2 %: not slow growth near the threshold
                # but a classification that does not fit the deck (with
                # --perturb 0 settling events pass the qe criterion)
                raise RuntimeError(
                    f"the {r.steps}-step confirmation failed 10 times "
                    f"stepping down from {start:.6e} s to {hi:.6e} s: "
                    "the classification is unreliable here")
        r.steps = short
    return lo, hi


def threshold(lmp, name, deck, dump, a, workdir):
    wd = os.path.join(workdir, name)
    os.makedirs(wd, exist_ok=True)
    if a.verbose:
        print(f"{name}: {os.path.relpath(deck, TOP)}", flush=True)
    fresh, restart, ke0, same, settle_s = settle(lmp, deck, dump, wd,
                                                  a.verbose)
    natoms = len(read_dump(fresh)[3])
    dt0 = a.dt0 or deck_timestep(deck)
    r = Runner(lmp, deck, restart, natoms, a, wd)
    if a.verbose:
        print(f"  {natoms} spheres, settled KE0 {ke0:.4g} J, deck dt {dt0}",
              flush=True)
    lo, hi = bisect(r, a.lo or dt0, a.hi, a.grow, a.rtol, dt0, a.confirm)
    kept = None
    if a.out_dir:
        os.makedirs(a.out_dir, exist_ok=True)
        kept = os.path.join(a.out_dir, name + ".dump")
        shutil.copyfile(fresh, kept)
    stable_ratio = max([x["ke_max_ratio"] for x in r.runs
                        if not x["unstable"]] or [float("nan")])
    stable_rise = max([x["rise"] for x in r.runs
                       if not x["unstable"]] or [float("nan")])
    return dict(name=name, deck=os.path.relpath(deck, TOP),
                dump=os.path.relpath(dump, TOP), fresh_dump=kept,
                fresh_vs_committed=same, natoms=natoms, ke0=ke0,
                deck_dt=dt0, lo=lo, hi=hi, mid=0.5 * (lo + hi),
                steps=a.steps, confirm_steps=a.steps * a.confirm,
                stable_ke_max_ratio=stable_ratio,
                stable_rise=stable_rise, runs=r.runs,
                settle_seconds=round(settle_s, 2),
                lmp_seconds=round(r.seconds + settle_s, 2), runner=r)


def make_parser():
    ap = argparse.ArgumentParser(
        description="Bisect LAMMPS' blow-up time step on a settled deck.")
    ap.add_argument("deck", nargs="?")
    ap.add_argument("dump", nargs="?",
                    help="the committed dump the settle run must reproduce")
    ap.add_argument("--all", action="store_true",
                    help="the committed decks of data/lammps/decks")
    ap.add_argument("--name", help="label (default: from the deck's name)")
    ap.add_argument("--lmp", help="LAMMPS binary (default lmp)")
    ap.add_argument("--lo", type=float, help="a time step believed stable")
    ap.add_argument("--hi", type=float, help="a time step believed unstable")
    ap.add_argument("--dt0", type=float,
                    help="start of the search (default: the deck's dt)")
    ap.add_argument("--grow", type=float, default=1.5,
                    help="bracket search factor (1.5)")
    ap.add_argument("--rtol", type=float, default=0.002,
                    help="relative bracket width (0.002)")
    ap.add_argument("--steps", type=int, default=3000,
                    help="steps per run (3000)")
    ap.add_argument("--every", type=int, default=10,
                    help="energy check interval, steps (10)")
    ap.add_argument("--ke-ratio", type=float, default=5.0,
                    help="unstable above this times the starting KE (5)")
    ap.add_argument("--q-ratio", type=float, default=1e4,
                    help="unstable above this times the starting qe (1e4)")
    ap.add_argument("--rise", type=float, default=100.0,
                    help="unstable when qe in the last quarter of the run "
                    "rises this many times over its minimum before (100)")
    ap.add_argument("--floor", type=float, default=1e-2,
                    help="that minimum floored at this times Q1 (1e-2)")
    ap.add_argument("--confirm", type=int, default=4,
                    help="re-run the stable end this many times longer (4)")
    ap.add_argument("--perturb", type=float, default=1e-5,
                    help="velocity perturbation, m/s (1e-5; 0 = none)")
    ap.add_argument("--seed", type=int, default=4711,
                    help="perturbation seed (4711)")
    ap.add_argument("--out-dir",
                    help="keep the fresh settled dumps here (NAME.dump)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--skip-missing", action="store_true",
                    help="exit 77 when no lmp is installed")
    ap.add_argument("-q", "--quiet", dest="verbose", action="store_false")
    return ap


def main():
    ap = make_parser()
    a = ap.parse_args()

    lmp = find_lmp(a.lmp)
    if lmp is None:
        print("lammps-threshold: no LAMMPS binary (lmp) found "
              "(apt-get install lammps)", file=sys.stderr)
        return 77 if a.skip_missing else 1
    if a.all:
        todo = ALL
    elif a.deck and a.dump:
        name = a.name or os.path.basename(a.deck).replace("in.", "", 1)
        todo = [(name, a.deck, a.dump)]
    else:
        ap.error("give DECK and DUMP, or --all")
    results = []
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="lammps-threshold.") as wd:
        failed = []
        for name, deck, dump in todo:
            try:
                results.append(threshold(lmp, name, deck, dump, a, wd))
            except (RuntimeError, ValueError, OSError) as e:
                print(f"lammps-threshold: {name}: {e}", file=sys.stderr)
                failed.append(name)
    print()
    print(f"LAMMPS ({lmp}) blow-up time step, {a.steps} steps a run "
          f"(stable end confirmed over {a.steps * a.confirm}); unstable: KE > "
          f"{a.ke_ratio:g} KE1, qe > {a.q_ratio:g} Q1 or ending {a.rise:g}x "
          f"above its minimum; perturbation {a.perturb:g} m/s")
    print(f"{'deck':<20} {'atoms':>6} {'deck dt':>10} {'stable':>13}"
          f" {'unstable':>13} {'width':>7} {'stable KE':>9} {'qe rise':>8}"
          f" {'runs':>4}"
          f" {'lmp s':>6}  settled dump")
    for t in results:
        print(f"{t['name']:<20} {t['natoms']:>6} {t['deck_dt']:>10.3e}"
              f" {t['lo']:>13.7e} {t['hi']:>13.7e}"
              f" {100 * (t['hi'] - t['lo']) / t['lo']:>6.3f}%"
              f" {t['stable_ke_max_ratio']:>8.3g}x {t['stable_rise']:>7.3g}x"
              f" {len(t['runs']):>4}"
              f" {t['lmp_seconds']:>6.1f}  {t['fresh_vs_committed']}")
    print(f"total {time.time() - t0:.1f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(lammps=lmp, steps=a.steps, every=a.every,
                           confirm=a.confirm, rtol=a.rtol,
                           ke_ratio=a.ke_ratio, q_ratio=a.q_ratio,
                           rise=a.rise, floor=a.floor,
                           perturb=a.perturb,
                           seed=a.seed,
                           decks=[{k: v for k, v in t.items()
                                   if k != "runner"} for t in results],
                           failed=failed), f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
