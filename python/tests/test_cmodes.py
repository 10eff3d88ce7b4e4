"""Tests of the cmodes Python package against scipy.linalg.eigh of
S = K^1/2 J M^-1 J^T K^1/2 formed here, and of its errors against the
command line's. Run: python3 -m pytest -q python/tests (CMODES_LIBRARY
and CMODES_CLI name the library and the binary; else ../build)."""
import json
import re
import os
import subprocess
import sys
import threading

import numpy as np
import pytest
import scipy.io
import scipy.linalg
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(HERE, ".."))
import cmodes  # noqa: E402

CLI = os.environ.get("CMODES_CLI", os.path.join(ROOT, "build", "cmodes"))
DATA = os.path.join(ROOT, "data")


def dense_omegas(M, J, k):
    """Descending sqrt(eig(S)) with S formed densely."""
    M = M.toarray() if sp.issparse(M) else np.asarray(M, dtype=float)
    J = J.toarray() if sp.issparse(J) else np.asarray(J, dtype=float)
    B = np.sqrt(k)[:, None] * J
    S = B @ np.linalg.solve(M, B.T)
    lam = scipy.linalg.eigh((S + S.T) / 2, eigvals_only=True)[::-1]
    return np.sqrt(np.clip(lam, 0, None)), S


def random_system(seed, n=12, nc=9):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((n, n))
    M = A @ A.T + n * np.eye(n)
    J = rng.standard_normal((nc, n))
    k = rng.uniform(1e4, 1e6, nc)
    return M, J, k


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True)


# ---- answers -------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_dense_matches_eigh(seed):
    M, J, k = random_system(seed)
    ref, _ = dense_omegas(M, J, k)
    r = cmodes.analyze(M, J, k, modes=6)
    got = np.array([m.omega for m in r.modes])
    assert r.omega_max == pytest.approx(ref[0], rel=1e-12)
    np.testing.assert_allclose(got, ref[:6], rtol=1e-10)


def test_sparse_inputs_and_lanczos():
    M, J, k = random_system(3, n=60, nc=40)
    ref, _ = dense_omegas(M, J, k)
    r = cmodes.analyze(sp.csc_matrix(np.tril(M)), sp.csr_matrix(J), k,
                       method="lanczos", modes=4)
    np.testing.assert_allclose([m.omega for m in r.modes], ref[:4],
                               rtol=1e-9)


def test_generated_scene_matches_eigh():
    scene = cmodes.generate_pile(dim=2, count=40, seed=3)
    system = cmodes.System.from_scene(scene)
    M, J, k = system.matrices()
    ref, _ = dense_omegas(M, J, k)
    r = cmodes.analyze(scene, modes=5)
    np.testing.assert_allclose([m.omega for m in r.modes], ref[:5],
                               rtol=1e-9)
    assert r.counts["contacts"] == scene.ncontacts


def test_vectors_are_eigenvectors():
    scene = cmodes.generate_stack(count=3, towers=2)
    system = cmodes.System.from_scene(scene)
    M, J, k = system.matrices()
    ref, S = dense_omegas(M, J, k)
    r = cmodes.analyze(system, modes=4, vectors=True)
    v = r.vectors
    assert v.z.shape == (J.shape[0], 4) and v.phi.shape == (J.shape[1], 4)
    K = sp.diags(k)
    for p, m in enumerate(r.modes):
        z, phi, lam = v.z[:, p], v.phi[:, p], m.omega ** 2
        # rows of the vectors are scene rows; without tangent rows the
        # system order is the component order: compare through row_contact
        zs = np.zeros_like(z)
        zs[np.argsort(np.argsort(system_rows(system)))] = z
        assert np.linalg.norm(S @ zs - lam * zs) <= 1e-8 * lam
        assert phi @ (M @ phi) == pytest.approx(1.0, rel=1e-10)
        res = J.T @ (K @ (J @ phi)) - lam * (M @ phi)
        assert np.linalg.norm(res) <= 1e-8 * lam * np.linalg.norm(M @ phi)


def system_rows(system):
    """Scene row of every system row (no tangent rows: the contact)."""
    s = system._ptr
    return np.frombuffer(cmodes.ffi.buffer(s.row_contact, 4 * s.nc),
                         dtype=np.int32)


