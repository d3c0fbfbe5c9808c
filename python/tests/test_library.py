"""Finding and checking libcairn, and the context manager."""
import ctypes
import ctypes.util
import subprocess
import sys

import pytest

import cairn
from cairn import _lib
from conftest import child_env


def test_the_loaded_library_is_a_0_2_release():
    assert cairn.library_version.startswith("0.2.")
    n = _lib.lib.cairn_version_number()
    assert (n // 10000, n // 100 % 100) == (0, 2)
    assert cairn.__version__.startswith("0.2.")


def test_another_minor_or_major_version_is_refused():
    _lib.check_version(200, "0.2.0", "x")
    _lib.check_version(299, "0.2.99", "x")
    with pytest.raises(ImportError, match=r"libcairn 0\.1\.0 \(version number 100\).*0\.2\.x"):
        _lib.check_version(100, "0.1.0", "/some/libcairn.so")
    with pytest.raises(ImportError, match=r"libcairn 0\.3\.0"):
        _lib.check_version(300, "0.3.0", "x")
    with pytest.raises(ImportError, match="1.1.0"):
        _lib.check_version(10100, "1.1.0", "x")
    with pytest.raises(ImportError):
        _lib.check_version(0, "0.0.0", "x")


def test_every_c_function_used_is_declared():
    for name, (restype, argtypes) in _lib._FUNCTIONS.items():
        fn = getattr(_lib.lib, name)
        assert fn.restype is restype and fn.argtypes == argtypes, name


def test_the_embedder_type_matches_cairn_embed_fn():
    t = _lib.EMBED_FN
    assert t._restype_ is ctypes.c_int
    assert t._argtypes_ == (ctypes.c_void_p, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t,
                            ctypes.POINTER(ctypes.c_float), ctypes.POINTER(ctypes.c_char))


def test_a_wrong_cairn_library_fails_the_import_naming_it(tmp_path):
    env = child_env()
    env["CAIRN_LIBRARY"] = str(tmp_path / "nowhere" / "libcairn.so")
    r = subprocess.run([sys.executable, "-c", "import cairn"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "ImportError: cairn: cannot load libcairn; tried: " in r.stderr
    assert str(tmp_path / "nowhere" / "libcairn.so") in r.stderr


def test_a_library_without_the_tool_interface_fails_the_import(tmp_path):
    env = child_env()
    env["CAIRN_LIBRARY"] = ctypes.util.find_library("m") or "libm.so.6"
    r = subprocess.run([sys.executable, "-c", "import cairn"], env=env, capture_output=True,
                       text=True)
    assert r.returncode != 0
    assert "has no cairn_version()" in r.stderr


def test_the_context_manager_closes(path):
    with cairn.Store(path) as s:
        assert not s.closed
        s.add("inside")
    assert s.closed
    with pytest.raises(cairn.InvalidArgument, match="closed"):
        s.get_all()
    with pytest.raises(RuntimeError):
        with cairn.Store(path) as s2:
            raise RuntimeError("leaves the block")
    assert s2.closed
    with cairn.Store(path, read_only=True) as r:
        assert [m["content"] for m in r.get_all()] == ["inside"]


def test_repr_names_the_path_and_state(path):
    s = cairn.Store(path)
    assert repr(s) == "<cairn.Store %r>" % path
    s.close()
    assert repr(s).endswith(" closed>")
