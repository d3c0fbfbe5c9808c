/*
 * test_extract.c - the session-log -> episode extractor
 * (engine/reflexion/extract*.c): the session id, timestamp, task, outcome,
 * events, decisions, lessons and metrics it reads from small markdown and
 * JSON logs written for these tests; the outcome rule; UTC conversion of
 * work-log times; commit dedup and the starting commit; the errors (bad
 * names, no date, bad JSON, non-object JSON, invalid UTF-8, NUL, \u0000); and the
 * caps on strings and arrays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extract.h"

static cJSON *extract_ok(const char *name, const char *log, size_t len)
{
    cairn__err e = {{0}};
    cJSON *ep = NULL;
    int rc = cairn__extract_episode(name, strlen(name), log, len, &ep, &e);
    if (rc != CAIRN_OK)
        fail_msg("extract %s: %d %s", name, rc, e.msg);
    assert_non_null(ep);
    return ep;
}

static cJSON *extract_s(const char *name, const char *log)
{
    return extract_ok(name, log, strlen(log));
}

static void extract_fails(const char *name, size_t name_len, const char *log, size_t len,
                          const char *msg_part)
{
    cairn__err e = {{0}};
    cJSON *ep = (cJSON *)1;
    assert_int_equal(cairn__extract_episode(name, name_len, log, len, &ep, &e), CAIRN_EINVAL);
    assert_null(ep);
    if (strstr(e.msg, msg_part) == NULL)
        fail_msg("message \"%s\" lacks \"%s\"", e.msg, msg_part);
}

static const char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsString(v))
        fail_msg("\"%s\" is not a string", k);
    return v->valuestring;
}

static int int_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsNumber(v))
        fail_msg("\"%s\" is not a number", k);
    return v->valueint;
}

static const cJSON *arr_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    if (!cJSON_IsArray(v))
        fail_msg("\"%s\" is not an array", k);
    return v;
}

static const cJSON *item(const cJSON *o, const char *k, int i)
{
    const cJSON *v = cJSON_GetArrayItem(arr_of(o, k), i);
    if (v == NULL)
        fail_msg("%s[%d] is missing", k, i);
    return v;
}

static int metric(const cJSON *ep, const char *k)
{
    return int_of(cJSON_GetObjectItemCaseSensitive(ep, "metrics"), k);
}

/* Number of events of a type. */
static int count_type(const cJSON *ep, const char *type)
{
    const cJSON *it;
    int n = 0;
    cJSON_ArrayForEach(it, arr_of(ep, "events"))
        n += strcmp(str_of(it, "type"), type) == 0;
    return n;
}

/* The first event whose content contains part, or fail. */
static const cJSON *event_with(const cJSON *ep, const char *part)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr_of(ep, "events"))
        if (strstr(str_of(it, "content"), part) != NULL)
            return it;
    fail_msg("no event mentions \"%s\"", part);
    return NULL;
}

static int has_ref(const cJSON *o, const char *k, const char *id)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, arr_of(o, k))
        if (strcmp(it->valuestring, id) == 0)
            return 1;
    return 0;
}

static const char MD_LOG[] =
    "# Session 12: Widget cache eviction\n"
    "\n"
    "**Date**: 2031-03-04\n"
    "**Objective**: Fix the widget cache eviction bug\n"
    "**Duration**: ~1.5 hours\n"
    "**Starting Commit**: 0a1b2c3d\n"
    "\n"
    "## Protocol Compliance\n"
    "\n"
    "- [x] Read the handoff notes\n"
    "- [x] Noted commit 7e7e7e7 from the previous session\n"
    "\n"
    "## Work Log\n"
    "\n"
    "- [x] Reproduced the stale entry with a failing unit test\n"
    "- Rewrote the LRU list so eviction is O(1)\n"
    "- Committed the rewrite as abc1234 (commit)\n"
    "- Build broke on the arm runner\n"
    "- [ ] Benchmark the new list\n"
    "\n"
    "```bash\n"
    "make check\n"
    "# a comment is no command\n"
    "git push origin fix/widget \\\n"
    "  --force-with-lease\n"
    "```\n"
    "\n"
    "**Decision**: Keep an intrusive list because it needs no allocation on the hot path\n"
    "\n"
    "### Incident: Lost cache lines\n"
    "\n"
    "The warm-up script wiped the shared cache.\n"
    "**Resolution**: restored the snapshot and pinned the script version\n"
    "\n"
    "## Lessons Learned\n"
    "\n"
    "1. Reproduce before rewriting\n"
    "2. **Pin tool versions** in scripts\n"
    "\n"
    "## Next Steps\n"
    "\n"
    "- Benchmark on the arm runner\n"
    "\n"
    "## Session End\n"
    "\n"
    "| Req | Step | Status | Evidence |\n"
    "|-----|------|--------|----------|\n"
    "| MUST | Commit all changes | [x] | Commit SHA: def5678 |\n"
    "| SHOULD | Update the plan | [ ] | later |\n"
    "\n"
    "**Files Modified**: 3 source files\n";

