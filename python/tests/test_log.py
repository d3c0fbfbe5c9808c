"""log() and events(): appending events and paging through the log."""
import datetime
import time

import pytest

import cairn


def test_log_returns_increasing_sequence_numbers(store):
    a = store.log({"event": "start"})
    b = store.log("any JSON value", namespace="ns1")
    assert isinstance(a, int) and b == a + 1


def test_events_yields_records_oldest_first(store):
    store.log({"n": 1})
    store.log({"n": 2}, namespace="other")
    recs = list(store.events())
    assert [r["payload"] for r in recs] == [{"n": 1}, {"n": 2}]
    assert recs[0]["type"] == "event" and recs[1]["ns"] == "other"
    assert recs[0]["ts"].endswith("Z")


def test_events_filters_by_namespace_type_and_seq(store):
    store.add("a memory is a record too")
    s1 = store.log({"n": 1}, namespace="x")
    s2 = store.log({"n": 2}, namespace="y")
    assert [r["seq"] for r in store.events(namespace="x")] == [s1]
    assert [r["seq"] for r in store.events(type="event")] == [s1, s2]
    assert [r["type"] for r in store.events(type="memory")] == ["memory"]
    assert [r["seq"] for r in store.events(from_seq=s2)] == [s2]
    assert [r["seq"] for r in store.events(to_seq=s1, type="event")] == [s1]


def test_events_pages_through_more_than_one_answer(store):
    for i in range(2300):
        store.log({"i": i})
    it = store.events()
    assert iter(it) is it  # a generator, not a list
    assert [r["payload"]["i"] for r in it] == list(range(2300))
    assert [r["payload"]["i"] for r in store.events(limit=1500)] == list(range(1500))
    assert len(list(store.events(limit=3))) == 3


def test_events_since_a_datetime(store):
    store.log({"n": "old"})
    time.sleep(0.01)
    cut = datetime.datetime.now(datetime.timezone.utc)
    time.sleep(0.01)
    store.log({"n": "new"})
    assert [r["payload"]["n"] for r in store.events(since=cut)] == ["new"]
    assert [r["payload"]["n"] for r in store.events(until=cut)] == ["old"]


def test_events_raises_bad_arguments_at_the_call(store):
    with pytest.raises(cairn.InvalidArgument, match="type"):
        store.events(type="no such type")
    with pytest.raises(cairn.InvalidArgument, match="limit"):
        store.events(limit=0)
