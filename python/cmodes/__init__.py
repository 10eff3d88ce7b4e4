"""cmodes: coupled normal-contact penalty modes and the stable time step,
over libcmodes (cffi, ABI mode).

    import cmodes
    r = cmodes.analyze(M, J, k)            # numpy or scipy.sparse
    r = cmodes.analyze(cmodes.Scene.read("data/bar2d.json"), modes=3)
    r.omega_max, r.modes[0].omega, r.timestep["central_difference"]["h"]

Every analysis option of the command line is a keyword argument under the
same name (underscored: max_iter for --max-iter), with the same defaults
and checks: both come from the library's options table (options()).
Failures raise cmodes.Error subclasses (InvalidSceneError, NotSpdError,
UsageError, ...) carrying status, name, message and path. The GIL is
released while the library works (cffi releases it around every call).
"""
import json
import os

import numpy as np

from . import _lib
from ._lib import ERRORS, Error, ffi, lib

__all__ = ["analyze", "Scene", "System", "Report", "Mode", "Vectors",
           "Error", "options", "defaults", "read_matrices", "contact_rows",
           "import_dump",
           "import_lammps", "generate_pile", "generate_crystal",
           "generate_stack", "generate_fleet", "generate_bar",
           "keep_workspace", "workspace_kept", "kernel_set",
           "library_path", "__version__"]

__version__ = "0.1.0"
library_path = _lib.library_path

# the Error subclasses as module attributes: cmodes.InvalidSceneError, ...
for _cls in ERRORS.values():
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)


def _error(status, message, path=""):
    return ERRORS[status](message, path, status)


# ---- workspace kept between analyses ---------------------------------------

KEEP_WORKSPACE = 1 << 30  # what the package keeps from import on (bytes)


def keep_workspace(nbytes):
    """Keep up to nbytes of an analysis's largest freed buffers (the Lanczos
    basis, B's values and indices) for the next analysis in this process,
    so a loop over scenes does not pay fresh pages every time (issue 19:
    on a 1e6-contact pile, 639 -> 0 MiB of fresh pages and 0.76 -> 0.66 s
    a step). The package keeps KEEP_WORKSPACE (1 GiB) from import on; 0
    frees what is kept and keeps nothing. The results are the same bits
    either way. Returns the previous cap."""
    n = int(nbytes)
    if n < 0:
        raise ValueError("keep_workspace: nbytes %d is negative" % n)
    return int(lib.cm_workspace_keep(n))


def workspace_kept():
    """Bytes of freed buffers the library holds now for the next analysis."""
    return int(lib.cm_workspace_kept())


keep_workspace(KEEP_WORKSPACE)


def kernel_set():
    """The kernel set the Lanczos basis work runs on in this process:
    "avx512", "avx2" or "baseline", the best the CPU runs unless the
    environment variable CMODES_KERNELS names a lower one when the package
    is first used (docs/cli.md). Every set gives the same bits."""
    return ffi.string(lib.cm_kernel_set()).decode()


# ---- options: the library's table ------------------------------------------

_TABLE = json.loads(_lib.take_string(lib.cm_options_table_json()))["options"]


def options():
    """The analysis options as the library's table (list of dicts: name,
    cli, type, default, minimum, maximum, expected, help, doc), as
    `cmodes options --json` prints it."""
    return [dict(o) for o in _TABLE]


def defaults():
    """{name: default} of every analysis option."""
    return {o["name"]: o["default"] for o in _TABLE}


def _options(ctx, kw):
    """A cm_options_t with the library defaults and kw set by name through
    the library's parser and range checks (cm_options_set)."""
    opts = ffi.new("cm_options_t *")
    lib.cm_options_init(opts)
    for name, value in kw.items():
        if isinstance(value, bool) or value is None:
            text = repr(value)
        elif isinstance(value, (int, np.integer)):
            text = str(int(value))
        elif isinstance(value, (float, np.floating)):
            text = repr(float(value))
        else:
            text = str(value)
        _lib.raise_for(ctx, lib.cm_options_set(ctx, opts, name.encode(),
                                               text.encode()))
    return opts


# ---- scenes -------------------------------------------------------------------

# The destructors hold the library and ffi (default arguments): at
# interpreter exit, objects still alive are freed in no particular order,
# and the library must not be unloaded before the last of them.
def _scene_free(p, lib=lib, ffi=ffi):
    lib.cm_scene_destroy(ffi.new("cm_scene_t **", p))


def _system_free(p, lib=lib, ffi=ffi):
    lib.cm_system_destroy(ffi.new("cm_system_t **", p))


def _struct_dtype(ctype, fields):
    """A numpy dtype with the layout of a C struct (names, offsets)."""
    names, formats, offsets = [], [], []
    for name, fmt in fields:
        names.append(name)
        formats.append(fmt)
        offsets.append(ffi.offsetof(ctype, name))
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": ffi.sizeof(ctype)})