def test_vectors_for_matrices_in_M_order():
    M, J, k = random_system(5, n=8, nc=6)
    r = cmodes.analyze(M, J, k, modes=3, vectors=True)
    for p, m in enumerate(r.modes):
        phi = r.vectors.phi[:, p]
        res = J.T @ (k * (J @ phi)) - m.omega ** 2 * (M @ phi)
        assert np.linalg.norm(res) <= 1e-8 * m.omega ** 2 * \
            np.linalg.norm(M @ phi)
        np.testing.assert_allclose(J @ phi, r.vectors.xi[:, p], atol=1e-9 *
                                   np.abs(r.vectors.xi[:, p]).max())


def test_report_to_dict_is_the_cli_json():
    r = cmodes.analyze(os.path.join(DATA, "bar2d.json"))
    out = cli("analyze", os.path.join(DATA, "bar2d.json"), "--json")
    d = json.loads(out.stdout)
    mine = r.to_dict()
    for key in ("timings",):
        d.pop(key, None), mine.pop(key, None)
    assert mine == d
    assert r.omega_max == pytest.approx(632.455532033676, rel=1e-14)
    assert r.timestep["central_difference"]["h"] == pytest.approx(
        2 / r.omega_max, rel=1e-14)
    assert r.modes[0].lambda_ == pytest.approx(4e5)


def test_dense_array_mmwrite_through_the_cli(tmp_path):
    M, J, k = random_system(7, n=6, nc=4)
    scipy.io.mmwrite(str(tmp_path / "M.mtx"), M)  # 'array' format
    scipy.io.mmwrite(str(tmp_path / "J.mtx"), J)
    scipy.io.mmwrite(str(tmp_path / "k.mtx"), k.reshape(-1, 1))
    with open(tmp_path / "M.mtx") as f:
        assert "array" in f.readline()
    (tmp_path / "manifest.json").write_text(
        json.dumps({"M": "M.mtx", "J": "J.mtx", "k": "k.mtx"}))
    out = cli("analyze", "--json", "--matrices", str(tmp_path /
                                                     "manifest.json"))
    assert out.returncode == 0, out.stderr
    ref, _ = dense_omegas(M, J, k)
    assert json.loads(out.stdout)["omega_max"] == pytest.approx(ref[0],
                                                                rel=1e-12)


def test_gil_released_during_solve():
    scene = cmodes.generate_pile(dim=3, count=400, seed=1)
    ticks = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            ticks.append(1)
            done.wait(0.001)
    t = threading.Thread(target=tick)
    t.start()
    try:
        cmodes.analyze(scene, method="lanczos")
    finally:
        done.set()
        t.join()
    assert len(ticks) > 1


# ---- options: the library's table ------------------------------------------

def test_options_come_from_the_table():
    out = cli("options", "--json")
    table = json.loads(out.stdout)["options"]
    assert cmodes.options() == table
    d = cmodes.defaults()
    assert d["modes"] == 6 and d["tol"] == 1e-10 and d["method"] == "auto"


def test_bad_option_same_check_as_cli():
    with pytest.raises(cmodes.UsageError) as e:
        cmodes.analyze(os.path.join(DATA, "bar2d.json"), tol=2)
    out = cli("analyze", os.path.join(DATA, "bar2d.json"), "--tol", "2")
    assert out.returncode != 0
    assert e.value.name == "usage" and e.value.path == "tol"
    # the same check, named by the keyword instead of --tol
    assert e.value.message.split(": ", 1)[1] in out.stderr
    with pytest.raises(cmodes.UsageError, match="unknown option"):
        cmodes.analyze(os.path.join(DATA, "bar2d.json"), bogus=1)
    with pytest.raises(cmodes.UsageError, match="integer"):
        cmodes.analyze(os.path.join(DATA, "bar2d.json"), modes=2.5)
    r = cmodes.analyze(os.path.join(DATA, "bar2d.json"), method="dense",
                       modes=1, max_iter=10)
    assert len(r.modes) == 1


# ---- errors ------------------------------------------------------------------

def test_wrong_shapes():
    M, J, k = random_system(0, n=5, nc=3)
    with pytest.raises(cmodes.InvalidSceneError, match="square") as e:
        cmodes.analyze(M[:, :4], J, k)
    assert e.value.path == "M"
    with pytest.raises(cmodes.InvalidSceneError, match="one column"):
        cmodes.analyze(M, J[:, :4], k)
    with pytest.raises(cmodes.InvalidSceneError, match="one stiffness"):
        cmodes.analyze(M, J, k[:2])
    with pytest.raises(cmodes.InvalidSceneError):
        cmodes.analyze(M[0], J, k)


