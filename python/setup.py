"""Offline install: pip install --no-build-isolation ./python (Debian's
python3-setuptools, python3-wheel). No compiler: cffi loads libcmodes at
import (ABI mode). From a source checkout, cmodes/_cdef.h is regenerated
from the headers first, and the installed package remembers the library
to load: $CMODES_LIBRARY at install time, else the checkout's
build/libcmodes.so if it exists (else it searches at import: see
cmodes/_lib.py)."""
import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

here = os.path.dirname(os.path.abspath(__file__))
if os.path.exists(os.path.join(here, "..", "include", "cmodes.h")):
    subprocess.check_call([sys.executable, os.path.join(here, "gen_cdef.py")])


def library():
    lib = os.environ.get("CMODES_LIBRARY")
    if not lib:
        lib = os.path.join(here, "..", "build", "libcmodes.so")
    return os.path.realpath(lib) if os.path.exists(lib) else None


class BuildPy(build_py):
    """Writes cmodes/_libpath.py into the build (not the source tree)."""

    def run(self):
        super().run()
        lib = library()
        if lib and not self.dry_run:
            dest = os.path.join(self.build_lib, "cmodes", "_libpath.py")
            with open(dest, "w") as f:
                f.write("LIBRARY = %r\n" % lib)


setup(cmdclass={"build_py": BuildPy})