_BODY = _struct_dtype("cm_body_t", [
    ("fixed", "i4"), ("mass", "f8"), ("inertia", ("f8", 9)),
    ("position", ("f8", 3)), ("orientation", ("f8", 4))])
_CONTACT = _struct_dtype("cm_contact_t", [
    ("a", "i4"), ("b", "i4"), ("point", ("f8", 3)), ("normal", ("f8", 3)),
    ("stiffness", "f8"), ("stiffness_t", "f8"), ("damping_n", "f8"),
    ("damping_t", "f8")])


def _no_complex(value, what):
    """Refuses complex values (dense or scipy.sparse): numpy would drop the
    imaginary part with only a warning."""
    if np.iscomplexobj(value):
        raise _error(-3, "%s is complex: cmodes takes real numbers (pass its "
                     ".real if the imaginary part is round-off)" % what, what)


def _real(value, what):
    """value as a float64 array, refusing complex values and what is not
    numbers."""
    _no_complex(value, what)
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise _error(-3, "%s: not numbers (%s)" % (what, e), what) from None


def _column(value, n, width, what, default=None):
    """value as an (n, width) float array (width 0: (n,)), broadcasting a
    single row; what names it in errors."""
    if value is None:
        value = default
    a = _real(value, what)
    shape = (n,) if width == 0 else (n, width)
    try:
        return np.broadcast_to(a, shape)
    except ValueError:
        raise _error(-3, "%s: shape %s does not fit %d rows of %s" %
                     (what, a.shape, n, width or "one value"), what)