def test_threads_checked_as_the_cli():
    """threads= takes what --threads takes: 0 to 4 x the processors; a
    negative, fractional or larger value is a UsageError (it was taken,
    or an OverflowError), as `cmodes analyze --threads` refuses it."""
    s = cmodes.generate_bar()
    most = 4 * len(os.sched_getaffinity(0))
    assert cmodes.analyze(s, threads=most).omega_max > 0
    for bad in (-1, 1.5, most + 1, 10 ** 12, True):
        with pytest.raises(cmodes.UsageError, match="threads") as e:
            cmodes.analyze(s, threads=bad)
        assert e.value.path == "threads"
    p = cli("analyze", "--threads", str(most + 1), os.path.join(
        HERE, "..", "..", "data", "bar2d.json"))
    assert p.returncode == 2 and "at most %d" % most in p.stderr
    with pytest.raises(cmodes.UsageError, match="at most %d" % most):
        cmodes.analyze(s, threads=most + 1)


def test_complex_and_text_refused():
    """Complex M, J or k (numpy would drop the imaginary part with only a
    warning, a silently different system) and text are refused."""
    import scipy.sparse as sp
    M, J, k = random_system(0, n=5, nc=3)
    for args, what in (((M * (1 + 1e-3j), J, k), "M"),
                       ((M, sp.csr_matrix(J * (1 + 0j)), k), "J"),
                       ((M, J, k * (1 + 0j)), "k")):
        with pytest.raises(cmodes.InvalidSceneError, match="complex") as e:
            cmodes.analyze(*args)
        assert e.value.path == what
    with pytest.raises(cmodes.InvalidSceneError, match="not numbers"):
        cmodes.analyze(M, J, ["1", "x", "2"])


def test_one_row_j_as_a_vector():
    """J given as a 1-D array is one contact row (a mass m = 2 on a spring
    k = 8: omega^2 = k / m = 4)."""
    r = cmodes.analyze(np.array([[2.0]]), np.array([1.0]), [8.0])
    assert r.omega_max == pytest.approx(2.0, rel=1e-14)


def test_read_a_folder(tmp_path):
    """A folder where a scene file is expected: an IoError naming it (it
    was taken for an endless stream past the input limit)."""
    with pytest.raises(cmodes.IoError, match="cannot open: Is a directory") \
            as e:
        cmodes.Scene.read(str(tmp_path))
    assert e.value.path == str(tmp_path)


def test_not_spd_and_nan():
    M, J, k = random_system(0, n=5, nc=3)
    bad = M.copy()
    bad[2, 2] = -1.0
    with pytest.raises(cmodes.NotSpdError, match="not positive definite"):
        cmodes.analyze(bad, J, k)
    nan = M.copy()
    nan[1, 1] = np.nan
    with pytest.raises(cmodes.InvalidSceneError, match="not finite"):
        cmodes.analyze(nan, J, k)
    with pytest.raises(cmodes.InvalidSceneError, match="k\\[1\\]"):
        cmodes.analyze(M, J, [1.0, np.nan, 1.0])
    asym = M.copy()
    asym[0, 1] += 1
    with pytest.raises(cmodes.InvalidSceneError, match="not symmetric"):
        cmodes.analyze(asym, J, k)


def write_coo(path, A, symmetric=False):
    A = np.asarray(A)
    rows = [(i, j, A[i, j]) for j in range(A.shape[1])
            for i in range(A.shape[0]) if (not symmetric or i >= j)]
    with open(path, "w") as f:
        f.write("%%%%MatrixMarket matrix coordinate real %s\n" %
                ("symmetric" if symmetric else "general"))
        f.write("%d %d %d\n" % (A.shape[0], A.shape[1], len(rows)))
        for i, j, v in rows:
            f.write("%d %d %.17g\n" % (i + 1, j + 1, v))


@pytest.mark.parametrize("case", ["not_spd", "nan", "non_square"])
def test_file_errors_same_message_as_cli(tmp_path, case):
    M, J, k = random_system(0, n=4, nc=3)
    if case == "not_spd":
        M[1, 1] = -5
    if case == "nan":
        M[2, 2] = np.nan
    if case == "non_square":
        M = M[:, :3]
    write_coo(tmp_path / "M.mtx", M, symmetric=case != "non_square")
    write_coo(tmp_path / "J.mtx", J)
    write_coo(tmp_path / "k.mtx", k.reshape(-1, 1))
    man = tmp_path / "manifest.json"
    man.write_text(json.dumps({"M": "M.mtx", "J": "J.mtx", "k": "k.mtx"}))
    with pytest.raises(cmodes.Error) as e:
        cmodes.analyze(cmodes.read_matrices(str(man)))
    out = cli("analyze", "--matrices", str(man))
    assert out.returncode != 0
    assert out.stderr.strip().endswith(e.value.message), (out.stderr,
                                                          e.value.message)


