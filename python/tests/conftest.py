"""Fixtures: the package from this source tree (not an installed copy),
a fresh store per test, and a deterministic toy embedder.

The library is found as the package finds it: $CAIRN_LIBRARY (run-tests.sh
sets it), else the build tree next to this tree.
"""
import hashlib
import math
import os
import sys

import pytest

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, SRC)

import cairn  # noqa: E402

DIM = 16


def toy_embed(text):
    """Each word (lowercased) hashed into one of 16 dimensions, then the
    vector normalized: texts sharing words are similar, others are not."""
    v = [0.0] * DIM
    for w in text.lower().split():
        v[hashlib.sha256(w.encode()).digest()[0] % DIM] += 1.0
    n = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / n for x in v]


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "store")


@pytest.fixture
def store(path):
    with cairn.Store(path) as s:
        yield s


def child_env():
    """The environment for a child Python that imports this tree's package
    with the library the tests loaded."""
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC
    env["CAIRN_LIBRARY"] = cairn.library_path
    return env