class Scene:
    """A frozen contact scene (libcmodes cm_scene_t).

    Scene(dim, bodies={...}, contacts={...}) from arrays:
      bodies:   mass (n), inertia (n,3,3) / (n,9) / (n,3) diagonal in 3D,
                (n,) in 2D; position (n,3) or (n,2); orientation (n,4)
                w,x,y,z; fixed (n) bool; name (n) strings
      contacts: a, b (body indices, -1 = the world), point, normal,
                stiffness; optional stiffness_t, damping_n, damping_t; name
    Scene.read(path) reads JSON or binary; Scene.from_json(text).
    The library checks every value (cm_scene_validate): a bad one raises
    InvalidSceneError with its path, e.g. "contacts[17].normal".
    """

    def __init__(self, dim=3, bodies=None, contacts=None, timestep=0.0,
                 _ptr=None):
        if _ptr is not None:
            self._ptr = ffi.gc(_ptr, _scene_free)
            return
        ptr = lib.cm_scene_create(int(dim))
        if ptr == ffi.NULL:
            raise _error(-1, "dim %r: a scene is 2- or 3-dimensional" % dim,
                         "dim")
        self._ptr = ffi.gc(ptr, _scene_free)
        self._ptr.timestep_s = float(timestep)
        ctx = _lib.context()
        self._add_bodies(ctx, int(dim), bodies or {})
        self._add_contacts(ctx, int(dim), contacts or {})
        _lib.raise_for(ctx, lib.cm_scene_validate(ctx, self._ptr))

    # -- building from arrays --
    def _add_bodies(self, ctx, dim, b):
        if "mass" not in b and not b:
            return
        mass = np.atleast_1d(_real(b.get("mass"), "bodies.mass"))
        n = mass.shape[0]
        rec = np.zeros(n, dtype=_BODY)
        rec["mass"] = mass
        rec["orientation"] = (1, 0, 0, 0)
        rec["inertia"] = (1, 0, 0, 0, 1, 0, 0, 0, 1)
        if "fixed" in b:
            rec["fixed"] = np.broadcast_to(np.asarray(b["fixed"]), (n,))
        if "position" in b:
            p = _real(b["position"], "bodies.position")
            rec["position"][:, :p.shape[-1]] = p
        if "orientation" in b:
            rec["orientation"] = _column(b["orientation"], n, 4,
                                         "bodies.orientation")
        if "inertia" in b:
            i = _real(b["inertia"], "bodies.inertia")
            if dim == 2 or i.ndim == 0 or (i.ndim == 1 and i.shape[0] == n
                                           and dim == 2):
                rec["inertia"][:, 0] = np.broadcast_to(i.reshape(-1), (n,))
            elif i.shape[-2:] == (3, 3):
                rec["inertia"] = np.broadcast_to(i, (n, 3, 3)).reshape(n, 9)
            elif i.shape[-1] == 9:
                rec["inertia"] = np.broadcast_to(i, (n, 9))
            elif i.shape[-1] == 3:  # principal moments
                d = np.broadcast_to(i, (n, 3))
                full = np.zeros((n, 9))
                full[:, 0], full[:, 4], full[:, 8] = d[:, 0], d[:, 1], d[:, 2]
                rec["inertia"] = full
            else:
                raise _error(-3, "bodies.inertia: shape %s: expected (n,3,3),"
                             " (n,9), (n,3) or (n,) in 2D" % (i.shape,),
                             "bodies.inertia")
        names = b.get("name")
        base = rec.ctypes.data
        for j in range(n):
            nm = ffi.NULL if names is None or names[j] is None else \
                str(names[j]).encode()
            _lib.raise_for(ctx, lib.cm_scene_add_body(
                ctx, self._ptr, ffi.cast("cm_body_t *", base + j * _BODY.itemsize),
                nm))

    def _add_contacts(self, ctx, dim, c):
        if not c:
            return
        a = np.atleast_1d(np.asarray(c["a"]))
        n = a.shape[0]
        rec = np.zeros(n, dtype=_CONTACT)

        def index(v):
            v = np.broadcast_to(np.asarray(v, dtype=object), (n,))
            out = np.empty(n, dtype=np.int32)
            for i, x in enumerate(v):
                if x is None or (isinstance(x, str) and x == "world"):
                    out[i] = -1
                elif isinstance(x, str):
                    out[i] = lib.cm_scene_find_body(self._ptr, x.encode())
                else:
                    out[i] = int(x)
            return out
        rec["a"] = index(a)
        rec["b"] = index(c.get("b", -1))
        for key in ("point", "normal"):
            v = _real(c[key], "contacts." + key)
            rec[key][:, :v.shape[-1]] = v
        rec["stiffness"] = _column(c["stiffness"], n, 0, "contacts.stiffness")
        for key in ("stiffness_t", "damping_n", "damping_t"):
            if key in c:
                rec[key] = _column(c[key], n, 0, "contacts." + key)
        names = c.get("name")
        base = rec.ctypes.data
        for j in range(n):
            nm = ffi.NULL if names is None or names[j] is None else \
                str(names[j]).encode()
            _lib.raise_for(ctx, lib.cm_scene_add_contact(
                ctx, self._ptr,
                ffi.cast("cm_contact_t *", base + j * _CONTACT.itemsize), nm))

    # -- files --
    @classmethod
    def read(cls, path):
        """Reads a scene file, JSON or binary (told apart by the magic)."""
        ctx = _lib.context()
        out = ffi.new("cm_scene_t **")
        _lib.raise_for(ctx, lib.cm_scene_read_file(
            ctx, os.fsencode(path), out))
        return cls(_ptr=out[0])

    @classmethod
    def from_json(cls, text, source="<string>"):
        ctx = _lib.context()
        out = ffi.new("cm_scene_t **")
        data = text.encode() if isinstance(text, str) else bytes(text)
        _lib.raise_for(ctx, lib.cm_scene_parse_json(
            ctx, data, len(data), source.encode(), out))
        return cls(_ptr=out[0])

    def to_json(self):
        """The scene in the JSON format (docs/scene-format.md)."""
        ctx = _lib.context()
        p = lib.cm_scene_to_json(ctx, self._ptr)
        if p == ffi.NULL:
            _lib.raise_for(ctx, ctx.status or -6)
        return _lib.take_string(p)

    def write(self, path):
        with open(path, "w") as f:
            f.write(self.to_json())

    # -- reading back --
    @property
    def dim(self):
        return self._ptr.dim

    @property
    def nbodies(self):
        return self._ptr.nbodies

    @property
    def ncontacts(self):
        return self._ptr.ncontacts

    @property
    def timestep(self):
        return self._ptr.timestep_s

    def _records(self, ptr, n, dtype):
        if n == 0:
            return np.zeros(0, dtype=dtype)
        buf = ffi.buffer(ptr, n * dtype.itemsize)
        return np.frombuffer(buf, dtype=dtype).copy()

    @property
    def bodies(self):
        """Dict of arrays (copies): mass, inertia (n,3,3), position (n,3),
        orientation (n,4), fixed (n) bool, name (n)."""
        r = self._records(self._ptr.bodies, self.nbodies, _BODY)
        names = [self._name(lib.cm_scene_body_name(self._ptr, i))
                 for i in range(self.nbodies)]
        return {"mass": r["mass"].copy(),
                "inertia": r["inertia"].reshape(-1, 3, 3).copy(),
                "position": r["position"].copy(),
                "orientation": r["orientation"].copy(),
                "fixed": r["fixed"] != 0, "name": names}

    @property
    def contacts(self):
        """Dict of arrays (copies): a, b, point, normal, stiffness,
        stiffness_t, damping_n, damping_t, name."""
        r = self._records(self._ptr.contacts, self.ncontacts, _CONTACT)
        out = {k: r[k].copy() for k in _CONTACT.names}
        out["name"] = [self._name(lib.cm_scene_contact_name(self._ptr, i))
                       for i in range(self.ncontacts)]
        return out

    @staticmethod
    def _name(p):
        return None if p == ffi.NULL else ffi.string(p).decode()

    def __repr__(self):
        return "<cmodes.Scene dim=%d bodies=%d contacts=%d>" % (
            self.dim, self.nbodies, self.ncontacts)


