/*
 * extract_int.h - what the three extractor files share: a bounded text
 * buffer, the episode builder the markdown and JSON readers feed, and the
 * word-level classifiers. Internal to engine/reflexion/extract*.c.
 *
 * The builder owns detached cJSON arrays (events, decisions, lessons) and
 * keeps the first allocation failure in `rc` (sticky): every later call is a
 * no-op, so the readers need no error paths of their own and the entry point
 * checks rc once at the end.
 */
#ifndef CAIRN_EXTRACT_INT_H
#define CAIRN_EXTRACT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "extract.h"

/* A string of at most EXTRACT_STR_MAX bytes of valid UTF-8, NUL-terminated.
 * Appending collapses white space and control characters to one space,
 * replaces invalid bytes with U+FFFD, and stops (full = 1) before a code
 * point that would not fit. */
typedef struct xtext {
    char s[EXTRACT_STR_MAX + 1];
    size_t n;
    int full;  /* something was cut off */
    int space; /* a space is pending (emitted before the next visible char) */
} xtext;

void cairn__xt_init(xtext *t);
/* Append raw bytes (JSON text: only white space is normalized). */
void cairn__xt_put(xtext *t, const char *p, size_t len);
void cairn__xt_puts(xtext *t, const char *s);
/* Append markdown inline text: drops emphasis markers (** __ `), turns
 * [text](url) into text, and leading check marks / bullets. */
void cairn__xt_md(xtext *t, const char *p, size_t len);

/* Outcome ranks: the episode's outcome is the worst signal seen. */
#define X_NONE (-1)
#define X_SUCCESS 0
#define X_PARTIAL 1
#define X_FAILURE 2

typedef struct xb {
    int rc;                     /* CAIRN_OK or the first CAIRN_ENOMEM */
    char ts[21];                /* the episode's timestamp (empty until known) */
    cJSON *events, *decisions, *lessons; /* detached arrays, owned here */
    cJSON *ev[EXTRACT_ARR_MAX]; /* events by index, for linking */
    size_t nev;
    cJSON *dc[EXTRACT_ARR_MAX]; /* decisions by index */
    unsigned char dc_fixed[EXTRACT_ARR_MAX]; /* the log gave this decision's outcome */
    size_t ndc, nlessons;
    uint64_t lhash[EXTRACT_ARR_MAX]; /* hashes of the lessons, for dedup */
    char sha[EXTRACT_ARR_MAX][41]; /* commits seen (lower-case hex) */
    size_t nsha;
    char start_sha[41];         /* the session's starting commit: never an event */
    int status;                 /* worst explicit status word seen (X_*) */
    long open_must;             /* MUST session-end items left undone */
    long long t_min, t_max;     /* span of timed events (epoch seconds) */
    int ntimed;
    long duration, tool_calls, files_changed; /* explicit metrics, -1 if none */
    long errors, recoveries, ntool;
    long number;                /* session number, -1 if none */
    xtext task;
} xb;

/* Builder: each returns the new item's index, or -1 (cap reached, empty
 * text, or out of memory). ts NULL means the episode's timestamp. */
int cairn__xb_event(xb *b, const char *type, const xtext *content, const char *ts);
/* options (may be NULL; taken, freed here): a cJSON array of the
 * alternatives weighed, kept as the decision's "options" when not empty. */
int cairn__xb_decision(xb *b, const char *type, const xtext *context, const xtext *chosen,
                       const xtext *rationale, const char *outcome, const char *ts,
                       struct cJSON *options);
/* Append option t (not empty) to *opts, made on first use; out of memory
 * fails the build. At most EXTRACT_ARR_MAX options. */
void cairn__xb_option(xb *b, struct cJSON **opts, const xtext *t);
void cairn__xb_lesson(xb *b, const xtext *t);
/* from leads_to to (and to caused_by from); ignores -1. */
void cairn__xb_link(xb *b, int from, int to);
/* decision d has effect event ev (and ev caused_by d). */
void cairn__xb_effect(xb *b, int d, int ev);
/* A work item: classified (milestone, test, error, handoff or tool_call),
 * counted in errors / recoveries, and made an event. */
int cairn__xb_work(xb *b, const xtext *t, const char *ts);
/* Every commit hash in p[0..len) (7..40 lower-case hex digits with a digit
 * and a letter) not seen before becomes a commit event caused by `cause`;
 * ctx (may be NULL: the words after the hash then) describes it. Returns
 * the last commit event, or -1. */
int cairn__xb_commits(xb *b, const char *p, size_t len, const xtext *ctx, int cause,
                      const char *ts);
/* The first hash in p[0..len) as the starting commit. */
void cairn__xb_start_commit(xb *b, const char *p, size_t len);
/* Note an event time for the duration (only when the log gave a time). */
void cairn__xb_timed(xb *b, long long epoch);

/* Parse "YYYY-MM-DD[(T| )HH:MM[:SS[.f]][Z|±HH[:]MM| UTC]]" at p (leading
 * blanks skipped) into out "YYYY-MM-DDTHH:MM:SSZ" (UTC). 1 on success;
 * *timed says a time of day was given, *epoch gets seconds since 1970. */
int cairn__x_ts(const char *p, size_t len, char out[21], int *timed, long long *epoch);

/* 1 if p[0..len) holds w as a word (ASCII case-insensitive; w lower case;
 * a trailing '*' in w matches any word ending). */
int cairn__x_word(const char *p, size_t len, const char *w);
/* 1 if any word of the NULL-terminated list occurs. */
int cairn__x_any(const char *p, size_t len, const char *const *ws);
/* The status a phrase states: X_SUCCESS / X_PARTIAL / X_FAILURE or X_NONE. */
int cairn__x_status(const char *p, size_t len);
/* The event type of a work item: error (a failure without its fix), test,
 * handoff, else milestone; *err / *fixed say a failure was met / mended. */
const char *cairn__x_classify(const xtext *t, int *err, int *fixed);
/* 1 if text names a fix (fixed, resolved, restored, reverted, ...). */
int cairn__x_fixish(const char *p, size_t len);
/* 1 if text says an item does not apply (N/A, skipped, not applicable). */
int cairn__x_na(const char *p, size_t len);
/* Decision type from its text. */
const char *cairn__x_dtype(const xtext *chosen, const xtext *rationale, const xtext *context);
/* Split "X because Y": if found, *cut is where " because " starts in t. */
int cairn__x_because(const xtext *t, size_t *cut, size_t *rest);
/* Starts like a decision ("Decided", "Chose", "Selected", "Opted", ...). */
int cairn__x_decides(const xtext *t);
/* Words naming lessons (lesson, learning, retrospective, takeaway). */
int cairn__x_lessonish(const char *p, size_t len);

int cairn__extract_md(xb *b, const char *p, size_t len);
/* Errors: CAIRN_EINVAL (does not parse, not an object), CAIRN_ENOMEM. */
int cairn__extract_json(xb *b, const char *p, size_t len, cairn__err *e);

#endif /* CAIRN_EXTRACT_INT_H */
