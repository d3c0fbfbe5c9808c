"""The memory methods of Store, each against what the tool returns."""
import datetime
import warnings
import os
import subprocess
import time

import pytest

import cairn

UTC = datetime.timezone.utc


def test_add_returns_the_memory_with_its_fields(store):
    m = store.add("the user prefers dark mode", namespace="u1", category="preference",
                  importance=0.8, tags=["ui", "theme"], metadata={"source": "chat"})
    assert m["id"].startswith("m")
    assert m["content"] == "the user prefers dark mode"
    assert m["namespace"] == "u1"
    assert m["category"] == "preference"
    assert m["importance"] == pytest.approx(0.8)
    assert m["metadata"] == {"source": "chat", "tags": ["ui", "theme"]}
    assert m["expiresAt"] is None
    assert isinstance(m["createdAt"], int)


def test_add_same_content_twice_is_one_memory(store):
    a = store.add("same words")
    b = store.add("same words")
    assert a["id"] == b["id"]
    assert store.stats()["total"] == 1


def test_get_returns_what_add_stored(store):
    m = store.add("stored text", category="fact")
    g = store.get(m["id"])
    assert g["id"] == m["id"] and g["content"] == "stored text"


def test_recall_finds_the_matching_memory_first(store):
    store.add("the cat sat on the mat")
    store.add("dogs bark at the postman")
    hits = store.recall("cat mat", k=5)
    assert hits and hits[0]["content"] == "the cat sat on the mat"
    assert "score" in hits[0]
    assert all("dogs" not in h["content"] for h in hits[:1])


def test_recall_filters_by_namespace_categories_and_tags(store):
    store.add("apples are red", namespace="a", category="fact", tags=["fruit"])
    store.add("apples are tasty", namespace="b", category="opinion", tags=["food"])
    assert [h["namespace"] for h in store.recall("apples", namespace="a")] == ["a"]
    both = store.recall("apples", namespace=["a", "b"])
    assert sorted(h["namespace"] for h in both) == ["a", "b"]
    assert [h["category"] for h in
            store.recall("apples", namespace=["a", "b"], categories=["opinion"])] == ["opinion"]
    assert [h["namespace"] for h in
            store.recall("apples", namespace=["a", "b"], tags=["fruit"])] == ["a"]


def test_recall_explain_adds_the_score_components(store):
    store.add("explain this ranking")
    hit = store.recall("ranking", explain=True)[0]
    assert hit["explain"]["source"] == "lexical"
    assert hit["explain"]["bm25"] > 0
    assert "explain" not in store.recall("ranking")[0]


def test_search_scores_the_best_match_one(store):
    store.add("postgres tuning guide")
    store.add("postgres backup notes")
    res = store.search("postgres tuning", limit=1)
    assert len(res) == 1
    assert res[0]["content"] == "postgres tuning guide"
    assert res[0]["score"] == pytest.approx(1.0)


def test_context_returns_a_text_block(store):
    store.add("deploys happen on fridays", category="fact")
    text = store.context("when are deploys")
    assert isinstance(text, str)
    assert "deploys happen on fridays" in text
    assert text.startswith("Relevant memories:")
    xml = store.context("deploys", format="xml")
    assert "<" in xml and "deploys happen on fridays" in xml


def test_get_all_lists_oldest_first_with_filters(store):
    a = store.add("first", category="x")
    b = store.add("second", category="y")
    c = store.add("elsewhere", namespace="other")
    # without a namespace, memory_list lists every namespace (recall: only "")
    assert [m["id"] for m in store.get_all()] == [a["id"], b["id"], c["id"]]
    assert [m["id"] for m in store.get_all(namespace="")] == [a["id"], b["id"]]
    assert [m["id"] for m in store.get_all(category="y")] == [b["id"]]
    assert [m["content"] for m in store.get_all(namespace="other")] == ["elsewhere"]
    assert len(store.get_all(limit=1)) == 1


def test_update_changes_fields_and_returns_the_memory(store):
    m = store.add("to be changed", tags=["old"])
    u = store.update(m["id"], category="decision", importance=0.9, tags=["new"],
                     expires_at="2099-01-01T00:00:00Z")
    assert u["category"] == "decision"
    assert u["importance"] == pytest.approx(0.9)
    assert u["metadata"]["tags"] == ["new"]
    assert u["expiresAt"] == 4070908800000
    assert store.update(m["id"], expires_at="never")["expiresAt"] is None
    assert store.get(m["id"])["category"] == "decision"


def test_delete_then_restore(store):
    m = store.add("removable")
    assert store.delete(m["id"], reason="test") is None
    with pytest.raises(cairn.NotFound):
        store.get(m["id"])
    r = store.restore(m["id"])
    assert r["id"] == m["id"] and r["content"] == "removable"
    assert store.get(m["id"])["content"] == "removable"


