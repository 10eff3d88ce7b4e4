"""fields_readers.py CMODES SRCDIR: the mode-field exports read by readers
nobody here wrote: the VTK polydata by VTK's own vtkPolyDataReader
(python3-vtk9; Debian's meshio 5 reads no legacy POLYDATA), the
LAMMPS-style dump by ASE
(python3-ase, the reader behind OVITO-like column conventions: c_/v_
columns kept as named per-atom arrays). Values must equal the JSON report
and the scene. Exit 0 pass, 1 fail, 77 skip (a reader is not installed)."""
import json, math, os, subprocess, sys, tempfile

cmodes, src = sys.argv[1], sys.argv[2]
missing = []
for mod, pkg in (("vtk", "python3-vtk9"), ("ase", "python3-ase")):
    try:
        __import__(mod)
    except ImportError:
        missing.append(pkg)
if missing:
    print("SKIP: independent readers not installed: apt-get install " + " ".join(missing))
    sys.exit(77)
import ase.io, numpy as np
from vtkmodules.vtkIOLegacy import vtkPolyDataReader
from vtkmodules.util.numpy_support import vtk_to_numpy


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def close(a, b, what, tol=1e-12):
    check(abs(a - b) <= tol * max(abs(b), 1e-300), f"{what}: {a!r} != {b!r}")


ok = 0
for name in ("pile3d.json", "pile2d.json", "fleet.json"):
    scene_path = os.path.join(src, "data", name)
    scene = json.load(open(scene_path))
    with tempfile.TemporaryDirectory() as tmp:
        vtk_path, dump_path = os.path.join(tmp, "c.vtk"), os.path.join(tmp, "m.dump")
        subprocess.run([cmodes, "report", scene_path, "--no-soften", "--vtk", vtk_path,
                        "--dump", dump_path], check=True)
        rep = json.loads(subprocess.run([cmodes, "analyze", "--json", scene_path],
                                        check=True, capture_output=True).stdout)
        nb, nc = len(scene["bodies"]), len(scene["contacts"])
        # ---- VTK's reader ----
        r = vtkPolyDataReader()
        r.SetFileName(vtk_path)
        r.ReadAllScalarsOn()
        r.ReadAllVectorsOn()
        r.Update()
        pd = r.GetOutput()
        check(pd.GetNumberOfPoints() == nb + nc, f"{name}: points {pd.GetNumberOfPoints()}")
        check(pd.GetNumberOfLines() == nc, f"{name}: lines {pd.GetNumberOfLines()}")
        cd, pdat = pd.GetCellData(), pd.GetPointData()
        share = vtk_to_numpy(cd.GetArray("share_mode1"))
        pc = vtk_to_numpy(cd.GetArray("pc_omega"))
        k = vtk_to_numpy(cd.GetArray("stiffness"))
        kin = vtk_to_numpy(pdat.GetArray("kinetic_mode1"))
        disp = vtk_to_numpy(pdat.GetArray("disp_mode1"))
        for c in rep["modes"][0]["contacts"]:
            close(share[c["index"]], c["share"], f"{name}: VTK share of c{c['index']}")
        for b in rep["modes"][0]["bodies"]:
            close(kin[b["index"]], b["share"], f"{name}: VTK kinetic share of {b['name']}")
        close(share.sum(), 1.0, f"{name}: shares sum", 1e-9)
        close(pc.max(), rep["per_contact"]["omega_max"], f"{name}: max sqrt(S_cc)")
        check(int(np.argmax(pc)) == rep["per_contact"]["contact"], f"{name}: argmax pc")
        for i, c in enumerate(scene["contacts"]):
            close(k[i], c["stiffness"], f"{name}: k of c{i}")
        close(np.abs(disp).max(), 1.0, f"{name}: displacement scale", 1e-12)
        # line cells join body a's centre and body b's (or the contact point)
        a0 = vtk_to_numpy(pd.GetLines().GetData()).reshape(-1, 3)
        for i, c in enumerate(scene["contacts"]):
            bb = c["b"] if isinstance(c["b"], int) else -1
            fixed = bb < 0 or scene["bodies"][bb].get("fixed")
            check(a0[i, 0] == 2 and a0[i, 2] == (nb + i if fixed else bb),
                  f"{name}: line of c{i} {a0[i]}")
        # ---- ASE: the dump ----
        frames = ase.io.read(dump_path, index=":", format="lammps-dump-text")
        check(len(frames) == len(rep["modes"]), f"{name}: {len(frames)} frames")
        moving = [i for i, b in enumerate(scene["bodies"]) if not b.get("fixed")]
        f0 = frames[0]
        check(len(f0) == len(moving), f"{name}: {len(f0)} atoms for {len(moving)} moving bodies")
        dim = scene.get("dim", 3)
        pos = np.array([scene["bodies"][i]["position"] + [0.0] * (3 - dim) for i in moving])
        check(np.allclose(f0.get_positions(), pos, rtol=0, atol=1e-15), f"{name}: positions")
        ke = f0.arrays["c_ke_share"].ravel()
        row = {b: j for j, b in enumerate(moving)}
        for b in rep["modes"][0]["bodies"]:
            close(ke[row[b["index"]]], b["share"], f"{name}: dump kinetic share of {b['name']}")
        close(f0.arrays["v_omega"].ravel()[0], rep["modes"][0]["omega"], f"{name}: dump omega")
        dd = np.stack([f0.arrays[f"c_disp[{i}]"].ravel() for i in (1, 2, 3)], axis=1)
        check(np.array_equal(dd, disp[moving]), f"{name}: dump and VTK displacements differ")
        mcs = f0.arrays["c_max_contact_share"].ravel()
        top = rep["modes"][0]["contacts"][0]
        a = scene["contacts"][top["index"]]
        print(f"ok   {name}: VTK {nb + nc} points, {nc} lines, shares = JSON; "
              f"ASE {len(frames)} frames x {len(f0)} atoms, c_ columns = VTK; "
              f"largest contact share {mcs.max():.4f} = {top['share']:.4f}")
        close(mcs.max(), top["share"], f"{name}: max contact share")
        ok += 1
print(f"ok   {ok} scenes read back by VTK {__import__('vtk').vtkVersion.GetVTKVersion()} "
      f"and ASE {ase.__version__}")