# ---- systems: M, J, k ---------------------------------------------------------

class System:
    """An assembled system (M, J, k): from a scene, from arrays
    (System.from_matrices) or from Matrix Market files (read_matrices)."""

    def __init__(self, ptr, scene=None):
        self._ptr = ffi.gc(ptr, _system_free)
        self.scene = scene  # keeps names, and the scene alive

    @classmethod
    def from_scene(cls, scene, threads=0):
        ctx = _lib.context(threads)
        out = ffi.new("cm_system_t **")
        _lib.raise_for(ctx, lib.cm_system_assemble(ctx, scene._ptr, out))
        return cls(out[0], scene)

    @classmethod
    def from_matrices(cls, M, J, k, row_names=None, col_names=None):
        """M (n x n symmetric positive definite; both triangles or the lower
        one), J (nc x n), k (nc, or one value for all rows): numpy arrays or
        scipy.sparse matrices. Arrays already in the library's layout (CSC
        M, CSR J, int32 indices, float64 values, k float64) are not
        copied; the library copies them once. row_names (nc strings, e.g.
        "hip_FL.x") name the rows of J (contacts) in the report, col_names
        (n) the dofs of M (cm_system_set_names); None entries stay
        unnamed."""
        Mp, Mi, Mx, n = _csc(M)
        Jp, Jj, Jx, nc = _csr(J, n)
        kk = _real(k, "k")
        if kk.ndim == 0:
            kk = np.full(nc, float(kk))
        kk = np.ascontiguousarray(kk.reshape(-1) if kk.ndim == 2 and
                                  1 in kk.shape else kk)
        if kk.ndim != 1 or kk.shape[0] != nc:
            raise _error(-3, "k has %d values but J has %d rows: one "
                         "stiffness per row of J" % (kk.size, nc), "k")
        ctx = _lib.context()
        out = ffi.new("cm_system_t **")
        _lib.raise_for(ctx, lib.cm_system_from_matrices(
            ctx, n, nc, _ptr(Mp, "int"), _ptr(Mi, "int"), _ptr(Mx, "double"),
            _ptr(Jp, "int"), _ptr(Jj, "int"), _ptr(Jx, "double"),
            _ptr(kk, "double"), out))
        system = cls(out[0])
        if row_names is not None or col_names is not None:
            system.set_names(row_names, col_names)
        return system

    def set_names(self, row_names=None, col_names=None):
        """Names the rows of J (nc) and the dofs of M (n, in M's order) of a
        system given as matrices; the report names its contacts by row."""
        nc, n = self._ptr.nc, self._ptr.ndofs
        keep = []

        def carray(names, count, what, has, per):
            if names is None:
                return ffi.NULL
            names = list(names)
            if len(names) != count:
                raise _error(-1, "%s has %d names but %s: one name (or None) "
                             "per %s" % (what, len(names), has, per), what)
            arr = ffi.new("char *[]", count + 1)
            for i, nm in enumerate(names):
                if nm is not None:
                    keep.append(ffi.new("char[]", str(nm).encode()))
                    arr[i] = keep[-1]
            keep.append(arr)
            return ffi.cast("const char *const *", arr)
        rows = carray(row_names, nc, "row_names", "J has %d rows" % nc,
                      "row of J")
        cols = carray(col_names, n, "col_names", "M has %d dofs" % n,
                      "dof of M")
        ctx = _lib.context()
        _lib.raise_for(ctx, lib.cm_system_set_names(ctx, self._ptr, rows,
                                                    cols))

    def _names(self, p, count):
        if p == ffi.NULL:
            return None
        return [None if p[i] == ffi.NULL else ffi.string(p[i]).decode()
                for i in range(count)]

    @property
    def row_names(self):
        """Names of the rows of J (None: none; for a scene's system, the
        scene names its contacts)."""
        return self._names(self._ptr.row_names, self._ptr.nc)

    @property
    def col_names(self):
        """Names of the dofs of M, in M's order (None: none)."""
        return self._names(self._ptr.col_names, self._ptr.ndofs)


    def matrices(self):
        """(M, J, k) as the library holds them (copies): M the full
        symmetric n x n (scipy.sparse CSC), J nc x n (CSR), k (nc). Columns
        are the active dofs (col_body, col_dof say which), rows the rows of
        J in the system's order (row_contact)."""
        sp = _sparse()
        s = self._ptr
        n, nc = s.n, s.nc

        def arr(p, count, dt):
            if count == 0:
                return np.zeros(0, dtype=dt)
            size = np.dtype(dt).itemsize
            return np.frombuffer(ffi.buffer(p, size * count), dtype=dt).copy()
        Mp = arr(s.Mp, n + 1, np.int32)
        L = sp.csc_matrix((arr(s.Mx, int(Mp[-1]), np.float64),
                           arr(s.Mi, int(Mp[-1]), np.int32), Mp), shape=(n, n))
        M = (L + sp.tril(L, -1).T).tocsc()
        Jp = arr(s.Jp, nc + 1, np.int32)
        J = sp.csr_matrix((arr(s.Jx, int(Jp[-1]), np.float64),
                           arr(s.Jj, int(Jp[-1]), np.int32), Jp), shape=(nc, n))
        return M, J, arr(s.k, nc, np.float64)

    @property
    def shape(self):
        """(rows of J, active dofs)."""
        return (self._ptr.nc, self._ptr.n)