/* The markdown header and sections give the episode's fields. */
static void markdown_log_gives_the_episode_fields(void **state)
{
    cJSON *ep = extract_s("2031-03-05-session-12-widget-cache.md", MD_LOG);
    (void)state;
    assert_string_equal(str_of(ep, "session"), "2031-03-05-session-12-widget-cache");
    assert_string_equal(str_of(ep, "id"), "episode-2031-03-05-session-12-widget-cache");
    /* the Date line wins over the name's date */
    assert_string_equal(str_of(ep, "timestamp"), "2031-03-04T00:00:00Z");
    assert_string_equal(str_of(ep, "task"), "Fix the widget cache eviction bug");
    assert_string_equal(str_of(ep, "outcome"), "success");
    assert_int_equal(metric(ep, "duration_minutes"), 90);
    assert_int_equal(metric(ep, "files_changed"), 3);
    cJSON_Delete(ep);
}

/* Work items, commits, errors, tools and hand-offs each become events. */
static void markdown_log_gives_typed_events(void **state)
{
    cJSON *ep = extract_s("2031-03-05-session-12-widget-cache.md", MD_LOG);
    const cJSON *rep, *rew, *com, *err, *fix;
    (void)state;
    rep = event_with(ep, "Reproduced the stale entry");
    rew = event_with(ep, "Rewrote the LRU list");
    com = event_with(ep, "Commit: abc1234");
    err = event_with(ep, "Build broke on the arm runner");
    assert_string_equal(str_of(rep, "type"), "test");
    assert_string_equal(str_of(rew, "type"), "milestone");
    assert_string_equal(str_of(com, "type"), "commit");
    assert_string_equal(str_of(err, "type"), "error");
    assert_string_equal(str_of(event_with(ep, "Lost cache lines"), "type"), "error");
    fix = event_with(ep, "restored the snapshot");
    assert_string_equal(str_of(fix, "type"), "milestone");
    /* work items are chained in order; the commit is caused by its item */
    assert_true(has_ref(rep, "leads_to", str_of(rew, "id")));
    assert_true(has_ref(rew, "caused_by", str_of(rep, "id")));
    assert_true(has_ref(com, "caused_by", str_of(event_with(ep, "Committed the rewrite"), "id")));
    assert_true(has_ref(fix, "caused_by", str_of(event_with(ep, "Lost cache lines"), "id")));
    /* the two shell commands (a continuation line and a comment are none) */
    assert_int_equal(count_type(ep, "tool_call"), 2);
    assert_string_equal(str_of(event_with(ep, "Ran: git push"), "type"), "tool_call");
    assert_int_equal(metric(ep, "tool_calls"), 2);
    assert_int_equal(count_type(ep, "handoff"), 1);
    assert_string_equal(str_of(event_with(ep, "Next step: Benchmark on the arm"), "type"),
                        "handoff");
    /* abc1234 and def5678; not the starting commit, not the one in the ceremony */
    assert_int_equal(count_type(ep, "commit"), 2);
    assert_int_equal(metric(ep, "commits"), 2);
    event_with(ep, "Commit: def5678");
    /* the unchecked box is not work done */
    {
        const cJSON *it;
        cJSON_ArrayForEach(it, arr_of(ep, "events"))
            assert_null(strstr(str_of(it, "content"), "Benchmark the new list"));
    }
    assert_int_equal(metric(ep, "errors"), 2);
    assert_int_equal(metric(ep, "recoveries"), 1);
    assert_string_equal(str_of(item(ep, "events", 0), "id"), "e001");
    assert_string_equal(str_of(item(ep, "events", 0), "timestamp"), "2031-03-04T00:00:00Z");
    cJSON_Delete(ep);
}

