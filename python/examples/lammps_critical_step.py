"""A LAMMPS granular pour driven from Python (Debian's python3-lammps and
liblammps-dev) that prints the coupled critical time step every N steps:
LAMMPS writes a dump of the current state, cmodes imports it with the
deck's contact laws (cmodes.import_lammps) and analyses it.

    python3 python/examples/lammps_critical_step.py [N] [STEPS]

Set CMODES_LIBRARY (or run from a build next to python/) so that cmodes
finds libcmodes."""
import os
import sys
import tempfile

from lammps import lammps

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import cmodes  # noqa: E402

DECK = """# a small pour: 300 spheres, 8-12 mm, glass, into a 6 cm box (SI)
units           si
atom_style      sphere
dimension       3
boundary        f f f
newton          off
comm_modify     vel yes
region          box block -0.03 0.03 -0.03 0.03 0.0 0.3 units box
create_box      1 box
pair_style      gran/hooke/history 2000.0 NULL 1000.0 NULL 0.5 1
pair_coeff      * *
neighbor        0.002 bin
neigh_modify    delay 0
timestep        1.0e-4
fix             grav all gravity 9.81 vector 0 0 -1
fix             int all nve/sphere
fix             floor all wall/gran hooke/history 2000.0 NULL 1000.0 NULL 0.5 1 zplane 0.0 NULL
fix             xwall all wall/gran hooke/history 2000.0 NULL 1000.0 NULL 0.5 1 xplane -0.03 0.03
fix             ywall all wall/gran hooke/history 2000.0 NULL 1000.0 NULL 0.5 1 yplane -0.03 0.03
region          slab block -0.025 0.025 -0.025 0.025 0.05 0.28 units box
fix             ins all pour 300 1 4767548 region slab diam range 0.008 0.012 dens 2500 2500 vel 0 0 0 0 -1.0
"""


def main(every=2000, steps=16000):
    work = tempfile.mkdtemp(prefix="cmodes-lammps-")
    deck = os.path.join(work, "in.pour")
    with open(deck, "w") as f:
        f.write(DECK)
    lmp = lammps(cmdargs=["-log", "none", "-screen", "none"])
    lmp.file(deck)
    dump = os.path.join(work, "now.dump")
    print("%7s %6s %8s %14s %12s %10s" % ("step", "atoms", "contacts",
                                           "omega_max", "h_crit", "dt/h"))
    for _ in range(steps // every):
        lmp.command("run %d" % every)
        lmp.command("write_dump all custom %s id type radius mass x y z "
                    "modify sort id format float %%.17g" % dump)
        step = int(lmp.get_thermo("step"))
        natoms = lmp.get_natoms()
        scene = cmodes.import_lammps(deck, dump)
        if scene.ncontacts == 0:
            print("%7d %6d %8d %14s" % (step, natoms, 0, "(no contacts)"))
            continue
        r = cmodes.analyze(scene, modes=1)
        cd = r.timestep["central_difference"]
        print("%7d %6d %8d %14.6g %12.6g %10.4f" % (
            step, natoms, scene.ncontacts, r.omega_max, cd["h"],
            r.deck["fraction"]))
    lmp.close()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
