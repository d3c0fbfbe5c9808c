"""Finding, loading and checking libcairn, and declaring the C functions used.

The binding goes through the library's tool interface only (cairn.h, "The
tool interface"): every call passes a tool name and a JSON text and gets a
JSON text back, so no struct layout is copied here. The one C signature
with more than strings in it is the embedder callback, EMBED_FN below.

Where the library is looked for, in order:
  1. the environment variable CAIRN_LIBRARY, a path. When it is set, it is
     the only candidate: a wrong path fails the import rather than quietly
     loading some other libcairn;
  2. the build tree next to this source tree: <repo>/build/libcairn.so,
     for a checkout where `make` ran;
  3. the system: ctypes.util.find_library("cairn"), then "libcairn.so.1"
     through the dynamic loader's own search.

The library must be the release this package was written for (same major
and minor version, any patch): anything else fails the import with a
message that names both, never a crash or a wrong answer later.
"""
import ctypes
import ctypes.util
import os

# The library release this package is written for: 0.2.x.
WANT_MAJOR = 0
WANT_MINOR = 2

# int (*cairn_embed_fn)(void *user, const char *text, size_t len,
#                       float *out, char *err)
# The text is not NUL-terminated (len bytes); err holds 256 bytes
# (CAIRN_ERRMSG_MAX). char * are POINTER(c_char), not c_char_p: c_char_p
# would copy up to a NUL, and err must be written in place.
EMBED_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char),
                            ctypes.c_size_t, ctypes.POINTER(ctypes.c_float),
                            ctypes.POINTER(ctypes.c_char))
ERRMSG_MAX = 256

_P = ctypes.c_void_p
_PP = ctypes.POINTER(ctypes.c_void_p)

# name: (restype, argtypes). Strings the library returns for the caller to
# free come back through char ** declared as void ** (_PP), so the pointer
# is kept for cairn_free.
_FUNCTIONS = {
    "cairn_version": (ctypes.c_char_p, []),
    "cairn_version_number": (ctypes.c_int, []),
    "cairn_session_tools": (ctypes.c_char_p, []),
    "cairn_session_open": (ctypes.c_int, [_PP, ctypes.c_char_p, ctypes.c_char_p, _PP]),
    "cairn_session_call": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_char_p, _PP]),
    "cairn_session_set_embedder": (ctypes.c_int, [_P, ctypes.c_char_p, ctypes.c_uint32,
                                                  ctypes.c_double, EMBED_FN, _P, _PP]),
    "cairn_session_close": (ctypes.c_int, [_P]),
    "cairn_free": (None, [_P]),
}


def _candidates():
    """The libraries to try, in order, as (how it was found, path or name),
    and notes on the places looked at where there was none."""
    env = os.environ.get("CAIRN_LIBRARY")
    if env:
        return [("CAIRN_LIBRARY", env)], []
    here = os.path.dirname(os.path.abspath(__file__))  # <repo>/python/cairn
    tree = os.path.join(os.path.dirname(os.path.dirname(here)), "build", "libcairn.so")
    found, notes = [], []
    if os.path.exists(tree):
        found.append(("the build tree", tree))
    else:
        notes.append("%s (no such file)" % tree)
    system = ctypes.util.find_library("cairn")
    if system:
        found.append(("find_library", system))
    else:
        notes.append('find_library("cairn") (found none)')
    found.append(("the dynamic loader", "libcairn.so.1"))
    return found, notes


def _load():
    cands, tried = _candidates()
    for how, where in cands:
        try:
            return ctypes.CDLL(where), where
        except OSError as e:
            tried.append("%s from %s (%s)" % (where, how, e))
    raise ImportError("cairn: cannot load libcairn; tried: " + "; ".join(tried) +
                      ". Build it (make) or set CAIRN_LIBRARY to the path of libcairn.so.")


def check_version(number, text, where):
    """Raise ImportError unless number, a cairn_version_number(), is 0.2.x."""
    major, minor = number // 10000, number // 100 % 100
    if (major, minor) != (WANT_MAJOR, WANT_MINOR):
        raise ImportError(
            "cairn: %s is libcairn %s (version number %d); this package is written for "
            "%d.%d.x. Use the Python package of the library's release, or point "
            "CAIRN_LIBRARY at a %d.%d.x libcairn." % (where, text, number, WANT_MAJOR,
                                                     WANT_MINOR, WANT_MAJOR, WANT_MINOR))


def _declare(lib, where, names):
    for name in names:
        restype, argtypes = _FUNCTIONS[name]
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise ImportError("cairn: %s has no %s(); it is not a libcairn %d.%d.x with the "
                              "tool interface" % (where, name, WANT_MAJOR, WANT_MINOR)) from None
        fn.restype = restype
        fn.argtypes = argtypes


lib, path = _load()
# The version first, so that another release fails with the version
# message rather than with a missing function.
_declare(lib, path, ["cairn_version", "cairn_version_number"])
version = lib.cairn_version().decode()
check_version(lib.cairn_version_number(), version, path)
_declare(lib, path, [n for n in _FUNCTIONS if n not in ("cairn_version", "cairn_version_number")])