def _ptr(a, ctype):
    return ffi.cast(ctype + " *", ffi.from_buffer(a))


def _shape2(A, what):
    shape = getattr(A, "shape", None)
    if shape is None or len(shape) != 2:
        raise _error(-3, "%s must be a 2-D matrix, got shape %s" %
                     (what, shape if shape is not None else type(A).__name__),
                     what)
    return shape


def _sparse():
    import scipy.sparse as sp
    return sp


def _csc(M):
    sp = _sparse()
    _no_complex(M, "M")
    if not sp.issparse(M):
        M = _real(M, "M")
    nr, nc = _shape2(M, "M")
    if nr != nc:
        raise _error(-3, "M is %d x %d: a mass matrix is square" % (nr, nc),
                     "M")
    if nr == 0:
        raise _error(-3, "M is empty (0 x 0)", "M")
    A = M.tocsc() if sp.issparse(M) else sp.csc_matrix(M)
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()
    _check_symmetric(A)
    return (np.ascontiguousarray(A.indptr, dtype=np.int32),
            np.ascontiguousarray(A.indices, dtype=np.int32),
            np.ascontiguousarray(A.data, dtype=np.float64), nr)


def _check_symmetric(A):
    """Both triangles stored: they must agree (as the file reader checks);
    one triangle alone is taken as the symmetric matrix."""
    coo = A.tocoo()
    low = coo.row > coo.col
    up = coo.row < coo.col
    if not low.any() or not up.any():
        return
    D = (A - A.T).tocoo()
    bad = np.nonzero(np.abs(D.data) > 1e-14 * max(1.0, abs(A).max()))[0]
    if bad.size:
        i, j = int(D.row[bad[0]]), int(D.col[bad[0]])
        raise _error(-3, "M is not symmetric: M(%d,%d) = %.17g but M(%d,%d) "
                     "= %.17g; store a symmetric mass matrix (or only its "
                     "lower triangle)" % (i + 1, j + 1, A[i, j], j + 1, i + 1,
                                          A[j, i]), "M")


def _csr(J, n):
    sp = _sparse()
    _no_complex(J, "J")
    if not sp.issparse(J):
        J = _real(J, "J")
        if J.ndim == 1:
            J = J.reshape(1, -1)
    nr, nc = _shape2(J, "J")
    if nc != n:
        raise _error(-3, "J is %d x %d but M is %d x %d: J needs one column "
                     "per row of M" % (nr, nc, n, n), "J")
    A = J.tocsr() if sp.issparse(J) else sp.csr_matrix(J)
    if not A.has_canonical_format:
        A = A.copy()
        A.sum_duplicates()
    return (np.ascontiguousarray(A.indptr, dtype=np.int32),
            np.ascontiguousarray(A.indices, dtype=np.int32),
            np.ascontiguousarray(A.data, dtype=np.float64), nr)


def contact_rows(jacobians, normals, tangents=False):
    """Rows of J from per-point translational Jacobians, as Drake
    (CalcJacobianTranslationalVelocity), Pinocchio or MuJoCo (mj_jac) give
    them: jacobians (nc, 3, nv), the relative velocity of each contact's two
    points (J_a - J_b, or one 3 x nv array per contact), normals (nc, 3)
    unit, pointing from b to a. Returns the (nc, nv) normal rows n^T J_c;
    with tangents=True (nc * 3, nv): each contact's normal row, then two
    rows along an orthonormal basis of its tangent plane (any basis: with
    one k_t for both, the spectrum does not depend on it), the order of a
    scene's rows (give k as [k_n, k_t, k_t] per contact)."""
    Jc = _real(jacobians, "jacobians")
    n = _real(normals, "normals").reshape(-1, 3)
    if Jc.ndim != 3 or Jc.shape[1] != 3 or Jc.shape[0] != n.shape[0]:
        raise _error(-3, "contact_rows: jacobians has shape %s: expected "
                     "(%d, 3, nv), one 3 x nv Jacobian per contact" %
                     (Jc.shape, n.shape[0]), "jacobians")
    length = np.linalg.norm(n, axis=1)
    if not np.all(np.abs(length - 1) < 1e-6):
        i = int(np.argmax(np.abs(length - 1)))
        raise _error(-3, "contact_rows: normals[%d] has length %.17g: give "
                     "unit normals" % (i, length[i]), "normals[%d]" % i)
    rows = np.einsum("ci,civ->cv", n, Jc)
    if not tangents:
        return rows
    # t1: the normal crossed with the axis it is least aligned with
    axis = np.eye(3)[np.argmin(np.abs(n), axis=1)]
    t1 = np.cross(n, axis)
    t1 /= np.linalg.norm(t1, axis=1)[:, None]
    t2 = np.cross(n, t1)
    out = np.empty((3 * n.shape[0], Jc.shape[2]))
    out[0::3] = rows
    out[1::3] = np.einsum("ci,civ->cv", t1, Jc)
    out[2::3] = np.einsum("ci,civ->cv", t2, Jc)
    return out


