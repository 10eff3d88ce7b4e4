"""_lib.py: loads libcmodes with cffi in ABI mode (dlopen: no compiler, no
headers at install time) and turns C statuses into cmodes.Error subclasses.
The declarations are cmodes/_cdef.h, generated from include/ by
python/gen_cdef.py. Not for the Python-level API (cmodes/__init__.py)."""
import glob
import numbers
import os

import cffi

ffi = cffi.FFI()
with open(os.path.join(os.path.dirname(__file__), "_cdef.h")) as _f:
    ffi.cdef(_f.read())


def _candidates():
    """Where libcmodes is looked for, in order."""
    env = os.environ.get("CMODES_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    try:  # written by `cmake --install` next to this file
        from ._libpath import LIBRARY
        yield LIBRARY
    except ImportError:
        pass
    # the build tree of a source checkout: python/cmodes -> ../../build
    for d in ("build", "build-*"):
        for b in sorted(glob.glob(os.path.join(here, "..", "..", d))):
            yield os.path.join(b, "libcmodes.so")
    yield "libcmodes.so.0"  # the loader's path and cache
    # `cmake --install` to the default prefix, before ldconfig has run
    for d in ("/usr/local/lib", "/usr/local/lib64",
              "/usr/local/lib/x86_64-linux-gnu"):
        yield os.path.join(d, "libcmodes.so.0")


def _load():
    errors = []
    for path in _candidates():
        if os.sep in path and not os.path.exists(path):
            continue
        try:  # never unloaded: at exit, OpenMP's idle worker threads
            # (libgomp, loaded with it) may still run its code
            return ffi.dlopen(path, ffi.RTLD_NOW | ffi.RTLD_NODELETE), path
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError(
        "cmodes: libcmodes not found; set CMODES_LIBRARY to the path of "
        "libcmodes.so (tried: %s)" % ("; ".join(errors) or "nothing found"))


lib, library_path = _load()


class Error(Exception):
    """A failing libcmodes call: status (int), name ("invalid_scene"),
    message (as the command line prints it) and path ("contacts[17].normal",
    "" when none)."""

    status = None
    name = "error"

    def __init__(self, message, path="", status=None):
        super().__init__(message)
        self.message = message
        self.path = path
        if status is not None:
            self.status = status

    def __str__(self):
        return self.message


def _class_name(name):
    return "".join(w.capitalize() for w in name.split("_")) + "Error"


# one subclass per status of CM_STATUS_MAP, names from the library
ERRORS = {}
for _st in range(-1, -64, -1):
    _name = ffi.string(lib.cm_status_name(_st)).decode()
    if _name == "unknown":
        break
    ERRORS[_st] = type(_class_name(_name), (Error,),
                       {"status": _st, "name": _name,
                        "__doc__": ffi.string(lib.cm_status_message(_st))
                        .decode()})


def _processors():
    """The processors this process may run on (what OpenMP counts)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def context(threads=0):
    """A library context for threads (0: the OpenMP default), checked as
    the command line's --threads: an integer from 0 to 4 x the
    processors."""
    if isinstance(threads, bool) or not isinstance(threads, numbers.Integral) \
            or threads < 0:
        raise ERRORS[-1]("threads: %r is not a non-negative integer"
                         % (threads,), "threads", -1)
    most = 4 * _processors()
    if threads > most:
        raise ERRORS[-1]("threads: %d: more than 4 x the %d processors (at "
                         "most %d); give threads=%d or fewer (0 = the OpenMP "
                         "default)" % (threads, most // 4, most, most),
                         "threads", -1)
    ctx = ffi.new("cm_context_t *")
    lib.cm_context_init(ctx)
    ctx.threads = int(threads)
    return ctx


def raise_for(ctx, st):
    """Raises the Error of a negative status; returns st otherwise."""
    if st >= 0:
        return st
    msg = ffi.string(ctx.message).decode(errors="replace")
    if not msg:
        msg = ffi.string(lib.cm_status_message(st)).decode()
    path = ffi.string(ctx.path).decode(errors="replace")
    cls = ERRORS.get(st, Error)
    raise cls(msg, path, st)


def take_string(ptr):
    """Text of a malloc'd char * (freed here)."""
    if ptr == ffi.NULL:
        raise MemoryError("cmodes: out of memory")
    try:
        return ffi.string(ptr).decode()
    finally:
        _free(ptr)


_libc = ffi.dlopen(None)
ffi.cdef("void free(void *);", override=True)


def _free(ptr):
    _libc.free(ptr)