/* Decision lines, Rationale and lessons sections. */
static void markdown_log_gives_decisions_and_lessons(void **state)
{
    cJSON *ep = extract_s("2031-03-05-session-12-widget-cache.md", MD_LOG);
    const cJSON *d;
    (void)state;
    assert_int_equal(cJSON_GetArraySize(arr_of(ep, "decisions")), 1);
    d = item(ep, "decisions", 0);
    assert_string_equal(str_of(d, "id"), "d001");
    assert_string_equal(str_of(d, "chosen"), "Keep an intrusive list");
    assert_string_equal(str_of(d, "rationale"), "it needs no allocation on the hot path");
    assert_string_equal(str_of(d, "context"), "Work Log");
    assert_string_equal(str_of(d, "type"), "implementation");
    assert_string_equal(str_of(d, "outcome"), "success");
    assert_string_equal(str_of(d, "timestamp"), "2031-03-04T00:00:00Z");
    assert_int_equal(cJSON_GetArraySize(arr_of(d, "effects")), 0);
    assert_int_equal(cJSON_GetArraySize(arr_of(ep, "lessons")), 2);
    assert_string_equal(cJSON_GetArrayItem(arr_of(ep, "lessons"), 0)->valuestring,
                        "Reproduce before rewriting");
    assert_string_equal(cJSON_GetArrayItem(arr_of(ep, "lessons"), 1)->valuestring,
                        "Pin tool versions in scripts");
    cJSON_Delete(ep);
}

static const char *outcome_of(const char *log)
{
    static char buf[16];
    cJSON *ep = extract_s("2031-01-02-session-3.md", log);
    snprintf(buf, sizeof buf, "%s", str_of(ep, "outcome"));
    cJSON_Delete(ep);
    return buf;
}

/* The outcome rule: the worst signal wins; none means success. */
static void outcome_follows_status_and_end_checklist(void **state)
{
    (void)state;
    assert_string_equal(outcome_of("# S\n\n## Work\n\n- did it\n"), "success");
    assert_string_equal(outcome_of("# S\n**Status**: FAILED - the deploy was rolled back\n"),
                        "failure");
    assert_string_equal(outcome_of("# S\n**Status**: [IN_PROGRESS] awaiting review\n"), "partial");
    /* "Outcomes" lists results: its first item is no status line */
    assert_string_equal(outcome_of("# S\n\n## Outcomes\n\n- Error context includes exception types\n"
                                   "- Logging works\n"),
                        "success");
    assert_string_equal(outcome_of("# S\n\n## Outcome\n\nFailed: the deploy was rolled back\n"),
                        "failure");
    /* the first status word of a phrase counts */
    assert_string_equal(outcome_of("# S\n\n## Status\n\nCOMPLETE - all incomplete items filed\n"),
                        "success");
    /* a later Session Status line overrides nothing better: worst wins */
    assert_string_equal(outcome_of("# S\n**Status**: [COMPLETE]\n\n## Notes\n\n"
                                   "**Session Status**: [IN_PROGRESS] waiting on CI\n"),
                        "partial");
    /* an undone box in a closure checklist, unless marked N/A */
    assert_string_equal(outcome_of("# S\n\n## Session Closure Checklist\n\n- [x] pushed\n"
                                   "- [ ] PR created\n"),
                        "partial");
    assert_string_equal(outcome_of("# S\n\n## Session End\n\n- [x] pushed\n"
                                   "- [ ] Update plan (N/A - no plan)\n"),
                        "success");
    /* an undone MUST row; an undone SHOULD row is fine */
    assert_string_equal(outcome_of("# S\n\n## Session End\n\n| Req | Step | Status |\n|---|---|---|\n"
                                   "| MUST | Run lint | [ ] |\n"),
                        "partial");
    assert_string_equal(outcome_of("# S\n\n## Session End\n\n| Req | Step | Status |\n|---|---|---|\n"
                                   "| SHOULD | Run lint | [ ] |\n"),
                        "success");
    /* a status about something else (a PR's CI) in a context section is not the session's */
    assert_string_equal(outcome_of("# S\n\n## Investigation Context\n\n**Status**: FAILURE\n"),
                        "success");
}

