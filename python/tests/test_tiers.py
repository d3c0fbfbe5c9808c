"""The cognitive tiers through the tool interface: the memory stream,
core memory, archival memory, reflections and their statistics."""
import pytest

import cairn


def test_stream_core_archival_reflection(store):
    a = store.call("stream_add", content="fixed the flaky CI job", cycle=12, role="ops",
                   importance=9, issue_refs=[84])
    assert a["existed"] is False and a["entry"]["issueRefs"] == [84]
    store.call("stream_add", content="fixed the flaky CI job", cycle=13, role="qa")
    listed = store.call("stream_list", cycle_from=12, cycle_to=13)["entries"]
    assert [e["cycle"] for e in listed] == [12, 13]
    found = store.call("stream_search", query="flaky", role="ops")["entries"]
    assert len(found) == 1 and found[0]["cycle"] == 12

    store.call("core_set", section="sprint", value='{"goal": "demo"}')
    item = store.call("core_append", section="blockers", value="CI red")["item"]
    core = store.call("core_show")
    assert core["sections"]["sprint"] == {"goal": "demo"}
    assert [b["id"] for b in core["sections"]["blockers"]] == [item["id"]]

    store.call("archival_insert", content="ADR-7: seal segments with zstd", type="adr",
               date="2026-02-01", wait=True)
    assert len(store.call("archival_search", query="zstd", type="adr")["entries"]) == 1

    store.call("reflection_add", content="shared runners flake", cycle=13)
    stats = store.call("tiers_stats")
    assert stats["recall"]["entryCount"] == 2
    assert stats["lastReflection"]["cycle"] == 13
    assert stats["core"]["blockerCount"] == 1


def test_tier_errors_carry_the_code(store):
    store.call("stream_add", content="x", cycle=5, role="qa")
    with pytest.raises(cairn.InvalidArgument) as e:
        store.call("stream_list", cycle_from=9, cycle_to=7)
    assert e.value.code == "CAIRN_EQUERY"
    with pytest.raises(cairn.NotFound) as e:
        store.call("stream_list", cycle_from=50, cycle_to=60)
    assert e.value.code == "CAIRN_ENOTFOUND" and "5..5" in str(e.value)
    with pytest.raises(cairn.InvalidArgument):
        store.call("core_set", section="roleState", value="no role given")
