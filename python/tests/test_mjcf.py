"""`cmodes import mjcf` (MuJoCo, libmujoco-dev) on the Debian sample models
(libmujoco-samples): the exported system (M from mj_fullM, J rows from
mj_jac along the contact normals, k from solref/solimp) analysed by
`cmodes analyze --matrices` against scipy.linalg.eigh of S formed here,
and against the same system through the Python package. Skipped when
cmodes was built without MuJoCo or the models are missing."""
import json
import os
import subprocess

import numpy as np
import pytest
import scipy.io
import scipy.linalg

from test_cmodes import CLI, cmodes, dense_omegas

MODELS = "/usr/share/mujoco/model"
HUMANOID = os.path.join(MODELS, "humanoid", "humanoid.xml")
HUMANOID100 = os.path.join(MODELS, "humanoid100", "humanoid100.xml")


def run_import(model, out, *args):
    p = subprocess.run([CLI, "import", "mjcf", model, "-o", str(out), "-q",
                        *args], capture_output=True, text=True)
    if "without MuJoCo" in p.stderr:
        pytest.skip("cmodes built without MuJoCo")
    assert p.returncode == 0, p.stderr
    return os.path.join(str(out), "manifest.json")


def read_system(manifest):
    d = os.path.dirname(manifest)
    M = scipy.io.mmread(os.path.join(d, "M.mtx")).toarray()
    J = scipy.io.mmread(os.path.join(d, "J.mtx")).toarray()
    k = np.asarray(scipy.io.mmread(os.path.join(d, "k.mtx"))).reshape(-1)
    return M, J, k


@pytest.mark.skipif(not os.path.exists(HUMANOID), reason="no MuJoCo samples")
def test_humanoid_matches_dense_solve(tmp_path):
    man = run_import(HUMANOID, tmp_path, "--settle", "1")
    M, J, k = read_system(man)
    assert M.shape == (27, 27) and J.shape[0] > 0
    ref, _ = dense_omegas(M, J, k)
    out = subprocess.run([CLI, "analyze", "--json", "--matrices", man],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    got = np.array([m["omega"] for m in rep["modes"]])
    np.testing.assert_allclose(got, ref[:len(got)], rtol=1e-10)
    # the per-contact mapping: sqrt(k_c A_cc) is MuJoCo's sqrt(k_mj)
    A = J @ np.linalg.solve(M, J.T)
    assert np.all(np.sqrt(k * np.diag(A)) > 0)
    # the same system through the Python package
    r = cmodes.analyze(cmodes.read_matrices(man))
    assert r.omega_max == pytest.approx(ref[0], rel=1e-10)
    r2 = cmodes.analyze(M, J, k)
    assert r2.omega_max == pytest.approx(ref[0], rel=1e-10)
    names = json.load(open(man))
    assert len(names["row_names"]) == J.shape[0]
    assert names["col_names"][0] == "root.x"
    assert all("-" in n for n in names["row_names"])
    # the report names the row that carries most of the top mode's energy
    # (z_r^2 of S's top eigenvector from the dense solve here)
    _, S = dense_omegas(M, J, k)
    z = scipy.linalg.eigh((S + S.T) / 2)[1][:, -1]
    top = rep["modes"][0]["contacts"][0]
    assert top["share"] == pytest.approx(np.max(z ** 2), rel=1e-8)
    assert top["name"] == names["row_names"][top["index"]]
    assert abs(z[top["index"]]) == pytest.approx(np.abs(z).max(), rel=1e-8)


@pytest.mark.skipif(not os.path.exists(HUMANOID100),
                    reason="no MuJoCo samples")
def test_humanoid100_analyses(tmp_path):
    man = run_import(HUMANOID100, tmp_path, "--settle", "0.5")
    M, J, k = read_system(man)
    ref, _ = dense_omegas(M, J, k)
    r = cmodes.analyze(cmodes.read_matrices(man), modes=3)
    np.testing.assert_allclose([m.omega for m in r.modes], ref[:3],
                               rtol=1e-9)
    # the contact that carries most of the top mode, by its MuJoCo names
    names = json.load(open(man))["row_names"]
    top = r.modes[0].contacts[0]
    assert "-" in top["name"] and top["name"] == names[top["index"]]
    # the row with the largest energy share in the dense solve's top mode
    _, S = dense_omegas(M, J, k)
    z = scipy.linalg.eigh((S + S.T) / 2)[1][:, -1]
    assert top["share"] == pytest.approx(np.max(z ** 2), rel=1e-8)
    assert z[top["index"]] ** 2 == pytest.approx(np.max(z ** 2), rel=1e-8)
    # and the command line's text report prints that name first
    out = subprocess.run([CLI, "analyze", "--matrices", man],
                         capture_output=True, text=True).stdout
    line = [ln for ln in out.splitlines() if ln.lstrip().startswith("1 ")][0]
    assert line.split("comp 0:")[1].split()[0] == top["name"]


def test_mjcf_usage_errors(tmp_path):
    p = subprocess.run([CLI, "import", "mjcf"], capture_output=True,
                       text=True)
    assert p.returncode == 2
    p = subprocess.run([CLI, "import", "mjcf", str(tmp_path / "no.xml"),
                        "-o", str(tmp_path / "o")], capture_output=True,
                       text=True)
    if "without MuJoCo" in p.stderr:
        pytest.skip("cmodes built without MuJoCo")
    assert p.returncode != 0 and "no.xml" in p.stderr