static const char JSON_LOG[] =
    "{\n"
    "  \"schemaVersion\": \"1.0\",\n"
    "  \"session\": {\"number\": 41, \"date\": \"2031-05-06\", \"branch\": \"fix/x\",\n"
    "              \"startingCommit\": \"1111aaa\",\n"
    "              \"objective\": \"Make the importer reject duplicate ids\"},\n"
    "  \"protocolCompliance\": {\n"
    "    \"sessionStart\": {\"handoffRead\": {\"complete\": false, \"level\": \"MUST\"}},\n"
    "    \"sessionEnd\": {\n"
    "      \"changesCommitted\": {\"complete\": true, \"level\": \"MUST\",\n"
    "                             \"evidence\": \"Commits 2222bbbb, 3333cccc\"},\n"
    "      \"validationPassed\": {\"Complete\": true, \"level\": \"MUST\",\n"
    "                             \"Evidence\": \"pytest: 12 passed\"},\n"
    "      \"retrospectiveInvoked\": {\"complete\": false, \"level\": \"SHOULD\", \"evidence\": \"\"}\n"
    "    }\n"
    "  },\n"
    "  \"workLog\": [\n"
    "    {\"timestamp\": \"2031-05-06T18:00:00-08:00\",\n"
    "     \"action\": \"Selected the hash-set approach because ids are dense\",\n"
    "     \"result\": \"design noted\", \"files\": [\"a.py\", \"b.py\"]},\n"
    "    {\"timestamp\": \"2031-05-06T18:45:00-08:00\",\n"
    "     \"action\": \"Implemented the check\", \"result\": \"Commit 2222bbbb created\",\n"
    "     \"files\": [\"a.py\", \"c.py\"]},\n"
    "    {\"time\": \"T3\", \"entry\": \"Import failed on the fixture with a KeyError\"},\n"
    "    \"Added regression tests for duplicate ids\",\n"
    "    {\"action\": \"retrospective\", \"details\": [\"Measure before guessing\"]}\n"
    "  ],\n"
    "  \"decisions\": [\n"
    "    {\"decision\": \"Reject rather than merge duplicates\",\n"
    "     \"rationale\": \"silent merges hide bad exports\",\n"
    "     \"alternative\": \"merge the newer record\"}\n"
    "  ],\n"
    "  \"learnings\": [\"Duplicate ids come from re-exports\", {\"text\": \"Keep fixtures small\"}],\n"
    "  \"nextSteps\": [\"Open the pull request\"],\n"
    "  \"endingCommit\": \"3333cccc\"\n"
    "}\n";

/* A JSON log: session fields, work log events with UTC times, commits. */
static void json_log_gives_the_episode(void **state)
{
    cJSON *ep = extract_s("2031-05-06-session-41-dup-ids.json", JSON_LOG);
    const cJSON *sel, *imp, *c2, *fail, *tests, *end;
    (void)state;
    assert_string_equal(str_of(ep, "session"), "2031-05-06-session-41-dup-ids");
    assert_string_equal(str_of(ep, "timestamp"), "2031-05-06T00:00:00Z");
    assert_string_equal(str_of(ep, "task"), "Make the importer reject duplicate ids");
    assert_string_equal(str_of(ep, "outcome"), "success");
    sel = event_with(ep, "Selected the hash-set approach");
    imp = event_with(ep, "Implemented the check -> Commit 2222bbbb created");
    assert_string_equal(str_of(sel, "timestamp"), "2031-05-07T02:00:00Z"); /* -08:00 to UTC */
    assert_string_equal(str_of(imp, "timestamp"), "2031-05-07T02:45:00Z");
    assert_int_equal(metric(ep, "duration_minutes"), 45);
    c2 = event_with(ep, "Commit: 2222bbbb");
    assert_string_equal(str_of(c2, "type"), "commit");
    assert_true(has_ref(c2, "caused_by", str_of(imp, "id")));
    fail = event_with(ep, "Import failed on the fixture");
    assert_string_equal(str_of(fail, "type"), "error");
    assert_string_equal(str_of(fail, "timestamp"), "2031-05-06T00:00:00Z"); /* "T3" is no time */
    tests = event_with(ep, "Added regression tests");
    assert_string_equal(str_of(tests, "type"), "test");
    assert_true(has_ref(tests, "caused_by", str_of(fail, "id")));
    assert_string_equal(str_of(event_with(ep, "validationPassed: pytest: 12 passed"), "type"),
                        "test");
    end = event_with(ep, "Commit: 3333cccc");
    assert_string_equal(str_of(end, "type"), "commit");
    /* 2222bbbb once though named three times; the starting commit never */
    assert_int_equal(count_type(ep, "commit"), 2);
    assert_int_equal(metric(ep, "commits"), 2);
    assert_string_equal(str_of(event_with(ep, "Next step: Open the pull request"), "type"),
                        "handoff");
    assert_int_equal(metric(ep, "files_changed"), 3); /* a.py, b.py, c.py */
    assert_int_equal(metric(ep, "errors"), 1);
    assert_int_equal(metric(ep, "recoveries"), 0);
    assert_int_equal(metric(ep, "tool_calls"), 0);
    cJSON_Delete(ep);
}

/* A "Decision N: topic" heading with its options and a Decision line is one
 * decision: the topic its context, the options its options. */
