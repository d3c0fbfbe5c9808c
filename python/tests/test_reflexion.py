"""Episodes, the causal graph and patterns."""
import datetime

import pytest

import cairn


def test_episode_new_get_and_list(store):
    ep = store.episode_new("s1", "fix the build", "success", lessons=["pin the compiler"],
                           metrics={"commits": 2},
                           timestamp=datetime.datetime(2026, 1, 2, 3, 4, 5,
                                                       tzinfo=datetime.timezone.utc))
    assert ep["id"] == "episode-s1"
    assert ep["lessons"] == ["pin the compiler"]
    assert ep["metrics"]["commits"] == 2
    assert ep["timestamp"] == "2026-01-02T03:04:05Z"
    assert store.episode_get("s1")["task"] == "fix the build"
    store.episode_new("s2", "other work", "failure")
    assert [e["session"] for e in store.episodes(outcome="failure")] == ["s2"]
    assert {e["session"] for e in store.episodes()} == {"s1", "s2"}


def test_episode_twice_needs_force(store):
    store.episode_new("s1", "first", "partial")
    with pytest.raises(cairn.Exists) as e:
        store.episode_new("s1", "again", "success")
    assert e.value.code == "CAIRN_EEXIST" and "force" in e.value.message
    assert store.episode_new("s1", "again", "success", force=True)["task"] == "again"


def test_episode_get_unknown_is_not_found(store):
    with pytest.raises(cairn.NotFound, match="no episode for session nope"):
        store.episode_get("nope")


def test_causal_graph_nodes_edges_path_status(store):
    a = store.causal_node("decision", "add a cache")
    b = store.causal_node("outcome", "requests got faster")
    assert a["type"] == "decision" and a["frequency"] == 1
    assert store.causal_node("decision", "add a cache")["frequency"] == 2
    e = store.causal_edge("add a cache", b["id"], "causes", weight=0.8)
    assert (e["source"], e["target"], e["type"]) == (a["id"], b["id"], "causes")
    assert e["weight"] == pytest.approx(0.8)
    p = store.causal_path("cache", "faster")
    assert p["found"] is True and p["depth"] == 1
    assert [n["label"] for n in p["path"]] == ["add a cache", "requests got faster"]
    miss = store.causal_path("cache", "nothing like this")
    assert miss["found"] is False and miss["path"] == []
    st = store.causal_status()
    assert (st["nodes"], st["edges"]) == (2, 1)


def test_causal_edge_to_an_unknown_node_is_not_found(store):
    store.causal_node("decision", "known")
    with pytest.raises(cairn.NotFound, match="target: no node"):
        store.causal_edge("known", "unknown", "causes")


def test_patterns_and_anti_patterns(store):
    p = store.pattern_add("retry flaky test", "test fails once", "rerun it",
                          description="CI noise", success_rate=0.9)
    assert p["name"] == "retry flaky test" and p["occurrences"] == 1
    for _ in range(2):
        store.pattern_add("force push", "history is messy", "git push -f", success_rate=0.1)
    assert [x["name"] for x in store.patterns(min_success_rate=0.5)] == ["retry flaky test"]
    anti = store.anti_patterns()
    assert [x["name"] for x in anti] == ["force push"]
    assert anti[0]["occurrences"] == 2
