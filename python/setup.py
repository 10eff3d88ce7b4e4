"""Offline install: pip install --no-build-isolation ./python (Debian's
python3-setuptools, python3-wheel). No compiler: cffi loads libcmodes at
import (ABI mode). When the headers of a source checkout are next door,
cmodes/_cdef.h is regenerated from them first."""
import os
import subprocess
import sys

from setuptools import setup

here = os.path.dirname(os.path.abspath(__file__))
if os.path.exists(os.path.join(here, "..", "include", "cmodes.h")):
    subprocess.check_call([sys.executable, os.path.join(here, "gen_cdef.py")])
setup()