def test_scene_error_path_and_cli_message(tmp_path):
    scene = json.loads(open(os.path.join(DATA, "bar2d.json")).read())
    scene["contacts"][1]["normal"] = [0, 0]
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(scene))
    with pytest.raises(cmodes.InvalidSceneError) as e:
        cmodes.Scene.read(str(p))
    assert e.value.path == "contacts[1].normal"
    out = cli("analyze", str(p))
    assert out.stderr.strip().endswith(e.value.message)


def test_scene_from_arrays():
    # the bar: one body on two contacts at x = +-0.1 on the ground
    s = cmodes.Scene(dim=2,
                     bodies={"mass": [1.0, 2.0], "inertia": [1.0, 0.005],
                             "position": [[0, -1], [0, 0]],
                             "fixed": [True, False],
                             "name": ["ground", "bar"]},
                     contacts={"a": [1, 1], "b": [0, 0],
                               "point": [[-0.1, 0], [0.1, 0]],
                               "normal": [[0, 1], [0, 1]],
                               "stiffness": 1e5, "name": ["left", "right"]})
    r = cmodes.analyze(s)
    assert r.omega_max == pytest.approx(632.455532033676, rel=1e-12)
    assert s.contacts["name"] == ["left", "right"]
    assert cmodes.Scene.from_json(s.to_json()).nbodies == 2
    with pytest.raises(cmodes.InvalidSceneError) as e:
        cmodes.Scene(dim=2, bodies={"mass": [2.0], "inertia": [0.005]},
                     contacts={"a": [0, 0], "b": [-1, -1],
                               "point": [[0, 0], [1, 0]],
                               "normal": [[0, 1], [0, np.nan]],
                               "stiffness": [1e5, 1e5]})
    assert e.value.path.startswith("contacts[1]")


def test_tangential_and_dashpots_from_arrays():
    s = cmodes.Scene(dim=3, bodies={"mass": [1.0], "inertia": [0.1, 0.1,
                                                               0.1]},
                     contacts={"a": [0], "b": [-1], "point": [[0, 0, -0.1]],
                               "normal": [[0, 0, 1]], "stiffness": 1e5,
                               "stiffness_t": 5e4, "damping_n": 10.0,
                               "damping_t": 0.0})
    r = cmodes.analyze(s)
    assert r.model["tangential"] and r.model["dashpots"]
    assert s.contacts["stiffness_t"][0] == 5e4


def test_import_dump():
    dump = os.path.join(DATA, "lammps", "pile.dump")
    deck = os.path.join(DATA, "lammps", "in.pile")
    s = cmodes.import_lammps(deck, dump)
    assert s.ncontacts > 0
    r = cmodes.analyze(s)
    scene_json = cli("import", "lammps", "--deck", deck, "--dump", dump)
    assert scene_json.returncode == 0, scene_json.stderr
    out = subprocess.run([CLI, "analyze", "--json", "-"], text=True,
                         input=scene_json.stdout, capture_output=True)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["omega_max"] == r.omega_max
    s2 = cmodes.import_dump(dump, k=1e5, density=2500, walls=["z>0"])
    assert s2.nbodies > 0


def test_import_dump_triclinic():
    """A tilted periodic box (boundary p f p, xy = 0.4) from Python: every
    atom's contact count equals LAMMPS' compute contact/atom (the dump's
    c_c column, data/lammps/triclinic/README.md)."""
    dump = os.path.join(DATA, "lammps", "triclinic", "pfp.dump")
    with open(dump) as f:
        lines = f.read().split("\n")
    head = [i for i, l in enumerate(lines) if l.startswith("ITEM: ATOMS")][0]
    rows = [l.split() for l in lines[head + 1:] if l.strip()]
    cc = np.array([int(float(r[-1])) for r in rows])
    s = cmodes.import_dump(dump, k=1e5)
    c = s.contacts
    count = np.bincount(np.concatenate([c["a"], c["b"]]),
                           minlength=len(rows))
    assert s.ncontacts == 529 == cc.sum() // 2
    assert (count == cc).all()


def test_cdef_is_current():
    gen = os.path.join(HERE, "..", "gen_cdef.py")
    subprocess.run([sys.executable, gen, "--check"], check=True)