def test_forget_prunes_expired_memories(store):
    past = int(time.time() * 1000) - 60_000
    gone = store.add("expired already", expires_at=past)
    kept = store.add("still good")
    dry = store.forget(mode="gentle", dry_run=True)
    assert dry["dry_run"] is True and dry["pruned"] == 1
    assert store.forget(mode="gentle")["pruned"] == 1
    assert [m["id"] for m in store.get_all()] == [kept["id"]]
    assert store.restore(gone["id"])["id"] == gone["id"]


def test_stats_counts_memories_and_categories(store):
    store.add("one", category="fact")
    store.add("two", category="fact")
    store.add("three", category="lesson")
    st = store.stats()
    assert st["total"] == 3
    assert st["byCategory"] == {"fact": 2, "lesson": 1}
    assert st["vectors"]["embedder"] is None


def test_history_lists_the_records_of_a_memory(store):
    m = store.add("with a past")
    store.update(m["id"], importance=0.2)
    store.delete(m["id"])
    h = store.history(m["id"])
    assert len(h) >= 3
    assert h[0]["type"] == "memory" and h[0]["payload"]["id"] == m["id"]
    assert [r["seq"] for r in h] == sorted(r["seq"] for r in h)


def test_call_returns_the_whole_result(store):
    r = store.call("memory_add", content="via call", category="fact")
    assert r["existed"] is False and r["memory"]["content"] == "via call"
    assert store.call("memory_add", content="via call")["existed"] is True


def test_tools_lists_every_tool_with_a_schema(store):
    names = {t["name"] for t in store.tools()}
    assert {"memory_add", "memory_recall", "log_query", "episode_new", "causal_path",
            "pattern_anti"} <= names
    add = next(t for t in cairn.tools() if t["name"] == "memory_add")
    assert add["inputSchema"]["required"] == ["content"]
    assert add["inputSchema"]["additionalProperties"] is False


def test_pruning_by_the_namespace_limit_warns(path):
    cli = os.path.join(os.path.dirname(cairn.library_path), "cairn")
    if not os.access(cli, os.X_OK):
        pytest.skip("no cairn tool next to the library to set max-memories")
    with cairn.Store(path) as s:
        s.add("first of three")
        s.add("second of three")
    subprocess.run([cli, "--store", path, "config", "max-memories", "2"], check=True,
                   stdout=subprocess.DEVNULL)
    with cairn.Store(path) as s:
        with pytest.warns(cairn.PrunedWarning) as w:
            s.add("third of three")
        assert w[0].message.result["count"] == 1
        assert w[0].message.result["limit"] == 2
        assert s.stats()["total"] == 2
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a second store within the limit: no warning
            s.add("elsewhere", namespace="other")


# ---- times ------------------------------------------------------------------------

def test_datetime_since_until_select_by_creation_time(store):
    a = store.add("early one")
    time.sleep(0.01)
    b = store.add("late one")
    assert b["createdAt"] > a["createdAt"]
    cut = datetime.datetime.fromtimestamp(b["createdAt"] / 1000, UTC)
    assert [m["id"] for m in store.get_all(since=cut)] == [b["id"]]
    assert [m["id"] for m in store.get_all(until=cut - datetime.timedelta(milliseconds=1))] \
        == [a["id"]]
    assert [m["id"] for m in store.recall("one", since=cut)] == [b["id"]]
    assert [m["id"] for m in store.get_all(since=b["createdAt"])] == [b["id"]]


def test_expires_at_accepts_aware_naive_int_and_text(store):
    aware = datetime.datetime(2099, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    assert store.add("aware", expires_at=aware)["expiresAt"] == 4081734489123
    plus2 = datetime.timezone(datetime.timedelta(hours=2))
    assert store.add("offset", expires_at=aware.astimezone(plus2))["expiresAt"] == 4081734489123
    naive = datetime.datetime(2099, 5, 6, 7, 8, 9)  # local time, as datetime.timestamp()
    assert store.add("naive", expires_at=naive)["expiresAt"] == int(naive.timestamp()) * 1000
    assert store.add("int", expires_at=4081734489000)["expiresAt"] == 4081734489000
    assert store.add("text", expires_at="2099-05-06T07:08:09Z")["expiresAt"] == 4081734489000


def test_float_and_date_times_are_refused_naming_the_argument(store):
    with pytest.raises(cairn.InvalidArgument, match="^CAIRN_EINVAL: since: must be a datetime"):
        store.recall("x", since=time.time())
    with pytest.raises(cairn.InvalidArgument, match="until: .* not date"):
        store.get_all(until=datetime.date(2026, 1, 1))
    with pytest.raises(cairn.InvalidArgument, match="expires_at: .* not bool"):
        store.add("x", expires_at=True)


def test_get_all_pages_past_the_tools_limit(store):
    for i in range(1001):
        store.add("memory number %d" % i)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every match: nothing truncated, nothing to warn of
        ms = store.get_all()
    assert len(ms) == 1001
    assert ms[0]["content"] == "memory number 0" and ms[-1]["content"] == "memory number 1000"
    assert [m["content"] for m in store.get_all(limit=2, offset=999)] == [
        "memory number 999", "memory number 1000"]
    assert len(store.get_all(limit=10)) == 10