static void markdown_options_belong_to_their_decision(void **state)
{
    cJSON *ep = extract_s("2031-05-06-session-42.md",
                          "# S\n\n## Decisions\n\n### Decision 1: Hook failure mode\n\n"
                          "**Options:**\n1. Keep fail-open\n2. Change to fail-closed\n\n"
                          "**Decision**: Fail-closed\n**Rationale**: safer\n\n"
                          "### Decision 2: Retry budget\n\n**Decision**: three retries\n");
    const cJSON *d0, *d1;
    (void)state;
    assert_int_equal(cJSON_GetArraySize(arr_of(ep, "decisions")), 2);
    d0 = item(ep, "decisions", 0);
    assert_string_equal(str_of(d0, "context"), "Hook failure mode");
    assert_string_equal(str_of(d0, "chosen"), "Fail-closed");
    assert_string_equal(str_of(d0, "rationale"), "safer");
    assert_int_equal(cJSON_GetArraySize(arr_of(d0, "options")), 2);
    assert_string_equal(cJSON_GetArrayItem(arr_of(d0, "options"), 1)->valuestring,
                        "Change to fail-closed");
    d1 = item(ep, "decisions", 1);
    assert_string_equal(str_of(d1, "context"), "Retry budget");
    assert_string_equal(str_of(d1, "chosen"), "three retries");
    assert_null(cJSON_GetObjectItem(d1, "options"));
    cJSON_Delete(ep);
    /* the options' list ends: a blank before it, then another label's list
     * (consequences: no options, no decisions) and plain decisions after */
    ep = extract_s("2031-05-06-session-43.md",
                   "# S\n\n## Decisions\n\n### Decision 1: Mode\n\n**Options:**\n\n- open\n- closed\n\n"
                   "**Decision**: closed\n**Consequences:**\n- hooks block on error\n\n"
                   "## More decisions\n\n- Use ripgrep\n- Pin the toolchain\n");
    assert_int_equal(cJSON_GetArraySize(arr_of(ep, "decisions")), 3);
    d0 = item(ep, "decisions", 0);
    assert_int_equal(cJSON_GetArraySize(arr_of(d0, "options")), 2);
    assert_string_equal(str_of(item(ep, "decisions", 1), "chosen"), "Use ripgrep");
    assert_string_equal(str_of(item(ep, "decisions", 2), "chosen"), "Pin the toolchain");
    cJSON_Delete(ep);
}

/* JSON decisions, decisions from work items, learnings and retrospectives. */
static void json_log_gives_decisions_and_lessons(void **state)
{
    cJSON *ep = extract_s("2031-05-06-session-41-dup-ids.json", JSON_LOG);
    const cJSON *d0, *d1, *les;
    (void)state;
    assert_int_equal(cJSON_GetArraySize(arr_of(ep, "decisions")), 2);
    d0 = item(ep, "decisions", 0); /* from the work log, with its event as effect */
    assert_string_equal(str_of(d0, "chosen"), "Selected the hash-set approach");
    assert_string_equal(str_of(d0, "rationale"), "ids are dense");
    assert_string_equal(str_of(d0, "timestamp"), "2031-05-07T02:00:00Z");
    assert_true(has_ref(d0, "effects", str_of(event_with(ep, "Selected the hash-set"), "id")));
    assert_true(has_ref(event_with(ep, "Selected the hash-set"), "caused_by", "d001"));
    d1 = item(ep, "decisions", 1);
    assert_string_equal(str_of(d1, "id"), "d002");
    assert_string_equal(str_of(d1, "chosen"), "Reject rather than merge duplicates");
    assert_string_equal(str_of(d1, "rationale"), "silent merges hide bad exports");
    /* the alternative weighed is an option, not the context */
    assert_int_equal(cJSON_GetArraySize(arr_of(d1, "options")), 1);
    assert_string_equal(cJSON_GetArrayItem(arr_of(d1, "options"), 0)->valuestring,
                        "merge the newer record");
    assert_null(strstr(str_of(d1, "context"), "Alternative considered"));
    assert_string_equal(str_of(d1, "outcome"), "success");
    les = arr_of(ep, "lessons");
    assert_int_equal(cJSON_GetArraySize(les), 3);
    assert_string_equal(cJSON_GetArrayItem(les, 0)->valuestring, "Measure before guessing");
    assert_string_equal(cJSON_GetArrayItem(les, 1)->valuestring,
                        "Duplicate ids come from re-exports");
    assert_string_equal(cJSON_GetArrayItem(les, 2)->valuestring, "Keep fixtures small");
    cJSON_Delete(ep);
}

static const char *json_outcome(const char *log)
{
    static char buf[16];
    cJSON *ep = extract_s("2031-01-02-session-3.json", log);
    snprintf(buf, sizeof buf, "%s", str_of(ep, "outcome"));
    cJSON_Delete(ep);
    return buf;
}

