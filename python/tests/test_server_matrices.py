"""POST /v1/analyze with M, J, k as COO arrays in JSON, over HTTP against a
real `cmodes serve` (port 0), compared with scipy.linalg.eigh of S formed
here; the same system through the package gives the same report."""
import json
import re
import subprocess
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
import scipy.linalg

from test_cmodes import CLI, cmodes, dense_omegas, random_system


def coo(A, lower=False):
    A = np.tril(A) if lower else np.asarray(A)
    r, c = np.nonzero(A)
    return {"shape": list(A.shape), "rows": r.tolist(), "cols": c.tolist(),
            "values": A[r, c].tolist()}


@pytest.fixture(scope="module")
def server():
    p = subprocess.Popen([CLI, "serve", "--listen", "127.0.0.1:0",
                          "--max-contacts", "100"],
                         stderr=subprocess.PIPE, text=True)
    port, t0 = None, time.time()
    while port is None and time.time() - t0 < 30:
        line = p.stderr.readline()
        m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
        if m:
            port = int(m.group(1))
        elif not line and p.poll() is not None:
            break
    if port is None:
        p.kill()
        pytest.skip("cmodes serve did not start (built without the server?)")
    yield "http://127.0.0.1:%d" % port
    p.terminate()
    p.wait(30)


def post(url, body, query=""):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + "/v1/analyze" + query, data=data,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.mark.parametrize("seed", [0, 7])
def test_matrices_over_http_match_eigh(server, seed):
    M, J, k = random_system(seed, n=12, nc=9)
    ref, S = dense_omegas(M, J, k)
    names = ["row%d" % i for i in range(9)]
    body = {"options": {"modes": 5},
            "matrices": {"M": coo(M, lower=seed == 0), "J": coo(J),
                         "k": k.tolist(), "row_names": names}}
    status, rep = post(server, body, "?timings=false")
    assert status == 200, rep
    np.testing.assert_allclose([m["omega"] for m in rep["modes"]], ref[:5],
                               rtol=1e-10)
    z = scipy.linalg.eigh((S + S.T) / 2)[1][:, -1]
    top = rep["modes"][0]["contacts"][0]
    assert top["index"] == int(np.argmax(z ** 2))
    assert top["name"] == names[top["index"]]
    # the package's report of the same system: the same JSON but timings
    r = cmodes.analyze(M, J, k, row_names=names, modes=5)
    mine = r.to_dict()
    mine.pop("timings")
    assert json.dumps(mine, sort_keys=True) == json.dumps(rep,
                                                          sort_keys=True)


def test_matrices_over_http_errors(server):
    M, J, k = random_system(1, n=4, nc=3)
    status, err = post(server, {"matrices": {"M": coo(M[:, :3]), "J": coo(J),
                                             "k": k.tolist()}})
    assert (status, err["error"]) == (400, "invalid_scene")
    assert err["message"] == "matrices.M is 4 x 3: a mass matrix is square"
    assert err["path"] == "matrices.M.shape"
    status, err = post(server, {"matrices": {"M": coo(-M), "J": coo(J),
                                             "k": k.tolist()}})
    assert (status, err["error"]) == (422, "not_spd")
    big = np.ones((101, 4))
    status, err = post(server, {"matrices": {"M": coo(M), "J": coo(big),
                                             "k": 1.0}})
    assert status == 413 and "--max-contacts" in err["message"]
    # a malformed body is the scene path's error, as before
    status, err = post(server, b'{"matrices": [1, 2')
    assert status == 400 and err["error"] == "parse"