def test_binary_scene_and_generators(tmp_path):
    src = os.path.join(DATA, "pile2d.json")
    binp = str(tmp_path / "pile.cmsb")
    assert cli("convert", src, binp).returncode == 0
    a, b = cmodes.Scene.read(src), cmodes.Scene.read(binp)
    assert (a.nbodies, a.ncontacts) == (b.nbodies, b.ncontacts)
    assert cmodes.analyze(a).omega_max == cmodes.analyze(b).omega_max
    for gen, kw in ((cmodes.generate_crystal, {"lattice": "hex", "nx": 3,
                                               "ny": 3}),
                    (cmodes.generate_bar, {"dim": 3}),
                    (cmodes.generate_fleet, {"count": 2})):
        s = gen(**kw)
        assert s.ncontacts > 0
        out = json.loads(s.to_json())
        assert len(out["contacts"]) == s.ncontacts
    with pytest.raises(cmodes.UsageError, match="unknown option"):
        cmodes.generate_pile(bogus=1)


# ---- names of rows and dofs ----------------------------------------------

def top_row(M, J, k):
    """Index of the row of J with the largest energy share z_r^2 in the top
    mode of S (dense eigh here), and that share."""
    _, S = dense_omegas(M, J, k)
    z = scipy.linalg.eigh((S + S.T) / 2)[1][:, -1]
    e = z ** 2
    return int(np.argmax(e)), float(e.max()), e


