"""Failures arrive as exceptions carrying the cairn code, status and message."""
import fcntl
import os
import pickle

import pytest

import cairn


def test_unknown_id_is_not_found_with_code_and_status(store):
    with pytest.raises(cairn.NotFound) as e:
        store.get("m0000000000000000")
    err = e.value
    assert (err.code, err.status) == ("CAIRN_ENOTFOUND", -1)
    assert "m0000000000000000" in err.message
    assert str(err) == "CAIRN_ENOTFOUND: " + err.message
    assert isinstance(err, cairn.Error) and isinstance(err, LookupError)


@pytest.mark.parametrize("method", ["delete", "restore", "history", "update"])
def test_every_id_method_says_not_found(store, method):
    with pytest.raises(cairn.NotFound):
        getattr(store, method)("m0000000000000000")


@pytest.mark.parametrize("call, names", [
    (lambda s: s.recall("x", k=0), "k: must be an integer from 1 to 1000"),
    (lambda s: s.add("x", importance=2), "importance: must be a number from 0 to 1"),
    (lambda s: s.add("x", category=5), "category: must be a string"),
    (lambda s: s.add("x", tags="a,b"), "tags: must be an array of strings"),
    (lambda s: s.add("x", expires_at="tomorrow"), "expires_at: \"tomorrow\" is not an ISO 8601"),
    (lambda s: s.recall("x", mode="fuzzy"), "mode: must be one of hybrid|lexical|semantic"),
    (lambda s: s.add("x", namespace="n" * 300), "namespace: at most 255 bytes"),
    (lambda s: s.call("memory_add", content="x", colour="red"), "unknown argument \"colour\""),
    (lambda s: s.call("memory_add"), "missing required argument \"content\""),
    (lambda s: s.add("x", metadata={"f": float("nan")}), "metadata: Out of range float"),
    (lambda s: s.add("x", metadata={"o": object()}), "metadata: object is not JSON"),
    (lambda s: s.add("a\x00b"), "content: holds a NUL"),
    (lambda s: s.log({"k": ["a\x00"]}), r"payload\.k\[0\]: holds a NUL"),
    (lambda s: s.add("\udcff"), "content: .*surrogate"),
])
def test_bad_arguments_raise_invalid_argument_naming_them(store, call, names):
    with pytest.raises(cairn.InvalidArgument, match=names) as e:
        call(store)
    assert (e.value.code, e.value.status) == ("CAIRN_EINVAL", -3)
    assert isinstance(e.value, ValueError)


def test_an_escaped_backslash_before_u0000_is_not_a_nul(store):
    m = store.add("a literal \\u0000 is fine")
    assert store.get(m["id"])["content"] == "a literal \\u0000 is fine"


def test_unknown_tool_is_not_found(store):
    with pytest.raises(cairn.NotFound, match="no tool named \"no_such_tool\""):
        store.call("no_such_tool")


def test_semantic_recall_without_vectors_is_unavailable(store):
    store.add("words only")
    with pytest.raises(cairn.Unavailable) as e:
        store.recall("words", mode="semantic")
    assert e.value.code == "CAIRN_EUNAVAIL" and e.value.status == -12


def test_read_only_store_refuses_writes_with_eperm(path):
    with cairn.Store(path) as w:
        m = w.add("written before")
    with cairn.Store(path, read_only=True) as r:
        assert r.get(m["id"])["content"] == "written before"
        assert r.recall("written")[0]["id"] == m["id"]
        for write in (lambda: r.add("x"), lambda: r.log({}), lambda: r.delete(m["id"]),
                      lambda: r.update(m["id"], importance=0.1),
                      lambda: r.causal_node("event", "e"), lambda: r.forget()):
            with pytest.raises(cairn.ReadOnly) as e:
                write()
            assert (e.value.code, e.value.status) == ("CAIRN_EPERM", -11)


def test_opening_a_missing_store_without_create(tmp_path):
    with pytest.raises(cairn.NotFound, match="no store at"):
        cairn.Store(str(tmp_path / "absent"), create=False)
    with pytest.raises(cairn.NotFound):
        cairn.Store(str(tmp_path / "absent"), read_only=True)
    assert not os.path.exists(tmp_path / "absent")


def test_bad_open_options(tmp_path):
    with pytest.raises(cairn.InvalidArgument, match="busy_timeout_ms"):
        cairn.Store(str(tmp_path / "s"), busy_timeout_ms=-1)
    with pytest.raises(cairn.InvalidArgument, match="embedder"):
        cairn.Store(str(tmp_path / "s"), embedder="neural")
    with pytest.raises(cairn.InvalidArgument, match="no store path"):
        cairn.Store("")


def test_a_writer_lock_held_too_long_is_locked(path):
    with cairn.Store(path, busy_timeout_ms=100) as s:
        with open(os.path.join(path, "LOCK"), "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)  # as another writer's turn would
            try:
                with pytest.raises(cairn.Locked) as e:
                    s.add("must wait")
                assert (e.value.code, e.value.status) == ("CAIRN_ELOCKED", -10)
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)
        assert s.add("after the turn")["content"] == "after the turn"


def test_errors_pickle_with_their_fields():
    e = pickle.loads(pickle.dumps(cairn.NotFound("CAIRN_ENOTFOUND", -1, "gone")))
    assert type(e) is cairn.NotFound and (e.code, e.status, e.message) == \
        ("CAIRN_ENOTFOUND", -1, "gone")


def test_codes_without_a_class_are_plain_errors():
    from cairn.errors import from_json, from_status
    e = from_json({"code": "CAIRN_ECORRUPT", "status": -6, "message": "bad bytes"})
    assert type(e) is cairn.Error and e.code == "CAIRN_ECORRUPT"
    assert type(from_status(-5, "io")) is cairn.Error
    assert type(from_status(-14, "q")) is cairn.InvalidArgument


def test_a_closed_store_refuses_calls(path):
    s = cairn.Store(path)
    s.close()
    s.close()  # a second close does nothing
    assert s.closed
    with pytest.raises(cairn.InvalidArgument, match="closed"):
        s.add("x")