def read_matrices(M, J=None, k=None):
    """A System from Matrix Market files: a manifest (JSON {"M", "J", "k"},
    as `cmodes export` writes) or the three files; the reader of
    `cmodes analyze --matrices`, with its messages."""
    ctx = _lib.context()
    out = ffi.new("cm_system_t **")
    if J is None:
        st = lib.cm_system_read_manifest(ctx, os.fsencode(M), out)
    else:
        st = lib.cm_system_read_matrices(ctx, os.fsencode(M), os.fsencode(J),
                                         os.fsencode(k), out)
    _lib.raise_for(ctx, st)
    return System(out[0])


# ---- the report -------------------------------------------------------------

class Mode:
    """One mode of a report: omega (rad/s), lambda_ (omega^2; also
    mode["lambda"]), residual, zeta, component, contacts, bodies and, for
    matrices, dofs (lists of dicts with index, name, share)."""

    def __init__(self, d):
        self._d = d
        self.omega = d["omega"]
        self.lambda_ = d["lambda"]
        self.residual = d["residual"]
        self.zeta = d.get("zeta", 0.0)
        self.component = d.get("component")
        self.contacts = d.get("contacts", [])
        self.bodies = d.get("bodies", [])
        self.dofs = d.get("dofs", [])

    def __getitem__(self, key):
        return self._d[key]

    def __repr__(self):
        return "<cmodes.Mode omega=%.9g rad/s component=%s>" % (
            self.omega, self.component)


class Vectors:
    """Mode shapes, column p for report mode p (analyze(..., vectors=True)):
      z    (nrows, nmodes) unit eigenvectors of S over the rows of J
           (scene rows: each contact's normal row, then its tangent rows)
      xi   (nrows, nmodes) the gaps J phi = omega z / sqrt(k)
      phi  (ndofs, nmodes) dof-space shapes, mass-normalised (phi^T M phi
           = 1), J^T K J phi = omega^2 M phi; for matrices in M's order
      row_contact, row_kind (0 normal, 1-2 tangents), col_body, col_dof:
           what each row and column is (col_dof: for matrices the index
           in M)
      row_names, col_names: names of the rows (the contact's) and, for
           matrices, of the dofs (lists; None when there are none)."""

    def __init__(self, v, system):
        matrices = system.scene is None
        nm, nr, nd = v.nmodes, v.nrows, v.ndofs

        def mat(p, rows):
            if rows * nm == 0:
                return np.zeros((rows, nm))
            a = np.frombuffer(ffi.buffer(p, 8 * rows * nm), dtype=np.float64)
            return a.reshape(nm, rows).T.copy()

        def ints(p, n):
            if n == 0:
                return np.zeros(0, dtype=np.int32)
            return np.frombuffer(ffi.buffer(p, 4 * n), dtype=np.int32).copy()
        self.z = mat(v.z, nr)
        self.xi = mat(v.xi, nr)
        phi = mat(v.phi, nd)
        self.row_contact = ints(v.row_contact, nr)
        self.row_kind = ints(v.row_kind, nr)
        self.col_body = ints(v.col_body, nd)
        self.col_dof = ints(v.col_dof, nd)
        if matrices:  # back to M's rows: every dof of M, in M's order (a
            # dof of a part of M that no row of J reaches does not move: 0)
            nd_all = system._ptr.ndofs
            full = np.zeros((nd_all, nm))
            full[self.col_dof] = phi
            phi = full
            body = np.full(nd_all, -1, dtype=np.int32)
            body[self.col_dof] = self.col_body
            self.col_body = body
            self.col_dof = np.arange(nd_all, dtype=np.int32)
        self.phi = phi
        # names: for matrices the system's (row_names: rows of J, col_names:
        # the rows of phi, M's order); for a scene its contact names by row
        if matrices:
            self.row_names = system.row_names
            self.col_names = system.col_names
        else:
            names = system.scene.contacts["name"]
            self.row_names = [names[c] for c in self.row_contact]
            self.col_names = None

    def __repr__(self):
        return "<cmodes.Vectors z%s phi%s>" % (self.z.shape, self.phi.shape)


