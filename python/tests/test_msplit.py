"""Matrix systems split into components (cmodes.analyze(M, J, k)): a
block-diagonal system of identical and different blocks, dofs and rows
randomly permuted, against scipy.linalg.eigh of each block's S formed
here; and MuJoCo's 22_humanoids (libmujoco-samples) imported with
`cmodes import mjcf`, each humanoid a component, against a dense solve of
each humanoid's part of the exported M, J and k."""
import os
import subprocess

import numpy as np
import pytest
import scipy.io
import scipy.linalg

from test_cmodes import CLI, cmodes, dense_omegas

H22 = "/usr/share/mujoco/model/humanoid/22_humanoids.xml"


def block(rng, n, m, kscale):
    G = rng.standard_normal((n, n))
    M = G @ G.T + n * np.eye(n)
    J = rng.standard_normal((m, n)) * (rng.random((m, n)) < 0.6)
    J[np.arange(m), np.arange(m) % n] += 1.0  # no empty row
    k = kscale * (1 + rng.random(m))
    return M, J, k


def top_omega(M, J, k):
    B = np.sqrt(k)[:, None] * J
    S = B @ np.linalg.solve(M, B.T)
    return np.sqrt(scipy.linalg.eigh((S + S.T) / 2, eigvals_only=True)[-1])


def test_block_system_components_and_ties():
    rng = np.random.default_rng(14)
    types = {"A": block(rng, 8, 5, 2e5), "B": block(rng, 9, 4, 1e4),
             "C": block(rng, 7, 6, 1e4)}
    layout = ["A", "B", "A", "C", "B", "A"]  # and 3 dofs no row touches
    n = sum(types[t][0].shape[0] for t in layout) + 3
    nc = sum(types[t][1].shape[0] for t in layout)
    M = np.zeros((n, n))
    J = np.zeros((nc, n))
    k = np.zeros(nc)
    pd, pr = rng.permutation(n), rng.permutation(nc)
    rows, cols = [None] * nc, [None] * n
    o = r = 0
    truth = []
    for b, t in enumerate(layout):
        Mb, Jb, kb = types[t]
        d = pd[o:o + Mb.shape[0]]
        q = pr[r:r + Jb.shape[0]]
        M[np.ix_(d, d)] = Mb
        J[np.ix_(q, d)] = Jb
        k[q] = kb
        for i, j in enumerate(d):
            cols[j] = "%s%d.q%d" % (t, b, i)
        for i, j in enumerate(q):
            rows[j] = "%s%d.c%d" % (t, b, i)
        truth.append(top_omega(Mb, Jb, kb))
        o += Mb.shape[0]
        r += Jb.shape[0]
    d = pd[o:]
    M[np.ix_(d, d)] = [[2, .5, 0], [.5, 2, .5], [0, .5, 2]]
    for i, j in enumerate(d):
        cols[j] = "U.q%d" % i
    rep = cmodes.analyze(M, J, k, row_names=rows, col_names=cols,
                         top_components=10, vectors=True)
    # the unsplit dense solve
    ref, _ = dense_omegas(M, J, k)
    assert rep.omega_max == pytest.approx(ref[0], rel=1e-12)
    comps = rep.components
    assert comps["count"] == 6
    got = sorted(c["omega_max"] for c in comps["top"])
    np.testing.assert_allclose(got, sorted(truth), rtol=1e-12)
    sizes = sorted((c["contacts"], c["dofs"]) for c in comps["top"])
    assert sizes == sorted((types[t][1].shape[0], types[t][0].shape[0])
                           for t in layout)
    # the three copies of A tie at the top, named by their dofs' names
    assert comps["tied"] == 3
    assert sorted(t["name"] for t in comps["tied_components"]) == \
        ["A0", "A2", "A5"]
    assert rep.counts["free_motions_removed"] == 3
    assert rep.counts["active_dofs"] == n - 3
    # the top mode's contacts are rows of an A block, by row_names
    top = rep.modes[0].contacts
    assert top and all(c["name"] == rows[c["index"]] for c in top)
    assert all(c["name"].startswith("A") for c in top)
    # mode shapes over all of M's dofs (0 on the untouched ones):
    # J^T K J phi = omega^2 M phi
    phi = rep.vectors.phi[:, 0]
    assert phi.shape == (n,) and np.all(phi[d] == 0)
    w2 = rep.modes[0].omega ** 2
    lhs = J.T @ (k * (J @ phi))
    np.testing.assert_allclose(lhs, w2 * (M @ phi), atol=1e-9 * np.abs(lhs).max())


@pytest.mark.skipif(not os.path.exists(H22), reason="libmujoco-samples "
                    "absent: no /usr/share/mujoco/model/humanoid/22_humanoids.xml")