def write_named_system(tmp_path, M, J, k, rows, cols):
    scipy.io.mmwrite(str(tmp_path / "M.mtx"), sp.coo_matrix(M),
                     symmetry="symmetric")
    scipy.io.mmwrite(str(tmp_path / "J.mtx"), sp.coo_matrix(J))
    scipy.io.mmwrite(str(tmp_path / "k.mtx"), k.reshape(-1, 1))
    man = tmp_path / "manifest.json"
    man.write_text(json.dumps({"M": "M.mtx", "J": "J.mtx", "k": "k.mtx",
                               "row_names": rows, "col_names": cols}))
    return str(man)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_report_names_the_row_with_the_largest_share(tmp_path, seed):
    M, J, k = random_system(seed, n=10, nc=8)
    legs = ["FL", "FR", "HL", "HR"]
    rows = ["hip_%s_%s" % (legs[i // 2], "xz"[i % 2]) for i in range(8)]
    cols = ["q%d" % j for j in range(10)]
    i, share, e = top_row(M, J, k)
    assert share > np.sort(e)[-2] * (1 + 1e-6)  # a unique top row
    # Python: names with the matrices
    r = cmodes.analyze(M, J, k, row_names=rows, col_names=cols, vectors=True)
    c = r.modes[0].contacts[0]
    assert (c["index"], c["name"]) == (i, rows[i])
    assert c["share"] == pytest.approx(share, rel=1e-9)
    assert r.vectors.row_names == rows and r.vectors.col_names == cols
    # the manifest's row_names, through the command line's text report
    man = write_named_system(tmp_path, M, J, k, rows, cols)
    p = cli("analyze", "--matrices", man)
    assert p.returncode == 0, p.stderr
    line = [ln for ln in p.stdout.splitlines()
            if ln.lstrip().startswith("1 ")][0]
    assert line.split("comp 0:")[1].split()[0] == rows[i]
    assert "(?-?)" not in p.stdout
    # and its JSON, and the manifest through the package
    rep = json.loads(cli("analyze", "--json", "--matrices", man).stdout)
    assert rep["modes"][0]["contacts"][0]["name"] == rows[i]
    system = cmodes.read_matrices(man)
    assert system.row_names == rows and system.col_names == cols
    assert cmodes.analyze(system).modes[0].contacts[0]["name"] == rows[i]


def test_bad_names_same_message_as_cli(tmp_path):
    M, J, k = random_system(0, n=4, nc=3)
    man = write_named_system(tmp_path, M, J, k, ["a", "b"], None)
    p = cli("analyze", "--matrices", man)
    assert p.returncode == 3
    assert '"row_names" has 2 names but J has 3 rows' in p.stderr
    with pytest.raises(cmodes.ParseError) as e:
        cmodes.read_matrices(man)
    assert p.stderr.strip().endswith(": " + e.value.message)
    assert e.value.path == "row_names"
    man = write_named_system(tmp_path, M, J, k, ["a", 2, None], None)
    p = cli("analyze", "--matrices", man)
    assert "row_names[1] is not a string" in p.stderr
    with pytest.raises(cmodes.UsageError, match="col_names has 1 names"):
        cmodes.analyze(M, J, k, col_names=["x"])
    with pytest.raises(cmodes.UsageError, match="go with matrices"):
        cmodes.analyze(cmodes.generate_bar(), row_names=["a", "b"])


# ---- the LAMMPS example of docs/python.md ----------------------------------

def test_lammps_example(capsys, monkeypatch):
    """python/examples/lammps_critical_step.py, first 2000 steps: a line
    per snapshot whose dt/h is the deck's 1e-4 s over the printed step, a
    step below the undamped 2/omega_max (the deck has dashpots)."""
    pytest.importorskip("lammps")
    # liblammps starts MPI as a singleton here: no Open MPI daemon forked
    # (LAMMPS never spawns), as the C tests' lmp runs (cmt_run_lmp)
    monkeypatch.setenv("OMPI_MCA_ess_singleton_isolated", "1")
    sys.path.insert(0, os.path.join(HERE, "..", "examples"))
    import lammps_critical_step as ex
    try:
        ex.main(2000, 2000)
    except OSError as e:  # python3-lammps without liblammps-dev
        pytest.skip("LAMMPS cannot load: %s" % e)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["step", "atoms", "contacts", "omega_max",
                                "h_crit", "dt/h"]
    step, atoms, contacts, omega, h, frac = lines[1].split()
    assert int(step) == 2000 and int(atoms) > 0 and int(contacts) > 0
    assert float(frac) == pytest.approx(1e-4 / float(h), abs=1e-4)
    assert 0 < float(h) < 2 / float(omega)


# ---- the HTML page (notebooks) ---------------------------------------------

def test_html_page_for_scene_and_matrices(tmp_path):
    """Report.html() is the page of `cmodes report`: its headline omega_max
    (data-v, %.17g) equals the report's and the command line's page; a
    matrix system's page names its rows; _repr_html_ wraps it."""
    import re
    scene = cmodes.generate_fleet(count=3)
    r = cmodes.analyze(scene, modes=3)
    page = r.html()
    got = re.search(r'id="s0-h-omega" data-v="([^"]+)"', page).group(1)
    assert float(got) == r.omega_max
    scene.write(str(tmp_path / "fleet.json"))
    p = cli("report", "--modes", "3", str(tmp_path / "fleet.json"), "-o",
            str(tmp_path / "fleet.html"))
    assert p.returncode == 0, p.stderr
    cli_page = (tmp_path / "fleet.html").read_text()
    assert re.search(r'id="s0-h-omega" data-v="([^"]+)"',
                     cli_page).group(1) == got
    assert "r0.hip" in page or "r0.axle" in page  # named contacts
    frame = r._repr_html_()
    assert frame.startswith("<iframe srcdoc=") and "&lt;!DOCTYPE html" in frame
    M, J, k = random_system(2, n=8, nc=5)
    ref, S = dense_omegas(M, J, k)
    names = ["joint_%c" % c for c in "abcde"]
    rm = cmodes.analyze(M, J, k, row_names=names, modes=2)
    pm = rm.html()
    assert float(re.search(r'id="s0-h-omega" data-v="([^"]+)"',
                           pm).group(1)) == pytest.approx(ref[0], rel=1e-12)
    top = names[top_row(M, J, k)[0]]
    assert top in pm


def test_cli_vectors_equal_the_package_and_eigh(tmp_path):
    """`cmodes analyze --vectors FILE`: the same shapes as
    analyze(vectors=True), eigenvectors of S (eigh here) and J^T K J phi =
    omega^2 M phi; names by row and dof."""
    M, J, k = random_system(4, n=7, nc=5)
    rows, cols = ["r%d" % i for i in range(5)], ["q%d" % i for i in range(7)]
    man = write_named_system(tmp_path, M, J, k, rows, cols)
    out = str(tmp_path / "v.json")
    p = cli("analyze", "--matrices", man, "--modes", "3", "--vectors", out)
    assert p.returncode == 0, p.stderr
    v = json.load(open(out))
    assert v["format"] == "cmodes-vectors" and v["nmodes"] == 3
    z, phi = np.array(v["z"]).T, np.array(v["phi"]).T
    ref, S = dense_omegas(M, J, k)
    np.testing.assert_allclose(v["omega"], ref[:3], rtol=1e-10)
    w, U = scipy.linalg.eigh((S + S.T) / 2)
    for p_ in range(3):
        assert abs(abs(z[:, p_] @ U[:, -1 - p_]) - 1) < 1e-9
    order = np.array(v["col_dof"])
    Mo, Jo = M[np.ix_(order, order)], J[:, order]
    K = np.diag(k)
    for p_ in range(3):
        lhs = Jo.T @ K @ Jo @ phi[:, p_]
        np.testing.assert_allclose(lhs, ref[p_] ** 2 * Mo @ phi[:, p_],
                                   rtol=1e-8, atol=1e-8 * np.abs(lhs).max())
    assert v["row_names"] == rows
    assert v["col_names"] == [cols[j] for j in order]
    r = cmodes.analyze(cmodes.read_matrices(man), modes=3, vectors=True)
    np.testing.assert_allclose(np.abs(r.vectors.z), np.abs(z), atol=1e-12)
    # a scene: one row per contact, names from the scene
    p = cli("analyze", os.path.join(DATA, "fleet.json"), "--modes", "1",
            "--vectors", out)
    v = json.load(open(out))
    assert p.returncode == 0 and len(v["row_names"]) == v["nrows"] == 260
    top = int(np.argmax(np.array(v["z"][0]) ** 2))
    assert v["row_names"][top].startswith("r") and ".hip" in \
        v["row_names"][top] and v["row_names"][top].endswith(".y")


# ---- Drake-style input: M and per-point translational Jacobians -------------

def rigid_point_jacobian(nb, b, com, p):
    """3 x 6nb Jacobian of the velocity of point p fixed to body b (dofs v,
    w in the world frame): v + w x (p - com) = [I, -[r]x] [v; w]."""
    J = np.zeros((3, 6 * nb))
    if b < 0:
        return J
    r = np.asarray(p) - np.asarray(com)
    J[:, 6 * b:6 * b + 3] = np.eye(3)
    J[:, 6 * b + 3:6 * b + 6] = -np.array([[0, -r[2], r[1]],
                                           [r[2], 0, -r[0]],
                                           [-r[1], r[0], 0]])
    return J


@pytest.mark.parametrize("tangential", [False, True])
def test_contact_rows_equal_the_scene_path(tangential):
    """A 3-D robot fleet as Drake would hand it over (M, and each contact's
    point Jacobians): contact_rows + analyze(M, J, k) gives the frequencies
    of the scene's own analysis."""
    scene = cmodes.generate_fleet(count=2, payload_fraction=1.0)
    b, c = scene.bodies, scene.contacts
    nb, nc = scene.nbodies, scene.ncontacts
    if tangential:  # give every contact a sticking spring
        c["stiffness_t"] = 0.5 * c["stiffness"]
        scene = cmodes.Scene(3, bodies=b, contacts=c)
    M = np.zeros((6 * nb, 6 * nb))
    for i in range(nb):
        M[6 * i:6 * i + 3, 6 * i:6 * i + 3] = b["mass"][i] * np.eye(3)
        M[6 * i + 3:6 * i + 6, 6 * i + 3:6 * i + 6] = b["inertia"][i]
    Jc = np.array([rigid_point_jacobian(nb, c["a"][q], b["position"][
        c["a"][q]], c["point"][q]) - rigid_point_jacobian(
        nb, c["b"][q], b["position"][c["b"][q]] if c["b"][q] >= 0 else 0,
        c["point"][q]) for q in range(nc)])
    J = cmodes.contact_rows(Jc, c["normal"], tangents=tangential)
    k = np.column_stack([c["stiffness"], c["stiffness_t"],
                         c["stiffness_t"]]).reshape(-1) if tangential \
        else c["stiffness"]
    r = cmodes.analyze(M, J, k, modes=4)
    ref = cmodes.analyze(scene, modes=4)
    np.testing.assert_allclose([m.omega for m in r.modes],
                               [m.omega for m in ref.modes], rtol=1e-9)
    with pytest.raises(cmodes.InvalidSceneError, match="unit normals"):
        cmodes.contact_rows(Jc, 2 * c["normal"])


def test_every_cli_option_is_a_keyword():
    """Every option of `cmodes analyze --help` is a keyword of analyze()
    under its underscored name (the table's, or threads/vectors), with the
    command line's default; the rest are the input and output forms."""
    import inspect
    text = cli("analyze", "--help").stdout
    names = set(re.findall(r"--([a-z][a-z-]+)", text)) - {"help"}
    table = {o["name"]: o for o in cmodes.options()}
    sig = inspect.signature(cmodes.analyze).parameters
    io_forms = {"json", "no-timings", "matrices"}  # to_dict(), the input
    for name in sorted(names - io_forms):
        key = name.replace("-", "_")
        assert key in table or key in sig, name
    for key, o in table.items():  # defaults: the command line's help
        m = re.search(r"--%s .*?\(default ([^)]+)\)" % key.replace("_", "-"),
                      text.replace("\n", " "))
        assert m, key
        assert cmodes.defaults()[key] is not None
    # and a keyword goes through the command line's check
    p = cli("analyze", os.path.join(DATA, "bar2d.json"), "--modes", "0")
    with pytest.raises(cmodes.UsageError) as e:
        cmodes.analyze(cmodes.generate_bar(), modes=0)
    assert p.stderr.splitlines()[0].endswith("--" + e.value.message)


def test_export_writes_the_scene_names(tmp_path):
    """`cmodes export SCENE --matrices DIR` names the manifest's rows by the
    scene's contacts (rows.txt maps them) and the columns by body and dof;
    the matrix path's report then names the same bushing axis with the
    same share as the scene's."""
    out = tmp_path / "fx"
    out.mkdir()
    p = cli("export", os.path.join(DATA, "fleet.json"), "--matrices",
            str(out))
    assert p.returncode == 0, p.stderr
    man = json.load(open(out / "manifest.json"))
    scene = cmodes.Scene.read(os.path.join(DATA, "fleet.json"))
    names = scene.contacts["name"]
    rows = [ln.split() for ln in open(out / "rows.txt")
            if not ln.startswith("#")]
    assert [names[int(r[1])] for r in rows] == man["row_names"]
    assert len(man["col_names"]) == man["n"]
    assert re.fullmatch(r"r\d+\.[a-z]+\d?\.(x|y|z|rx|ry|rz)",
                        man["col_names"][0])
    r = cmodes.analyze(cmodes.read_matrices(str(out / "manifest.json")))
    ref = cmodes.analyze(scene)
    c, c0 = r.modes[0].contacts[0], ref.modes[0].contacts[0]
    assert c["name"].endswith(".y") and ".hip" in c["name"]
    assert c["share"] == pytest.approx(c0["share"], rel=1e-9)
    assert r.omega_max == pytest.approx(ref.omega_max, rel=1e-9)


def test_kernel_sets_same_report():
    # issue 19 goal 5: CMODES_KERNELS picks a lower kernel set, read when
    # the package first runs a kernel; every set gives the report of the
    # CPU's own, bit for bit (a pile whose Lanczos solve restarts)
    assert cmodes.kernel_set() in ("avx512", "avx2", "baseline")
    code = ("import json, sys; sys.path.insert(0, %r); import cmodes; "
            "s = cmodes.generate_pile(dim=3, count=8000, seed=3); "
            "r = cmodes.analyze(s, modes=6, tol=1e-8, ncv=16).to_dict(); "
            "r.pop('timings'); print(cmodes.kernel_set()); "
            "print(json.dumps(r, sort_keys=True))"
            % os.path.join(HERE, ".."))
    out = {}
    for k in ("", "baseline", "avx2", "no-such-set"):
        env = dict(os.environ, CMODES_KERNELS=k)
        p = subprocess.run([sys.executable, "-c", code], env=env,
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        out[k] = p.stdout.split("\n", 1)
    assert out[""][0] == cmodes.kernel_set()
    assert out["baseline"][0] == "baseline"
    assert out["avx2"][0] in ("avx2", "baseline")  # never above the CPU's
    assert out["no-such-set"][0] == out[""][0]  # the library: as unset
    assert len({v[1] for v in out.values()}) == 1


def test_workspace_kept_between_analyses_same_report():
    # issue 19 goal 4: the package keeps 1 GiB of freed buffers from import
    # on; a loop's later analyses take them (holding another scene's
    # values) and must give the report of fresh buffers, bit for bit
    a = cmodes.generate_pile(dim=3, count=8000, seed=3)
    b = cmodes.generate_pile(dim=3, count=9000, seed=5)
    assert cmodes.keep_workspace(0) == cmodes.KEEP_WORKSPACE
    assert cmodes.workspace_kept() == 0
    fresh = cmodes.analyze(a, modes=2, tol=1e-8).to_dict()
    try:
        cmodes.keep_workspace(cmodes.KEEP_WORKSPACE)
        cmodes.analyze(b, modes=2, tol=1e-8)
        assert cmodes.workspace_kept() > 1 << 20
        again = cmodes.analyze(a, modes=2, tol=1e-8).to_dict()
    finally:
        cmodes.keep_workspace(cmodes.KEEP_WORKSPACE)
    fresh.pop("timings"), again.pop("timings")
    assert again == fresh
    with pytest.raises(ValueError):
        cmodes.keep_workspace(-1)