class Report:
    """The analysis report. Attributes follow the JSON report
    (docs/report-format.md): omega_max, status, model, modes (Mode list),
    per_contact, bounds, timestep, counts, components, solver, timings, ...
    to_dict() is exactly that JSON (from cm_report_to_json); vectors is a
    Vectors object when asked for, else None. html() is the page of
    `cmodes report`, which notebooks show (_repr_html_)."""

    def __init__(self, d, vectors=None, source=None):
        self._d = d
        self.modes = [Mode(m) for m in d.get("modes", [])]
        self.vectors = vectors
        self._source = source  # (System, options, threads) for html()
        self._html = None

    def to_dict(self):
        return self._d

    def to_json(self, indent=2):
        return json.dumps(self._d, indent=indent)

    def __getattr__(self, name):
        d = self.__dict__.get("_d")
        if d is not None and name in d:
            return d[name]
        raise AttributeError(name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._d))

    @property
    def critical_step(self):
        """The critical central-difference step, s (None if none)."""
        return self._d["timestep"]["central_difference"]["h"]

    def html(self, title=None):
        """The HTML page of `cmodes report` for the analysed input
        (docs/reports.md: headline, spectrum, views, components, softening
        plan), from cm_report_html: it analyses the input again with the
        same options (the pictures need the full arrays). Cached."""
        if self._html is None:
            if self._source is None:
                raise _error(-1, "Report.html: this report has no input to "
                             "draw (reports from analyze() have one)")
            system, options, threads = self._source
            ctx = _lib.context(threads)
            opts = _options(ctx, options)
            scene = system.scene._ptr if system.scene is not None else \
                ffi.NULL
            out = ffi.new("char **")
            st = lib.cm_report_html(ctx, system._ptr, scene, opts,
                                    (title or "cmodes report").encode(), out)
            _lib.raise_for(ctx, st)
            self._html = _lib.take_string(out[0])
        return self._html

    def write_html(self, path, title=None):
        """Writes html() to path (as `cmodes report -o FILE.html`)."""
        with open(path, "w") as f:
            f.write(self.html(title))

    def _repr_html_(self):
        """Notebooks: the page of html() in an iframe (its styles and
        script stay inside it)."""
        import html as _h
        return ('<iframe srcdoc="%s" style="width: 100%%; height: 640px; '
                'border: 0"></iframe>' % _h.escape(self.html(), quote=True))

    def __repr__(self):
        return "<cmodes.Report omega_max=%.9g rad/s modes=%d status=%s>" % (
            self._d["omega_max"], len(self.modes), self._d.get("status"))


# ---- analysis -----------------------------------------------------------------

def analyze(M, J=None, k=None, *, vectors=False, threads=0, row_names=None,
            col_names=None, **options):
    """Analyses a Scene, a System, a scene file path, or matrices M, J, k
    (numpy or scipy.sparse; the general-M path; row_names and col_names
    name the rows of J and the dofs of M as System.from_matrices). Keyword
    options are the command line's analysis options (underscored names).
    vectors=True adds the mode shapes (Report.vectors). Returns a Report;
    raises an Error subclass on failure."""
    ctx = _lib.context(threads)
    opts = _options(ctx, options)
    if (row_names is not None or col_names is not None) and J is None:
        raise _error(-1, "analyze: row_names and col_names go with matrices "
                     "M, J, k (a scene names its contacts; a System: "
                     "System.set_names)", "row_names")
    if isinstance(M, System):
        system = M
    elif isinstance(M, Scene):
        system = System.from_scene(M, threads)
    elif isinstance(M, (str, bytes, os.PathLike)) and J is None:
        system = System.from_scene(Scene.read(M), threads)
    else:
        if J is None or k is None:
            raise _error(-1, "analyze(M, J, k): J and k are needed with M",
                         "J" if J is None else "k")
        system = System.from_matrices(M, J, k, row_names, col_names)
    scene = system.scene._ptr if system.scene is not None else ffi.NULL
    out = ffi.new("cm_report_t **")
    vec = ffi.new("cm_vectors_t **") if vectors else None
    if vectors:
        st = lib.cm_analyze_vectors(ctx, system._ptr, scene, opts, out, vec)
    else:
        st = lib.cm_analyze_system(ctx, system._ptr, scene, opts, out)
    _lib.raise_for(ctx, st)
    try:
        text = _lib.take_string(lib.cm_report_to_json(out[0], 0))
        v = Vectors(vec[0], system) if vectors else None
    finally:
        lib.cm_report_destroy(out)
        if vectors:
            lib.cm_vectors_destroy(vec)
    return Report(json.loads(text), v, (system, dict(options), threads))