def test_22_humanoids_tied(tmp_path):
    p = subprocess.run([CLI, "import", "mjcf", H22, "--settle", "1", "-q",
                        "-o", str(tmp_path)], capture_output=True, text=True)
    if "without MuJoCo" in p.stderr:
        pytest.skip("cmodes built without MuJoCo")
    assert p.returncode == 0, p.stderr
    man = os.path.join(str(tmp_path), "manifest.json")
    M = scipy.io.mmread(os.path.join(str(tmp_path), "M.mtx")).toarray()
    J = scipy.io.mmread(os.path.join(str(tmp_path), "J.mtx")).toarray()
    k = np.asarray(scipy.io.mmread(os.path.join(str(tmp_path), "k.mtx")))
    k = k.reshape(-1)
    system = cmodes.read_matrices(man)
    cols = system.col_names
    # each humanoid's dofs by the head of the joint names ("1a_root.x")
    robot = np.array([c.split("_")[0] for c in cols])
    names = sorted(set(robot), key=lambda s: (s[-1], int(s[:-1])))
    assert len(names) == 22
    per = {}
    for h in names:
        d = np.flatnonzero(robot == h)
        q = np.flatnonzero(np.abs(J[:, d]).sum(axis=1) > 0)
        assert np.all(J[np.ix_(q, np.setdiff1d(np.arange(len(cols)), d))] == 0)
        per[h] = top_omega(M[np.ix_(d, d)], J[np.ix_(q, d)], k[q]) \
            if len(q) else 0.0
    ref, _ = dense_omegas(M, J, k)
    r = cmodes.analyze(system, top_components=22)
    assert r.omega_max == pytest.approx(ref[0], rel=1e-10)
    assert r.omega_max == pytest.approx(max(per.values()), rel=1e-10)
    comps = r.components
    touched = [h for h in names if per[h] > 0]
    assert comps["count"] == len(touched)
    np.testing.assert_allclose(sorted(c["omega_max"] for c in comps["top"]),
                               sorted(per[h] for h in touched), rtol=1e-10)
    # what the model really has: the humanoids whose top frequency equals
    # the largest (to the solver's tolerance) are listed as tied, by name
    top = max(per.values()) ** 2
    tied = sorted(h for h in touched if top - per[h] ** 2 <= 1e-10 * top)
    assert comps["tied"] == len(tied)
    listed = [t["name"] for t in comps["tied_components"]]
    assert len(listed) == len(set(listed)) and set(listed) <= set(tied)
    assert len(tied) == 22  # all 22 stand alike after 1 s


def dense_dof_shares(M, J, k):
    """phi_j (M phi)_j of the top generalized eigenvector (phi^T M phi = 1)
    of J^T K J phi = lambda M phi."""
    w, V = scipy.linalg.eigh(J.T @ (k[:, None] * J), M)
    phi = V[:, -1]
    return phi * (M @ phi)


@pytest.mark.parametrize("diagonal", [False, True])
def test_mode_dofs_named(diagonal):
    """The report's dofs of a matrix system's top mode: every dof of the
    component (top_bodies large), named by col_names, with the dense
    participations; a general M (CHOLMOD per component) and a diagonal M
    (the block path's L = M^1/2)."""
    rng = np.random.default_rng(3 + diagonal)
    blocks = [block(rng, 6, 4, s) for s in (1e4, 3e4, 1e4)]
    if diagonal:
        blocks = [(np.diag(np.diag(Mb)), Jb, kb) for Mb, Jb, kb in blocks]
    M = scipy.linalg.block_diag(*[b[0] for b in blocks])
    J = scipy.linalg.block_diag(*[b[1] for b in blocks])
    k = np.concatenate([b[2] for b in blocks])
    pd = rng.permutation(M.shape[0])
    M, J = M[np.ix_(pd, pd)], J[:, pd]
    cols = ["b%d.q%d" % (j // 6, j % 6) for j in pd]
    rep = cmodes.analyze(M, J, k, col_names=cols, top_bodies=100)
    top = rep.modes[0]
    d = rep.to_dict()["modes"][0]["dofs"]
    assert top.dofs == d
    # the component of the top mode: the block with the largest omega
    omegas = [top_omega(*b) for b in blocks]
    b = int(np.argmax(omegas))
    assert top.omega == pytest.approx(omegas[b], rel=1e-12)
    ref = dense_dof_shares(*blocks[b])
    assert len(d) == 6
    assert [x["name"] for x in d] == [cols[x["index"]] for x in d]
    assert all(cols[x["index"]].startswith("b%d." % b) for x in d)
    got = {int(cols[x["index"]].split("q")[1]): x["share"] for x in d}
    np.testing.assert_allclose([got[i] for i in range(6)], ref, atol=1e-10)
    assert sum(got.values()) == pytest.approx(1.0, rel=1e-12)
