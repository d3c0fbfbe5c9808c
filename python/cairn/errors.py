"""The exceptions: one class per cairn status code a caller tells apart.

Every failure of the library arrives as a JSON object,
{"error": {"code": "CAIRN_ENOTFOUND", "status": -1, "message": "..."}},
and is raised as an Error (or a subclass) carrying those three fields.
Codes without a class of their own (CAIRN_EIO, CAIRN_ECORRUPT, ...) are
raised as Error itself; .code tells them apart.
"""


class Error(Exception):
    """A cairn failure. code: the status name ("CAIRN_ENOTFOUND"); status:
    its stable number (-1); message: the one-line detail from the library."""

    def __init__(self, code, status, message):
        super().__init__(code, status, message)
        self.code = code
        self.status = status
        self.message = message

    def __str__(self):
        return "%s: %s" % (self.code, self.message)


class NotFound(Error, LookupError):
    """CAIRN_ENOTFOUND: no such memory, episode, node or store (or tool)."""


class Exists(Error):
    """CAIRN_EEXIST: it exists already (an episode for that session)."""


class InvalidArgument(Error, ValueError):
    """CAIRN_EINVAL or CAIRN_EQUERY: an argument is wrong; the message
    names it."""


class Locked(Error):
    """CAIRN_ELOCKED: another process held the writer lock for the whole
    busy timeout."""


class ReadOnly(Error):
    """CAIRN_EPERM: a write on a read-only store, or permission denied."""


class Unavailable(Error):
    """CAIRN_EUNAVAIL: a needed facility is missing (semantic recall
    without vectors or without an embedder)."""


_BY_CODE = {
    "CAIRN_ENOTFOUND": NotFound,
    "CAIRN_EEXIST": Exists,
    "CAIRN_EINVAL": InvalidArgument,
    "CAIRN_EQUERY": InvalidArgument,
    "CAIRN_ELOCKED": Locked,
    "CAIRN_EPERM": ReadOnly,
    "CAIRN_EUNAVAIL": Unavailable,
}


# The stable status codes (cairn.h), for a failure that came without its
# JSON (a close, or error text that did not parse).
_NAMES = {-1: "CAIRN_ENOTFOUND", -2: "CAIRN_EEXIST", -3: "CAIRN_EINVAL", -4: "CAIRN_ENOMEM",
          -5: "CAIRN_EIO", -6: "CAIRN_ECORRUPT", -7: "CAIRN_ECHECKSUM", -8: "CAIRN_EVERSION",
          -9: "CAIRN_EFULL", -10: "CAIRN_ELOCKED", -11: "CAIRN_EPERM", -12: "CAIRN_EUNAVAIL",
          -13: "CAIRN_EDEAD", -14: "CAIRN_EQUERY", -15: "CAIRN_ETOOBIG"}


def from_json(err):
    """The exception for the "error" member of a result."""
    code = err.get("code", "CAIRN_UNKNOWN")
    return _BY_CODE.get(code, Error)(code, err.get("status"), err.get("message", ""))


def from_status(status, message):
    """The exception for a bare status code."""
    code = _NAMES.get(status, "CAIRN_UNKNOWN")
    return _BY_CODE.get(code, Error)(code, status, message)


def invalid(message):
    """An InvalidArgument raised by the binding itself, before any call."""
    return InvalidArgument("CAIRN_EINVAL", -3, message)
