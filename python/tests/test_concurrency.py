"""Several Stores, threads and processes on one store."""
import subprocess
import sys
import threading
import time

import cairn
from conftest import child_env

CHILD = """
import sys, cairn
with cairn.Store(sys.argv[1]) as s:
    for i in range(50):
        s.add("from the child %d" % i, namespace="shared")
        s.log({"child": i})
"""


def test_two_stores_on_one_directory_see_each_others_writes(path):
    with cairn.Store(path) as a, cairn.Store(path) as b:
        m = a.add("alpha written by a")
        assert b.get(m["id"])["content"] == "alpha written by a"
        n = b.add("bravo written by b")
        assert {x["id"] for x in a.get_all()} == {m["id"], n["id"]}
        assert [h["id"] for h in a.recall("bravo")] == [n["id"]]


def test_a_child_process_and_this_one_write_the_same_store(path):
    with cairn.Store(path) as s:
        s.add("created first")
    child = subprocess.Popen([sys.executable, "-c", CHILD, path], env=child_env())
    with cairn.Store(path) as s:
        for i in range(50):
            s.add("from the parent %d" % i, namespace="shared")
            s.log({"parent": i})
    assert child.wait(timeout=60) == 0
    with cairn.Store(path, read_only=True) as s:
        shared = s.get_all(namespace="shared")
        assert len(shared) == 100
        assert sum(1 for r in s.events(type="event")) == 100


def test_threads_share_one_store(store):
    errors = []

    def work(t):
        try:
            for i in range(25):
                store.add("thread %d memory %d" % (t, i))
                store.recall("memory %d" % i)
                store.log({"t": t, "i": i})
        except Exception as e:  # noqa: BLE001 - collected and asserted below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.stats()["total"] == 200
    assert len(list(store.events(type="event"))) == 200


def test_close_waits_for_a_call_in_flight(path):
    started = threading.Event()

    def slow(text):
        started.set()
        time.sleep(0.2)
        return [1.0, 0.0]
    s = cairn.Store(path, embedder=slow, embedder_name="slow", dim=2)
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("m", s.add("slow to embed")))
    t.start()
    assert started.wait(5)
    s.close()  # must wait for the add, not free the session under it
    t.join()
    assert result["m"]["content"] == "slow to embed"
    assert s.closed
    with cairn.Store(path, read_only=True) as r:
        assert r.get(result["m"]["id"])["content"] == "slow to embed"
