"""An embedder written in Python, called back by the library."""
import gc
import threading

import pytest

import cairn
from conftest import DIM, toy_embed


class Counting:
    """toy_embed, counting its calls and the texts it saw."""

    def __init__(self):
        self.texts = []

    def __call__(self, text):
        self.texts.append(text)
        return toy_embed(text)


def test_a_python_embedder_is_used_by_add_and_semantic_recall(path):
    emb = Counting()
    with cairn.Store(path, embedder=emb, embedder_name="toy-16", dim=DIM) as s:
        fruit = s.add("apple banana cherry")
        s.add("engine gearbox clutch")
        assert emb.texts == ["apple banana cherry", "engine gearbox clutch"]
        hits = s.recall("cherry apple", mode="semantic", k=1)
        assert [h["id"] for h in hits] == [fruit["id"]]
        assert emb.texts[-1] == "cherry apple"  # the query was embedded too
        st = s.stats()["vectors"]
        assert (st["count"], st["embedder"], st["dimensions"]) == (2, "toy-16", DIM)
        assert s.search("banana", mode="semantic")[0]["id"] == fruit["id"]


def test_the_callback_survives_garbage_collection(path):
    with cairn.Store(path) as s:
        s.set_embedder(lambda t: toy_embed(t), name="toy-16", dim=DIM)
        gc.collect()
        s.add("alpha beta")
        gc.collect()
        assert s.recall("alpha beta", mode="semantic")[0]["content"] == "alpha beta"


def test_the_text_is_exactly_len_bytes_of_utf8(path):
    emb = Counting()
    with cairn.Store(path, embedder=emb, embedder_name="toy-16", dim=DIM) as s:
        s.add("naïve café 🌍")
    assert emb.texts == ["naïve café 🌍"]


def test_an_embedder_that_raises_fails_the_call_not_the_process(path):
    def broken(text):
        raise RuntimeError("model offline: " + "é" * 400)  # longer than err's 256 bytes
    with cairn.Store(path, embedder=broken, embedder_name="broken", dim=DIM) as s:
        with pytest.raises(cairn.Error) as e:
            s.add("anything")
        assert e.value.code == "CAIRN_EIO"
        assert 'embedder "broken" failed: RuntimeError: model offline' in e.value.message
        assert isinstance(e.value.__cause__, RuntimeError)
        assert s.stats()["total"] == 0  # nothing stored
        s.set_embedder(toy_embed, name="toy-16", dim=DIM)  # the session goes on
        assert s.add("works again")["content"] == "works again"


@pytest.mark.parametrize("bad, says", [
    (lambda t: [0.0] * (DIM - 1), "returned 15 values, not 16"),
    (lambda t: None, "TypeError"),
    (lambda t: ["x"] * DIM, "ValueError"),
    (lambda t: [float("nan")] * DIM, "not finite"),
])
def test_an_embedder_returning_a_bad_vector_is_an_error(path, bad, says):
    with cairn.Store(path, embedder=bad, embedder_name="bad", dim=DIM) as s:
        with pytest.raises(cairn.Error, match=says):
            s.add("text")


def test_an_embedder_calling_its_own_store_fails_instead_of_hanging(path):
    holder = {}

    def reentrant(text):
        holder["store"].stats()
        return toy_embed(text)
    with cairn.Store(path, embedder=reentrant, embedder_name="re", dim=DIM) as s:
        holder["store"] = s
        with pytest.raises(cairn.Error) as e:
            s.add("text")
        assert isinstance(e.value.__cause__, cairn.InvalidArgument)
        assert "embedder called the store" in str(e.value.__cause__)


def test_another_embedders_vectors_are_refused(path):
    with cairn.Store(path, embedder=toy_embed, embedder_name="toy-16", dim=DIM) as s:
        s.add("has a vector")
    with cairn.Store(path) as s:  # auto: not the built-in's vectors, so none
        assert s.stats()["vectors"]["embedder"] == "toy-16"
        with pytest.raises(cairn.Unavailable):
            s.recall("vector", mode="semantic")
        with pytest.raises(cairn.InvalidArgument, match="toy-16"):
            s.set_embedder(toy_embed, name="other-model", dim=DIM)
        s.set_embedder(toy_embed, name="toy-16", dim=DIM)
        assert s.recall("has a vector", mode="semantic")[0]["content"] == "has a vector"


def test_set_embedder_checks_its_arguments(store):
    with pytest.raises(cairn.InvalidArgument, match="name"):
        store.set_embedder(toy_embed, dim=DIM)
    with pytest.raises(cairn.InvalidArgument, match="dim"):
        store.set_embedder(toy_embed, name="toy")
    with pytest.raises(cairn.InvalidArgument, match="dim: must be from 1 to 65536"):
        store.set_embedder(toy_embed, name="toy", dim=0)
    with pytest.raises(cairn.InvalidArgument, match="1-63 bytes"):
        store.set_embedder(toy_embed, name="x" * 64, dim=DIM)
    with pytest.raises(cairn.InvalidArgument, match="fn"):
        store.set_embedder("not callable", name="toy", dim=DIM)
    with pytest.raises(cairn.InvalidArgument, match="only with a callable"):
        cairn.Store(store.path, embedder="none", dim=4)


def test_set_embedder_none_goes_back_to_lexical(store):
    store.set_embedder(toy_embed, name="toy-16", dim=DIM)
    store.add("alpha with a vector")
    store.set_embedder(None)
    store.add("bravo without one")
    assert store.stats()["vectors"]["count"] == 1
    assert [h["content"] for h in store.recall("bravo")] == ["bravo without one"]
    with pytest.raises(cairn.Unavailable, match="no embedder"):
        store.recall("alpha", mode="semantic")


def test_builtin_embedder_by_name(path):
    with cairn.Store(path, embedder="builtin") as s:
        s.add("the built-in embedder hashes words")
        v = s.stats()["vectors"]
        assert v["count"] == 1 and v["embedder"] and v["dimensions"] > 0
        assert s.recall("hashes words", mode="semantic")
    with cairn.Store(path, embedder="auto") as s:  # its own vectors: auto takes it
        assert s.recall("hashes words", mode="semantic")
    with cairn.Store(path, embedder="none") as s:
        with pytest.raises(cairn.Unavailable):
            s.recall("hashes words", mode="semantic")


def test_embedder_from_several_threads(path):
    errors = []
    with cairn.Store(path, embedder=toy_embed, embedder_name="toy-16", dim=DIM) as s:
        def work(t):
            try:
                for i in range(20):
                    s.add("thread %d item %d" % (t, i))
                    s.recall("thread %d" % t, mode="semantic")
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                errors.append(e)
        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert s.stats()["vectors"]["count"] == 80