/* JSON outcome: an undone MUST end item, a pending ending commit, status. */
static void json_outcome_rule(void **state)
{
    (void)state;
    assert_string_equal(json_outcome("{\"protocolCompliance\": {\"sessionEnd\": {\"lint\": "
                                     "{\"Complete\": false, \"level\": \"MUST\", \"Evidence\": \"\"}}}}"),
                        "partial");
    assert_string_equal(json_outcome("{\"protocolCompliance\": {\"sessionEnd\": {\"lint\": "
                                     "{\"complete\": false, \"level\": \"MUST\", "
                                     "\"evidence\": \"N/A - docs only\"}}}}"),
                        "success");
    assert_string_equal(json_outcome("{\"protocolCompliance\": {\"sessionEnd\": {\"lint\": "
                                     "{\"status\": \"done\", \"level\": \"MUST\"}}}}"),
                        "success");
    assert_string_equal(json_outcome("{\"endingCommit\": \"pending-push\"}"), "partial");
    assert_string_equal(json_outcome("{\"status\": \"FAILED: blocked on credentials\"}"),
                        "failure");
    assert_string_equal(json_outcome("{\"status\": \"COMPLETE\"}"), "success");
    /* a decision without its own outcome takes the episode's */
    {
        cJSON *ep = extract_s("2031-01-02-session-3.json",
                              "{\"status\": \"partial\", \"decisions\": [{\"decision\": \"a\"},"
                              " {\"decision\": \"b\", \"outcome\": \"failure\"}]}");
        assert_string_equal(str_of(item(ep, "decisions", 0), "outcome"), "partial");
        assert_string_equal(str_of(item(ep, "decisions", 1), "outcome"), "failure");
        cJSON_Delete(ep);
    }
}

/* No objective: "Session N - DATE"; a migrated stub's objective is none. */
static void task_falls_back_to_session_and_date(void **state)
{
    cJSON *ep;
    (void)state;
    ep = extract_s("2031-07-08-session-77.json",
                   "{\"session\": {\"number\": 77, \"date\": \"2031-07-08\", "
                   "\"objective\": \"[Migrated from markdown]\"}}");
    assert_string_equal(str_of(ep, "task"), "Session 77 - 2031-07-08");
    assert_int_equal(cJSON_GetArraySize(arr_of(ep, "events")), 0);
    assert_int_equal(metric(ep, "commits"), 0);
    cJSON_Delete(ep);
    /* markdown without objective: the title */
    ep = extract_s("2031-07-08-session-78.md", "# Session 78: Tidy the docs\n");
    assert_string_equal(str_of(ep, "task"), "Session 78: Tidy the docs");
    cJSON_Delete(ep);
    /* neither: the number from the name */
    ep = extract_s("2031-07-08-session-79.md", "nothing here\n");
    assert_string_equal(str_of(ep, "task"), "Session 79 - 2031-07-08");
    cJSON_Delete(ep);
}

/* The date: the log's, else the name's prefix; neither is an error. */
static void date_comes_from_log_or_name(void **state)
{
    cJSON *ep;
    (void)state;
    ep = extract_s("notes-from-friday.md", "# x\n- **Date**: 2030-12-31 23:59 UTC\n");
    assert_string_equal(str_of(ep, "timestamp"), "2030-12-31T23:59:00Z");
    assert_string_equal(str_of(ep, "task"), "x");
    cJSON_Delete(ep);
    /* an impossible date in the log falls back to the name */
    ep = extract_s("2032-02-29-session-1.json", "{\"session\": {\"date\": \"2031-02-29\"}}");
    assert_string_equal(str_of(ep, "timestamp"), "2032-02-29T00:00:00Z");
    cJSON_Delete(ep);
    ep = extract_s("2031-01-01-s.json", "{\"date\": \"2031-06-01T10:00:00+02:00\"}");
    assert_string_equal(str_of(ep, "timestamp"), "2031-06-01T08:00:00Z");
    cJSON_Delete(ep);
    /* a log that says when it started, and a name without a date */
    ep = extract_s("session-pr-1-autofix.json",
                   "{\"objective\":\"Fix CI\",\"startTime\":\"2026-08-14T07:54:00Z\"}");
    assert_string_equal(str_of(ep, "timestamp"), "2026-08-14T07:54:00Z");
    assert_string_equal(str_of(ep, "task"), "Fix CI");
    cJSON_Delete(ep);
    ep = extract_s("session-9.json", "{\"session\": {\"started_at\": \"2026-08-15 09:00\"}}");
    assert_string_equal(str_of(ep, "timestamp"), "2026-08-15T09:00:00Z");
    cJSON_Delete(ep);
    extract_fails("notes.md", 8, "# no date here\n", 15, "no date");
    extract_fails("2031-13-01-session-1.md", 23, "# x\n", 4, "no date");
}

