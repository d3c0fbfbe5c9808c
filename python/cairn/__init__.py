"""cairn: an embeddable memory engine for AI agents, from Python.

A ctypes binding over libcairn's tool interface (cairn_session_*): every
method of Store is one tool call with JSON arguments and a JSON result, so
the binding copies no C struct and works with any 0.2.x library.

    import cairn
    with cairn.Store("agent.cairn") as s:
        m = s.add("the user prefers dark mode", category="preference")
        s.recall("what theme does the user like?")

The library is found through $CAIRN_LIBRARY, the build tree next to this
source, or the system's loader (see cairn._lib); importing fails with
ImportError when it is missing or of another release than 0.2.x.
"""
from . import _lib
from .errors import (Error, Exists, InvalidArgument, Locked, NotFound, ReadOnly,
                     Unavailable)
from .store import PrunedWarning, Store, tools

__version__ = "0.2.0"
#: The version of the loaded libcairn ("0.2.0") and where it was loaded from.
library_version = _lib.version
library_path = _lib.path

__all__ = ["Store", "tools", "Error", "NotFound", "Exists", "InvalidArgument", "Locked",
           "ReadOnly", "Unavailable", "PrunedWarning",
           "library_version", "library_path", "__version__"]
