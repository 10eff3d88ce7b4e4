"""docs/python.md's examples are tests: every ```python block followed by
"prints" runs (from python/, with the build's library and command line)
and prints what the docs show: text equal, numbers to 1e-9 relative.
Blocks that need MuJoCo's samples are skipped without them."""
import os
import re
import subprocess
import sys

import pytest

from test_cmodes import CLI, HERE, ROOT

DOC = os.path.join(ROOT, "docs", "python.md")
NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def examples():
    text = open(DOC).read()
    pat = re.compile(r"```python\n((?:(?!```)[^\n]*\n)*?)```\n\nprints\n\n"
                     r"((?:    [^\n]*\n|\n)+)")
    out = []
    for m in pat.finditer(text):
        shown = "\n".join(ln[4:] for ln in m.group(2).rstrip("\n")
                          .split("\n"))
        out.append(pytest.param(m.group(1), shown,
                                id="line%d" % text[:m.start()].count("\n")))
    return out


def same(got, want):
    """Text equal, numbers equal to 1e-9 relative."""
    g, w = NUM.split(got), NUM.split(want)
    gn, wn = NUM.findall(got), NUM.findall(want)
    if g != w or len(gn) != len(wn):
        return False
    return all(abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(b)))
               for a, b in zip(gn, wn))


def test_the_doc_has_examples():
    assert len(examples()) >= 4


@pytest.mark.parametrize("code,shown", examples())
def test_python_md_example(code, shown):
    if "/usr/share/mujoco" in code and not os.path.exists(
            "/usr/share/mujoco/model/humanoid100/humanoid100.xml"):
        pytest.skip("no MuJoCo samples")
    code = code.replace('"../build/cmodes"', repr(CLI))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(HERE, "..")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, cwd=os.path.join(HERE, ".."), env=env)
    if "without MuJoCo" in p.stderr:
        pytest.skip("cmodes built without MuJoCo")
    assert p.returncode == 0, p.stderr
    assert same(p.stdout.rstrip("\n"), shown), (p.stdout, shown)