/* Session ids that cannot be one, and bytes that are not text. */
static void bad_names_and_bytes_are_rejected(void **state)
{
    char longname[300];
    (void)state;
    extract_fails(".md", 3, "x", 1, "no session id");
    extract_fails("", 0, "x", 1, "no session id");
    extract_fails("a/b.md", 6, "x", 1, "slash");
    extract_fails("a\\b.md", 6, "x", 1, "slash");
    extract_fails("a\tb.md", 6, "x", 1, "control");
    extract_fails("2031-01-01-\xC3.md", 14, "x", 1, "invalid UTF-8");
    extract_fails("2031-01-01-a\0b.md", 16, "x", 1, "NUL");
    memset(longname, 'a', sizeof longname);
    memcpy(longname, "2031-01-01-", 11);
    memcpy(longname + 290, ".md", 3);
    extract_fails(longname, 293, "x", 1, "no session id");
    /* 255 bytes is still an id */
    memcpy(longname + 255, ".md", 3);
    {
        cairn__err e;
        cJSON *ep = NULL;
        assert_int_equal(cairn__extract_episode(longname, 258, "x", 1, &ep, &e), CAIRN_OK);
        assert_int_equal(strlen(str_of(ep, "session")), 255);
        cJSON_Delete(ep);
    }
    extract_fails("2031-01-01-s.md", 15, "ok \xC3\x28 bad", 10, "invalid UTF-8 at offset 3");
    extract_fails("2031-01-01-s.md", 15, "ok\xED\xA0\x80", 5, "invalid UTF-8"); /* surrogate */
    extract_fails("2031-01-01-s.md", 15, "ok\xC0\xAF", 4, "invalid UTF-8");     /* overlong */
    extract_fails("2031-01-01-s.md", 15, "ok\0ok", 5, "NUL byte at offset 2");
    extract_fails("2031-01-01-s.json", 17, "{\"a\": \"x\0\"}", 11, "NUL");
    /* a \u0000 escape in a JSON log: decoded, it would end the string */
    extract_fails("2031-01-01-s.json", 17, "{\"learnings\": [\"ok\", \"cut\\u0000here\"]}", 38,
                  "JSON log: learnings[1]: holds a NUL (\\u0000)");
}

/* JSON that does not parse, trails bytes, or is not an object. */
static void bad_json_is_rejected(void **state)
{
    (void)state;
    extract_fails("2031-01-01-s.json", 17, "{\"session\": ", 12, "does not parse");
    extract_fails("2031-01-01-s.md", 15, "  {\"a\": [1, 2}", 14, "does not parse");
    extract_fails("2031-01-01-s.json", 17, "{} {}", 5, "bytes after the object");
    extract_fails("2031-01-01-s.json", 17, "[1, 2]", 6, "not an object");
    extract_fails("2031-01-01-s.JSON", 17, "\"text\"", 6, "not an object");
    extract_fails("2031-01-01-s.json", 17, "", 0, "does not parse");
    /* wrong types inside are ignored, not errors */
    {
        cJSON *ep = extract_s("2031-01-01-s.json",
                              "{\"session\": 5, \"workLog\": {\"a\": 1}, \"decisions\": \"x\", "
                              "\"learnings\": [1, null, {}], \"nextSteps\": 3, "
                              "\"episodeMetrics\": {\"filesChanged\": -4}}");
        assert_int_equal(cJSON_GetArraySize(arr_of(ep, "events")), 0);
        assert_int_equal(cJSON_GetArraySize(arr_of(ep, "lessons")), 0);
        assert_int_equal(metric(ep, "files_changed"), 0);
        cJSON_Delete(ep);
    }
}

/* A byte order mark is skipped; a '{' after it makes the log JSON. */
static void byte_order_mark_is_skipped(void **state)
{
    cJSON *ep = extract_s("2031-01-01-s.md", "\xEF\xBB\xBF{\"session\": {\"objective\": \"bom\"}}");
    (void)state;
    assert_string_equal(str_of(ep, "task"), "bom");
    cJSON_Delete(ep);
}

/* Valid UTF-8 of at most 1000 bytes, cut on a code point. */
static int valid_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int k = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3
              : (*p & 0xF8) == 0xF0 ? 4 : 0;
        if (k == 0)
            return 0;
        for (int i = 1; i < k; i++)
            if ((p[i] & 0xC0) != 0x80)
                return 0;
        p += k;
    }
    return 1;
}

