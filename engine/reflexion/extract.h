/*
 * extract.h - the session-log -> episode extractor: one agent session log
 * (markdown or JSON) in, one reflexion episode (a cJSON object) out.
 *
 * The episode is ReflexionMemory's "Data Types" shape (ADR-038 reflexion memory):
 *
 *   { "id": "episode-<session>", "session": "<session>",
 *     "timestamp": "YYYY-MM-DDTHH:MM:SSZ",
 *     "outcome": "success" | "partial" | "failure",
 *     "task": "...",
 *     "decisions": [ { "id": "d001", "timestamp", "type", "context", "chosen",
 *                      "rationale", "outcome", "effects": ["e002", ...] } ],
 *     "events":    [ { "id": "e001", "timestamp", "type", "content",
 *                      "caused_by": [...], "leads_to": [...] } ],
 *     "metrics":   { "duration_minutes", "tool_calls", "errors", "recoveries",
 *                    "commits", "files_changed" },
 *     "lessons":   [ "..." ] }
 *
 * decision types: design | implementation | test | recovery | routing;
 * event types: tool_call | commit | error | milestone | test | handoff.
 * Every string is valid UTF-8 without NUL and at most EXTRACT_STR_MAX bytes
 * (cut on a code point boundary); every array holds at most EXTRACT_ARR_MAX
 * items; every metric is an integer in 0..INT32_MAX.
 */
#ifndef CAIRN_EXTRACT_H
#define CAIRN_EXTRACT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "status.h" /* cairn__err, cairn__fail */

#define EXTRACT_STR_MAX 1000  /* bytes of any output string */
#define EXTRACT_ARR_MAX 1000  /* items of any output array */
#define EXTRACT_SESSION_MAX 255 /* bytes of a session id (a file name, less its extension) */

/* Build an episode from one agent session log. name: the log's file name
 * (basename, name_len bytes; the session id comes from it: the name without
 * its extension, e.g. "2025-12-20-session-37-latta-pr-review.md" ->
 * "2025-12-20-session-37-latta-pr-review"). data/len: the log's bytes,
 * markdown or JSON (JSON when the first non-blank byte is '{' or the name
 * ends in ".json", any case; a leading UTF-8 byte order mark is skipped).
 * On success *out is a new cJSON object (caller cJSON_Delete()s it) in the
 * episode shape above; on failure *out is NULL.
 * Errors: CAIRN_EINVAL (no session id from the name - empty, longer than
 * EXTRACT_SESSION_MAX, holding a slash, a backslash, a control character or
 * invalid UTF-8; no date in the log
 * nor a YYYY-MM-DD prefix on the name; JSON that does not parse; a JSON log
 * that is not an object; text that is not valid UTF-8 or holds a NUL byte,
 * or a JSON string holding \u0000;
 * also memory running out inside the JSON parser, which cJSON reports as a
 * parse failure), CAIRN_ENOMEM; e (may be NULL) says why in one line. Never prints, exits or
 * aborts. Thread-safe: no global state (cJSON's error pointer is not used). */
int cairn__extract_episode(const char *name, size_t name_len, const char *data, size_t len,
                           cJSON **out, cairn__err *e);

#endif /* CAIRN_EXTRACT_H */
