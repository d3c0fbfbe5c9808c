"""The build backend of the cairn package (PEP 517), in the tree, with no
dependencies.

Why not setuptools: `pip install ./python` builds in an isolated
environment into which pip first installs the build requirements from the
network. Offline, that fails unless the user adds --no-build-isolation, and
even then setuptools (< 70.1) needs the `wheel` package, which a venv or a
pyenv Python lacks. This backend requires nothing (pyproject.toml:
requires = []), so the plain command works offline with pip 20 or later
(PEP 517 backend-path) on Python 3.8 or later: Debian 12's python3, a
venv, pyenv.

What it builds: a wheel, which is a zip of the package's files plus
cairn-VERSION.dist-info/{METADATA, WHEEL, RECORD} (PEP 427, PEP 376). The
package is pure Python (it loads libcairn.so at import, which is not in the
wheel), so the wheel is py3-none-any. Entries carry a fixed date, so the
same sources give the same bytes. No sdist: pip installs a directory
without one.

The version is written once, as __version__ in cairn/__init__.py.
"""
import base64
import hashlib
import os
import re
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "cairn"
SUMMARY = "Python binding of libcairn, an embeddable memory engine for AI agents"
REQUIRES_PYTHON = ">=3.8"
DATE = (1980, 1, 1, 0, 0, 0)  # the earliest a zip entry can hold


def _version():
    with open(os.path.join(ROOT, NAME, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if m is None:
        raise RuntimeError("no __version__ in cairn/__init__.py")
    return m.group(1)


def _metadata(version):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\n"
            "Requires-Python: %s\nDescription-Content-Type: text/markdown\n\n%s"
            % (NAME, version, SUMMARY, REQUIRES_PYTHON, readme)).encode("utf-8")


def _package_files():
    """(path in the wheel, bytes) of every .py of the package."""
    out = []
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, NAME)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith(".py"):
                full = os.path.join(dirpath, fn)
                with open(full, "rb") as f:
                    out.append((os.path.relpath(full, ROOT).replace(os.sep, "/"), f.read()))
    return out


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d\n" % (path, digest, len(data))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    info = "%s-%s.dist-info" % (NAME, version)
    files = _package_files() + [
        (info + "/METADATA", _metadata(version)),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: cairn_build\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        (info + "/top_level.txt", (NAME + "\n").encode()),
    ]
    record = "".join(_record_line(p, d) for p, d in files) + info + "/RECORD,,\n"
    files.append((info + "/RECORD", record.encode()))
    name = "%s-%s-py3-none-any.whl" % (NAME, version)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            entry = zipfile.ZipInfo(path, DATE)
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return name