/* Long strings are cut to 1000 bytes on a code point; arrays stop at 1000. */
static void strings_and_arrays_are_capped(void **state)
{
    size_t cap = 64 * 1024, n = 0;
    char *log = malloc(cap);
    cJSON *ep;
    const char *c;
    (void)state;
    assert_non_null(log);
    n += (size_t)snprintf(log + n, cap - n, "# T\n\n## Work Log\n\n- [x] ");
    for (int i = 0; i < 400; i++) /* 1200 bytes of a 3-byte character */
        n += (size_t)snprintf(log + n, cap - n, "\xE2\x82\xAC");
    n += (size_t)snprintf(log + n, cap - n, "\n");
    for (int i = 0; i < 1500; i++)
        n += (size_t)snprintf(log + n, cap - n, "- [x] item %d\n", i);
    n += (size_t)snprintf(log + n, cap - n, "\n## Lessons\n\n");
    for (int i = 0; i < 1200; i++)
        n += (size_t)snprintf(log + n, cap - n, "- lesson %d\n", i);
    assert_true(n < cap - 1);
    ep = extract_ok("2031-01-01-big.md", log, n);
    assert_int_equal(cJSON_GetArraySize(arr_of(ep, "events")), 1000);
    assert_int_equal(cJSON_GetArraySize(arr_of(ep, "lessons")), 1000);
    c = str_of(item(ep, "events", 0), "content");
    assert_int_equal(strlen(c), 999); /* 333 whole characters */
    assert_true(valid_utf8(c));
    assert_string_equal(str_of(item(ep, "events", 999), "id"), "e1000");
    assert_string_equal(str_of(item(ep, "events", 999), "content"), "item 998");
    cJSON_Delete(ep);
    free(log);
}

/* Short and full forms of one hash are one commit. */
static void commits_are_counted_once(void **state)
{
    cJSON *ep = extract_s("2031-01-01-s.md",
                          "# T\n\n## Commits\n\n- `ab12cd3` - fix(io): retry short writes on EINTR\n"
                          "- ab12cd34ef56ab12cd34ef56ab12cd34ef56ab12 (same commit, full)\n"
                          "- 9999999 is no hash (no letter), nor deadbeef (no digit)\n");
    (void)state;
    assert_int_equal(count_type(ep, "commit"), 1);
    assert_string_equal(str_of(event_with(ep, "Commit: ab12cd3"), "content"),
                        "Commit: ab12cd3 - fix(io): retry short writes on EINTR");
    cJSON_Delete(ep);
}

static long fail_at, nalloc;

static void *failing_malloc(size_t n)
{
    return ++nalloc == fail_at ? NULL : malloc(n);
}

/* Every allocation of cJSON failing in turn: ENOMEM (or, inside the JSON
 * parser, which cannot tell it from bad input, EINVAL), nothing returned,
 * nothing leaked (the sanitizer build checks), until the run succeeds. */
static void allocation_failures_fail_cleanly(void **state)
{
    static const char *const NAMES[2] = {"2031-03-05-session-12-widget-cache.md",
                                         "2031-05-06-session-41-dup-ids.json"};
    static const char *const LOGS[2] = {MD_LOG, JSON_LOG};
    cJSON_Hooks hooks = {failing_malloc, free};
    (void)state;
    for (int k = 0; k < 2; k++) {
        int done = 0, nomem = 0;
        for (fail_at = 1; !done && fail_at < 100000; fail_at++) {
            cairn__err e = {{0}};
            cJSON *ep = (cJSON *)1;
            int rc;
            nalloc = 0;
            cJSON_InitHooks(&hooks);
            rc = cairn__extract_episode(NAMES[k], strlen(NAMES[k]), LOGS[k], strlen(LOGS[k]), &ep,
                                        &e);
            cJSON_InitHooks(NULL);
            if (rc == CAIRN_OK) {
                assert_true(nalloc < fail_at);
                cJSON_Delete(ep);
                done = 1;
                continue;
            }
            assert_null(ep);
            if (rc == CAIRN_EINVAL && k == 1 && strstr(e.msg, "does not parse") != NULL)
                continue;
            assert_int_equal(rc, CAIRN_ENOMEM);
            assert_string_equal(e.msg, "no memory");
            nomem++;
        }
        assert_true(done);
        assert_true(nomem > 100); /* the builder's allocations were all reached */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(markdown_log_gives_the_episode_fields),
        cmocka_unit_test(markdown_log_gives_typed_events),
        cmocka_unit_test(markdown_log_gives_decisions_and_lessons),
        cmocka_unit_test(outcome_follows_status_and_end_checklist),
        cmocka_unit_test(json_log_gives_the_episode),
        cmocka_unit_test(markdown_options_belong_to_their_decision),
        cmocka_unit_test(json_log_gives_decisions_and_lessons),
        cmocka_unit_test(json_outcome_rule),
        cmocka_unit_test(task_falls_back_to_session_and_date),
        cmocka_unit_test(date_comes_from_log_or_name),
        cmocka_unit_test(bad_names_and_bytes_are_rejected),
        cmocka_unit_test(bad_json_is_rejected),
        cmocka_unit_test(byte_order_mark_is_skipped),
        cmocka_unit_test(strings_and_arrays_are_capped),
        cmocka_unit_test(commits_are_counted_once),
        cmocka_unit_test(allocation_failures_fail_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