# ---- generators and importers ------------------------------------------------

def _fill(struct, kw, what):
    fields = dict(ffi.typeof(struct).item.fields)
    for key, value in kw.items():
        if key not in fields:
            raise _error(-1, "%s: unknown option %r (known: %s)" %
                         (what, key, ", ".join(fields)), key)
        setattr(struct, key, value)


def _generate(kind, init, gen, kw, enums=None):
    ctx = _lib.context()
    o = ffi.new("cm_%s_options_t *" % kind)
    init(o)
    for key, table in (enums or {}).items():
        if isinstance(kw.get(key), str):
            try:
                kw[key] = table[kw[key]]
            except KeyError:
                raise _error(-1, "%s: %r is not one of %s" %
                             (key, kw[key], ", ".join(table)), key)
    _fill(o, kw, "generate_" + kind)
    out = ffi.new("cm_scene_t **")
    _lib.raise_for(ctx, gen(ctx, o, out))
    return Scene(_ptr=out[0])


def generate_pile(**kw):
    """A granular pile (cm_generate_pile): dim, count, seed, radius, ..."""
    return _generate("pile", lib.cm_pile_options_init, lib.cm_generate_pile,
                     kw)


def generate_crystal(**kw):
    """A crystal on a floor (cm_generate_crystal): lattice ("square",
    "hex", "sc", "fcc"), nx, ny, nz, radius, density, k, overlap."""
    return _generate("crystal", lib.cm_crystal_options_init,
                     lib.cm_generate_crystal, kw,
                     {"lattice": {"square": 0, "hex": 1, "sc": 2, "fcc": 3}})


def generate_stack(**kw):
    """Towers (cm_generate_stack): shape ("boxes", "spheres"), count,
    towers, dim, size, mass, k, gravity."""
    return _generate("stack", lib.cm_stack_options_init,
                     lib.cm_generate_stack, kw,
                     {"shape": {"boxes": 0, "spheres": 1}})


def generate_fleet(**kw):
    """A robot fleet (cm_generate_fleet): count, seed, wheeled_fraction,
    payload_fraction, per_row, spacing, gravity."""
    return _generate("fleet", lib.cm_fleet_options_init,
                     lib.cm_generate_fleet, kw)


def generate_bar(**kw):
    """The reference bar (cm_generate_bar): dim, mass, inertia,
    half_length, k."""
    return _generate("bar", lib.cm_bar_options_init, lib.cm_generate_bar, kw)


_PERIODIC = {"error": 0, "drop": 1, "ignore": 1, "image": 2}


def _dump_options(ctx, kw):
    o = ffi.new("cm_dump_options_t *")
    lib.cm_dump_options_init(o)
    o.periodic = 2  # minimum image, as the command line
    kw = dict(kw)
    for spec in kw.pop("walls", None) or []:
        _lib.raise_for(ctx, lib.cm_dump_options_add_plane(
            ctx, o, str(spec).encode()))
    if kw.get("cylinder") is not None and isinstance(kw["cylinder"], str):
        _lib.raise_for(ctx, lib.cm_dump_options_set_cylinder(
            ctx, o, kw.pop("cylinder").encode()))
    if isinstance(kw.get("periodic"), str):
        kw["periodic"] = _PERIODIC[kw["periodic"]]
    _fill(o, kw, "import_dump")
    return o


def import_dump(path, **kw):
    """A scene from a LAMMPS/LIGGGHTS text dump (cm_import_dump). Options
    are the fields of cm_dump_options_t (dim, timestep, density, k, young,
    poisson, touch_tol, radius, ...), plus walls=["z>0", ...] and
    cylinder="R,cx,cy"; periodic "image" (default), "drop" or "error"."""
    ctx = _lib.context()
    o = _dump_options(ctx, kw)
    out = ffi.new("cm_scene_t **")
    _lib.raise_for(ctx, lib.cm_import_dump(ctx, os.fsencode(path), o, out))
    return Scene(_ptr=out[0])


def import_lammps(deck, dump, **kw):
    """A scene from a LAMMPS/LIGGGHTS input deck and a dump of it
    (cm_import_lammps): contact laws, walls and the deck's time step from
    the deck."""
    if not hasattr(lib, "cm_import_lammps"):
        raise _error(-1, "import_lammps: this libcmodes has no "
                     "cm_import_lammps")
    ctx = _lib.context()
    o = _dump_options(ctx, kw) if kw else ffi.NULL
    out = ffi.new("cm_scene_t **")
    _lib.raise_for(ctx, lib.cm_import_lammps(ctx, os.fsencode(deck),
                                             os.fsencode(dump), o, out))
    return Scene(_ptr=out[0])
