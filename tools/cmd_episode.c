/*
 * cmd_episode.c - `cairn episode new|get|list|decisions|extract` (the
 * ReflexionMemory's New-Episode, Get-Episode, Get-Episodes, Get-DecisionSequence and
 * Extract-SessionEpisode.ps1) and `cairn import --from episodes DIR`, over
 * the cairn_episode_* API.
 *
 * Episodes are records of the log, not files: what ReflexionMemory writes to
 * .agents/memory/episodes/episode-ID.json is an "episode" record here, and
 * the JSON printed with --format json is the episode object the engine
 * keeps (ReflexionMemory's field names: id, session, timestamp, outcome, task,
 * decisions, events, metrics, lessons). Text output is for people: "key:
 * value" lines for one episode, one line per episode or decision for lists.
 *
 * Reads (get, list, decisions) open the store read-only; new, extract and
 * import take the writer lock (creating the store if it is missing).
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli_asof.h"
#include "cli_json.h"
#include "cli_progress.h"
#include "cli_reflex.h"

const char cmd_episode_help[] =
    "usage: cairn episode new --session-id S --task T --outcome O [--decisions JSON]\n"
    "                         [--events JSON] [--lessons JSON|a,b] [--metrics JSON]\n"
    "                         [--file FILE|-] [--force]\n"
    "       cairn episode get --session-id S\n"
    "       cairn episode list [--outcome O] [--since TIME] [--max-results N]\n"
    "       cairn episode decisions --episode-id ID\n"
    "       cairn episode extract SESSION_LOG [--force] [--dry-run]\n"
    "       (each also takes --format text|json and --store DIR)\n"
    "\n"
    "Episodes: what happened in one agent session (task, outcome, decisions,\n"
    "events, metrics, lessons), one per session id, kept in the store's log.\n"
    "  new        store an episode from options or a JSON file\n"
    "  get        print the episode of a session (null when there is none)\n"
    "  list       episodes, newest first, filtered by outcome and time\n"
    "  decisions  the decisions of an episode in time order\n"
    "  extract    build an episode from a session log (markdown or JSON) and\n"
    "             store it\n"
    "Run `cairn help episode SUBCOMMAND` for its options. See also `cairn causal`\n"
    "(the causal graph built from episodes) and `cairn import --from episodes`.\n"
    "\n"
    "Exit status: 0 success; 1 the operation failed (invalid episode, episode\n"
    "exists without --force, unreadable file, no store, I/O error, store\n"
    "locked); 64 usage error (unknown or missing subcommand or option, a value\n"
    "out of range).\n";

static const char new_help[] =
    "usage: cairn episode new --session-id S --task T --outcome O [--decisions JSON]\n"
    "                         [--events JSON] [--lessons JSON|a,b] [--metrics JSON]\n"
    "                         [--force] [--format text|json]\n"
    "       cairn episode new --file FILE|- [the options above] [--force]\n"
    "\n"
    "Store the episode of a session (New-Episode), and print it as stored: its\n"
    "id is \"episode-\" + the session id, its timestamp the time of storing\n"
    "unless given, missing members get their defaults ([], {}). With --file\n"
    "(or `-` alone) the episode is a JSON object read from FILE or stdin, in\n"
    "ReflexionMemory's shape; options given as well replace its members. The store\n"
    "is created with default settings if missing. All text must be valid UTF-8\n"
    "without NUL (a byte, or \\u0000 in a JSON string: README \"Text\"); the\n"
    "message names the member that is not. An episode is kept when only parts\n"
    "of it cannot be used: an empty task becomes the session id, and a decision\n"
    "or event that is not valid (an unknown type, no content, no choice) is\n"
    "dropped, a line on stderr saying each (\"events[3].type: ...; dropped\").\n"
    "\n"
    "Options:\n"
    "  --session-id S   the session (required without --file; not empty)\n"
    "  --task T         what the session was for (required without --file)\n"
    "  --outcome O      success, partial or failure (required without --file)\n"
    "  --decisions JSON an array of decision objects {id, timestamp, type,\n"
    "                   context, chosen, rationale, outcome, effects[]}\n"
    "  --events JSON    an array of event objects {id, timestamp, type, content,\n"
    "                   caused_by[], leads_to[]}\n"
    "  --lessons L      a JSON array of strings, or a comma-separated list\n"
    "  --metrics JSON   an object {duration_minutes, tool_calls, errors,\n"
    "                   recoveries, commits, files_changed}\n"
    "  --file FILE      read the whole episode from FILE (`-`: stdin)\n"
    "  --force          replace the episode of a session that has one (the old\n"
    "                   version stays in the log)\n"
    "  --format F       text (default: \"key: value\" lines) or json (the episode)\n"
    "\n"
    "Exit status: 0 stored; 1 invalid episode (the message names the field),\n"
    "the session has an episode and no --force, unreadable FILE, I/O error,\n"
    "store locked; 64 usage error (missing option, bad outcome, not JSON).\n";

static const char get_help[] =
    "usage: cairn episode get --session-id S [--format text|json]\n"
    "\n"
    "Print the episode of session S (Get-Episode); \"episode-S\" is accepted too.\n"
    "When there is none, prints `null` and exits 0, as ReflexionMemory returns $null.\n"
    "Opens the store read-only.\n"
    "\n"
    "Options:\n"
    "  --session-id S   the session (required)\n"
    "  --format F       text (default: \"key: value\" lines) or json (the episode)\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 found or not; 1 no store, I/O error; 64 usage error.\n";

static const char list_help[] =
    "usage: cairn episode list [--outcome O] [--since TIME] [--max-results N]\n"
    "                          [--format text|json]\n"
    "\n"
    "Print episodes, newest timestamp first (Get-Episodes). Opens the store\n"
    "read-only.\n"
    "\n"
    "Options:\n"
    "  --outcome O      only success, partial or failure episodes\n"
    "  --since TIME     only episodes with a timestamp at or after TIME: ISO 8601\n"
    "                   (2026-01-01, 2026-01-01T17:05:00Z), @<epoch ms>, or an\n"
    "                   age (7d, 12h)\n"
    "  --max-results N  at most N, 1-100 (default 20)\n"
    "  --format F       text (default): \"TIMESTAMP  OUTCOME  SESSION  TASK\" lines;\n"
    "                   json: an array of the episodes\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 success (also when none matches); 1 no store, I/O error;\n"
    "64 usage error.\n";

static const char decisions_help[] =
    "usage: cairn episode decisions --episode-id ID [--format text|json]\n"
    "\n"
    "Print the decisions of an episode sorted by timestamp (Get-DecisionSequence);\n"
    "ID is \"episode-SESSION\" or the session id. Nothing (text) or [] (json)\n"
    "when there is no such episode. Opens the store read-only.\n"
    "\n"
    "Options:\n"
    "  --episode-id ID  the episode (required)\n"
    "  --format F       text (default): \"TIMESTAMP  ID  [TYPE]  CHOSEN  (OUTCOME)\"\n"
    "                   lines; json: an array of the decision objects\n"
    "\n"
    "Exit status: 0 success; 1 no store, I/O error; 64 usage error.\n";

static const char extract_help[] =
    "usage: cairn episode extract SESSION_LOG [--force] [--dry-run]\n"
    "                             [--format text|json]\n"
    "\n"
    "Build an episode from a session log (Extract-SessionEpisode.ps1): a\n"
    "markdown or JSON log as .agents/sessions/ holds them; the session id is\n"
    "the file name without its extension. The episode is stored and printed.\n"
    "\n"
    "Options:\n"
    "  --force          replace the session's episode if it has one\n"
    "  --dry-run        extract and print, store nothing (fails as the real run\n"
    "                   would when the episode exists without --force)\n"
    "  --format F       text (default: \"key: value\" lines) or json (the episode)\n"
    "\n"
    "Exit status (ReflexionMemory's): 0 success; 1 the log could not be read or\n"
    "parsed, the episode could not be written, or it exists without --force;\n"
    "64 usage error.\n";

/* ---- printing ---------------------------------------------------------------- */

/* The first line of s, cut at max bytes (never inside a UTF-8 character). */
static void put_line(const char *s, int max)
{
    int w = (int)strcspn(s, "\r\n"), cut = w > max ? max : w;
    while (cut > 0 && cut < w && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    printf("%.*s%s", cut, s, cut < w || s[w] ? " ..." : "");
}

static void print_member_json(const char *key, const cJSON *v)
{
    char *s = v ? cJSON_PrintUnformatted(v) : NULL;
    printf("%-11s %s\n", key, s ? s : "null");
    free(s);
}

/* An episode as "key: value" lines. */
static void print_episode_text(const cJSON *ep)
{
    const cJSON *arr, *x;

    printf("%-11s %s\n", "id:", cli_jstr(ep, "id"));
    printf("%-11s %s\n", "session:", cli_jstr(ep, "session"));
    printf("%-11s %s\n", "timestamp:", cli_jstr(ep, "timestamp"));
    printf("%-11s %s\n", "outcome:", cli_jstr(ep, "outcome"));
    printf("%-11s ", "task:");
    put_line(cli_jstr(ep, "task"), 200);
    putchar('\n');
    print_member_json("metrics:", cJSON_GetObjectItemCaseSensitive(ep, "metrics"));
    arr = cJSON_GetObjectItemCaseSensitive(ep, "decisions");
    printf("%-11s %d\n", "decisions:", cJSON_GetArraySize(arr));
    cJSON_ArrayForEach(x, arr) {
        printf("  %s  %s  [%s]  ", cli_jstr(x, "id"), cli_jstr(x, "timestamp"),
               cli_jstr(x, "type"));
        put_line(cli_jstr(x, "chosen"), 100);
        printf("  (%s)\n", cli_jstr(x, "outcome"));
    }
    arr = cJSON_GetObjectItemCaseSensitive(ep, "events");
    printf("%-11s %d\n", "events:", cJSON_GetArraySize(arr));
    cJSON_ArrayForEach(x, arr) {
        printf("  %s  %s  [%s]  ", cli_jstr(x, "id"), cli_jstr(x, "timestamp"),
               cli_jstr(x, "type"));
        put_line(cli_jstr(x, "content"), 100);
        putchar('\n');
    }
    arr = cJSON_GetObjectItemCaseSensitive(ep, "lessons");
    printf("%-11s %d\n", "lessons:", cJSON_GetArraySize(arr));
    cJSON_ArrayForEach(x, arr) {
        printf("  - ");
        put_line(cJSON_IsString(x) ? x->valuestring : "", 200);
        putchar('\n');
    }
}

/* Print engine JSON (an episode, or an array of episodes or decisions):
 * as is with json, else through `text` per item. */
static void print_result(const char *s, int json, int is_list, void (*text)(const cJSON *))
{
    cJSON *doc;
    const cJSON *x;

    if (json) {
        cli_print_json_text(s);
        return;
    }
    doc = cJSON_Parse(s);
    if (is_list) {
        cJSON_ArrayForEach(x, doc)
            text(x);
    } else if (doc != NULL) {
        text(doc);
    }
    cJSON_Delete(doc);
}

static void print_list_line(const cJSON *ep)
{
    printf("%s  %-7s  %s  ", cli_jstr(ep, "timestamp"), cli_jstr(ep, "outcome"),
           cli_jstr(ep, "session"));
    put_line(cli_jstr(ep, "task"), 80);
    putchar('\n');
}

static void print_decision_line(const cJSON *d)
{
    printf("%s  %s  [%s]  ", cli_jstr(d, "timestamp"), cli_jstr(d, "id"), cli_jstr(d, "type"));
    put_line(cli_jstr(d, "chosen"), 100);
    printf("  (%s)\n", cli_jstr(d, "outcome"));
}

/* ---- option values ---------------------------------------------------------- */

static int check_outcome(const char *cmd, const char *v)
{
    if (strcmp(v, "success") == 0 || strcmp(v, "partial") == 0 || strcmp(v, "failure") == 0)
        return -1;
    return cli_usage_error(cmd,
                           "--outcome: Cannot validate argument on parameter 'Outcome'. The "
                           "argument '%s' does not belong to the set 'success,partial,failure'.",
                           v);
}

/* JSON text the tool parses and writes again before the engine sees it:
 * the engine's rule for text is checked first, or a \u0000 would be cut
 * unseen. -1 if it passes, else the exit code (the message printed). */
static int check_json_text(const char *cmd, const char *what, const char *v, size_t len)
{
    char err[CAIRN_ERRMSG_MAX];
    if (cairn_text_check(v, len, 1, err, sizeof err) == CAIRN_OK)
        return -1;
    return cli_fail(cmd, CAIRN_EINVAL, "%s: %s", what, err);
}

/* A JSON option value that must be an array (want_array) or an object. */
static int parse_json_opt(const char *cmd, const char *opt, const char *v, int want_array,
                          cJSON **out)
{
    char what[32];
    cJSON *j;
    int rc;
    snprintf(what, sizeof what, "--%s", opt);
    if ((rc = check_json_text(cmd, what, v, strlen(v))) >= 0)
        return rc;
    j = cJSON_Parse(v);
    if (j == NULL || (want_array ? !cJSON_IsArray(j) : !cJSON_IsObject(j))) {
        cJSON_Delete(j);
        return cli_usage_error(cmd, "--%s must be a JSON %s", opt,
                               want_array ? "array" : "object");
    }
    cJSON_Delete(*out);
    *out = j;
    return -1;
}

/* --lessons: a JSON array of strings, or "a,b" (empty items dropped). */
static int parse_lessons(const char *cmd, const char *v, cJSON **out)
{
    cJSON *arr;
    const cJSON *x;

    if (v[strspn(v, " \t")] == '[') {
        int rc = check_json_text(cmd, "--lessons", v, strlen(v));
        if (rc >= 0)
            return rc;
        arr = cJSON_Parse(v);
        if (!cJSON_IsArray(arr)) {
            cJSON_Delete(arr);
            return cli_usage_error(cmd, "--lessons must be a JSON array of strings or a "
                                        "comma-separated list");
        }
        cJSON_ArrayForEach(x, arr) {
            if (!cJSON_IsString(x)) {
                cJSON_Delete(arr);
                return cli_usage_error(cmd, "--lessons: every lesson must be a string");
            }
        }
    } else {
        char *copy = strdup(v), *save = NULL;
        arr = cJSON_CreateArray();
        if (copy == NULL || arr == NULL) {
            free(copy);
            cJSON_Delete(arr);
            return cli_fail(cmd, CAIRN_ENOMEM, "no memory");
        }
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
            if (*t)
                cJSON_AddItemToArray(arr, cJSON_CreateString(t));
        free(copy);
    }
    cJSON_Delete(*out);
    *out = arr;
    return -1;
}

/* Replace member `name` of o by v (taken). */
static void set_member(cJSON *o, const char *name, cJSON *v)
{
    cJSON_DeleteItemFromObjectCaseSensitive(o, name);
    cJSON_AddItemToObject(o, name, v);
}

/* The "exists" error of new, extract and import. */
/* Put an episode and say on stderr what the put dropped or defaulted
 * ("cairn: CMD: [FILE: ]events[3].type: ...; dropped"); *changes (may be
 * NULL) counts those lines. */
static int put_noted(cli_ctx *ctx, cairn_reflex *r, const char *text, size_t len, int force,
                     char **stored, const char *file, size_t *changes, cli_progress *prog)
{
    char *notes = NULL;
    int x = cairn_episode_put_noted(r, text, len, force, stored, &notes);
    cJSON *arr = x == CAIRN_OK && notes != NULL ? cJSON_Parse(notes) : NULL, *e;
    if (changes != NULL)
        *changes = 0;
    if (prog != NULL && cJSON_GetArraySize(arr) > 0)
        cli_progress_end(prog); /* the bar's line cleared; its next step redraws it */
    cJSON_ArrayForEach(e, arr) {
        fprintf(stderr, "cairn: %s: %s%s%s\n", ctx->cmd, file ? file : "", file ? ": " : "",
                e->valuestring);
        if (changes != NULL)
            (*changes)++;
    }
    cJSON_Delete(arr);
    cairn_free(notes);
    return x;
}

static int exists_error(cli_ctx *ctx, const char *session)
{
    return cli_fail(ctx->cmd, CAIRN_EEXIST,
                    "an episode of session '%s' exists already (--force replaces it)", session);
}

/* ---- new ---------------------------------------------------------------------- */

static int episode_new(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {
        {"session-id", 1}, {"task", 1}, {"outcome", 1}, {"decisions", 1},
        {"events", 1},     {"lessons", 1}, {"metrics", 1}, {"file", 1},
        {"force", 0},      {"format", 1}, {NULL, 0}};
    const char *name, *val, *session = NULL, *task = NULL, *outcome = NULL, *file = NULL;
    cJSON *decisions = NULL, *events = NULL, *lessons = NULL, *metrics = NULL, *ep = NULL;
    char *data = NULL, *text = NULL, *stored = NULL;
    size_t len = 0;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    cli_args a;
    int rc = -1, x, json = 0, force = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (x == CLI_ARG_ERR)
            rc = CLI_EXIT_USAGE;
        else if (x == CLI_ARG_HELP)
            rc = cli_help(new_help);
        else if (x == CLI_ARG_POS && (strcmp(val, "-") != 0 || file != NULL))
            rc = cli_usage_error(ctx->cmd, "unexpected argument '%s' (an episode file is "
                                           "given with --file)", val);
        else if (x == CLI_ARG_POS)
            file = val; /* `-`: stdin */
        else if (strcmp(name, "session-id") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, session = val);
        else if (strcmp(name, "task") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, task = val);
        else if (strcmp(name, "outcome") == 0)
            rc = check_outcome(ctx->cmd, outcome = val);
        else if (strcmp(name, "decisions") == 0)
            rc = parse_json_opt(ctx->cmd, name, val, 1, &decisions);
        else if (strcmp(name, "events") == 0)
            rc = parse_json_opt(ctx->cmd, name, val, 1, &events);
        else if (strcmp(name, "metrics") == 0)
            rc = parse_json_opt(ctx->cmd, name, val, 0, &metrics);
        else if (strcmp(name, "lessons") == 0)
            rc = parse_lessons(ctx->cmd, val, &lessons);
        else if (strcmp(name, "file") == 0)
            file = val;
        else if (strcmp(name, "force") == 0)
            force = 1;
        else if (strcmp(name, "format") == 0)
            rc = cli_parse_format(ctx->cmd, val, &json);
    }
    if (rc < 0 && file == NULL) {
        if (session == NULL)
            rc = cli_opt_missing(ctx->cmd, "session-id");
        else if (task == NULL)
            rc = cli_opt_missing(ctx->cmd, "task");
        else if (outcome == NULL)
            rc = cli_opt_missing(ctx->cmd, "outcome");
    }
    if (rc >= 0)
        goto done;
    if (file != NULL) {
        if (cli_read_file(file, &data, &len) != 0) {
            rc = cli_fail(ctx->cmd, CAIRN_EIO, "cannot read %s: %s",
                          strcmp(file, "-") ? file : "stdin", strerror(errno));
            goto done;
        }
        if ((rc = check_json_text(ctx->cmd, strcmp(file, "-") ? file : "stdin", data, len)) >= 0)
            goto done;
        ep = cJSON_ParseWithLength(data, len);
        if (!cJSON_IsObject(ep)) {
            rc = cli_fail(ctx->cmd, CAIRN_EINVAL, "%s: not a JSON object",
                          strcmp(file, "-") ? file : "stdin");
            goto done;
        }
    } else {
        ep = cJSON_CreateObject();
    }
    if (ep == NULL) {
        rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
        goto done;
    }
    if (session != NULL) {
        /* The id follows the session; an id from the file would not. */
        cJSON_DeleteItemFromObjectCaseSensitive(ep, "id");
        set_member(ep, "session", cJSON_CreateString(session));
    }
    if (task != NULL)
        set_member(ep, "task", cJSON_CreateString(task));
    if (outcome != NULL)
        set_member(ep, "outcome", cJSON_CreateString(outcome));
    /* set_member takes them */
    if (decisions != NULL)
        set_member(ep, "decisions", decisions);
    if (events != NULL)
        set_member(ep, "events", events);
    if (lessons != NULL)
        set_member(ep, "lessons", lessons);
    if (metrics != NULL)
        set_member(ep, "metrics", metrics);
    decisions = events = lessons = metrics = NULL;
    text = cJSON_PrintUnformatted(ep);
    if (text == NULL) {
        rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
        goto done;
    }
    if ((rc = cli_reflex_open(ctx, 1, &db, &r)) != CLI_EXIT_OK)
        goto done;
    x = put_noted(ctx, r, text, strlen(text), force, &stored, NULL, NULL, NULL);
    if (x == CAIRN_EEXIST && cli_jstr(ep, "session")[0])
        rc = exists_error(ctx, cli_jstr(ep, "session"));
    else if (x != CAIRN_OK)
        rc = cli_reflex_fail(ctx, r, x, NULL);
    else
        rc = CLI_EXIT_OK;
    if (rc == CLI_EXIT_OK && stored != NULL)
        print_result(stored, json, 0, print_episode_text);
    rc = cli_reflex_close(ctx, db, r, rc);
done:
    cJSON_Delete(decisions);
    cJSON_Delete(events);
    cJSON_Delete(lessons);
    cJSON_Delete(metrics);
    cJSON_Delete(ep);
    free(stored);
    free(text);
    free(data);
    return rc;
}

/* ---- get, list, decisions ------------------------------------------------------ */

/* A command of one required option (an id) and --format: get and
 * decisions. `call` answers it; with null_if_none a CAIRN_ENOTFOUND prints
 * ReflexionMemory's $null, otherwise it is an error like any other. */
typedef struct one_id_cmd {
    const char *opt, *help;
    int (*call)(cairn_reflex *r, const char *id, char **json_out);
    int null_if_none, is_list;
    void (*text)(const cJSON *);
} one_id_cmd;

static int one_id_command(cli_ctx *ctx, int argc, char **argv, const one_id_cmd *c)
{
    const cli_optspec spec[] = {{c->opt, 1}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *id = NULL;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    char *out = NULL;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END)
        if (!cli_reflex_arg(ctx, x, name, val, c->help, &json, &rc))
            rc = cli_opt_nonempty(ctx->cmd, name, id = val); /* the id option */
    if (rc < 0 && id == NULL)
        rc = cli_opt_missing(ctx->cmd, c->opt);
    if (rc >= 0)
        return rc;
    if ((rc = cli_reflex_open(ctx, 0, &db, &r)) != CLI_EXIT_OK)
        return rc;
    x = c->call(r, id, &out);
    if (x == CAIRN_ENOTFOUND && c->null_if_none) {
        printf("null\n"); /* ReflexionMemory's $null */
        rc = CLI_EXIT_OK;
    } else if (x != CAIRN_OK) {
        rc = cli_reflex_fail(ctx, r, x, NULL);
    } else {
        print_result(out, json, c->is_list, c->text);
        rc = CLI_EXIT_OK;
    }
    free(out);
    return cli_reflex_close(ctx, db, r, rc);
}

static int episode_get(cli_ctx *ctx, int argc, char **argv)
{
    static const one_id_cmd c = {"session-id", get_help, cairn_episode_get, 1, 0,
                                 print_episode_text};
    return one_id_command(ctx, argc, argv, &c);
}

static int episode_list(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {
        {"outcome", 1}, {"since", 1}, {"max-results", 1}, {"format", 1}, {NULL, 0}};
    cairn_episode_query q = CAIRN_EPISODE_QUERY_INIT;
    const char *name, *val;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    char *out = NULL;
    uint64_t n;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (cli_reflex_arg(ctx, x, name, val, list_help, &json, &rc))
            continue;
        if (strcmp(name, "outcome") == 0) {
            rc = check_outcome(ctx->cmd, q.outcome = val);
        } else if (strcmp(name, "since") == 0) {
            rc = cli_opt_time(ctx->cmd, name, val, &q.since_ms);
        } else if ((rc = cli_opt_uint(ctx->cmd, name, val, 1, 100, &n)) < 0) {
            q.max_results = (unsigned)n; /* --max-results */
        }
    }
    if (rc >= 0)
        return rc;
    if ((rc = cli_reflex_open(ctx, 0, &db, &r)) != CLI_EXIT_OK)
        return rc;
    x = cairn_episode_list(r, &q, &out);
    if (x != CAIRN_OK) {
        rc = cli_reflex_fail(ctx, r, x, NULL);
    } else {
        print_result(out, json, 1, print_list_line);
        rc = CLI_EXIT_OK;
    }
    free(out);
    return cli_reflex_close(ctx, db, r, rc);
}

static int episode_decisions(cli_ctx *ctx, int argc, char **argv)
{
    static const one_id_cmd c = {"episode-id", decisions_help, cairn_episode_decisions, 0, 1,
                                 print_decision_line};
    return one_id_command(ctx, argc, argv, &c);
}

/* ---- extract -------------------------------------------------------------------- */

/* Whether the store at ctx->store has an episode of session (read-only;
 * no store: no episode): 1 or 0. On a failure (printed) *exit_code is set
 * and 0 is returned. */
static int episode_exists(cli_ctx *ctx, const char *session, int *exit_code)
{
    cairn_options o = CAIRN_OPTIONS_INIT;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    char err[CAIRN_ERRMSG_MAX] = "", *out = NULL;
    int x;

    *exit_code = CLI_EXIT_OK;
    o.read_only = 1;
    o.background = 0;
    o.busy_timeout_ms = ctx->busy_timeout_ms;
    x = cairn_open(&db, ctx->store, &o, err, sizeof err);
    if (x == CAIRN_ENOTFOUND)
        return 0;
    if (x != CAIRN_OK) {
        *exit_code = cli_fail(ctx->cmd, x, "%s", err[0] ? err : ctx->store);
        return 0;
    }
    x = cairn_reflex_open(db, &r);
    if (x != CAIRN_OK) {
        *exit_code = cli_fail_db(ctx->cmd, db, x, "opening the reflexion state");
        cairn_close(db);
        return 0;
    }
    x = cairn_episode_get(r, session, &out);
    free(out);
    if (x != CAIRN_OK && x != CAIRN_ENOTFOUND)
        *exit_code = cli_reflex_fail(ctx, r, x, NULL);
    cairn_reflex_close(r);
    cairn_close(db);
    return x == CAIRN_OK;
}

static int episode_extract(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"force", 0}, {"dry-run", 0}, {"format", 1}, {NULL, 0}};
    const char *name, *val, *log = NULL;
    char *data = NULL, *ep = NULL, *stored = NULL, err[CAIRN_ERRMSG_MAX] = "";
    cJSON *doc = NULL;
    size_t len = 0;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    cli_args a;
    int rc = -1, x, json = 0, force = 0, dry = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (x == CLI_ARG_ERR)
            rc = CLI_EXIT_USAGE;
        else if (x == CLI_ARG_HELP)
            rc = cli_help(extract_help);
        else if (x == CLI_ARG_POS && log != NULL)
            rc = cli_usage_error(ctx->cmd, "one SESSION_LOG only");
        else if (x == CLI_ARG_POS)
            log = val;
        else if (strcmp(name, "force") == 0)
            force = 1;
        else if (strcmp(name, "dry-run") == 0)
            dry = 1;
        else
            rc = cli_parse_format(ctx->cmd, val, &json);
    }
    if (rc < 0 && log == NULL)
        rc = cli_usage_error(ctx->cmd, "missing SESSION_LOG");
    if (rc >= 0)
        return rc;
    if (strcmp(log, "-") == 0 || cli_read_file(log, &data, &len) != 0)
        return cli_fail(ctx->cmd, CAIRN_EIO, "cannot read session log %s: %s", log,
                        strcmp(log, "-") ? strerror(errno) : "stdin has no file name");
    x = cairn_episode_extract(log, data, len, &ep, err);
    free(data);
    if (x != CAIRN_OK)
        return cli_fail(ctx->cmd, x, "%s: %s", log, err[0] ? err : "cannot extract an episode");
    doc = cJSON_Parse(ep);
    if (dry) {
        int exists = episode_exists(ctx, cli_jstr(doc, "session"), &rc);
        if (rc == CLI_EXIT_OK && exists && !force)
            rc = exists_error(ctx, cli_jstr(doc, "session"));
        if (rc == CLI_EXIT_OK)
            print_result(ep, json, 0, print_episode_text);
        goto done;
    }
    if ((rc = cli_reflex_open(ctx, 1, &db, &r)) != CLI_EXIT_OK)
        goto done;
    x = put_noted(ctx, r, ep, strlen(ep), force, &stored, NULL, NULL, NULL);
    if (x == CAIRN_EEXIST)
        rc = exists_error(ctx, cli_jstr(doc, "session"));
    else if (x != CAIRN_OK)
        rc = cli_reflex_fail(ctx, r, x, "storing the episode");
    else
        print_result(stored ? stored : ep, json, 0, print_episode_text);
    rc = cli_reflex_close(ctx, db, r, rc);
done:
    cJSON_Delete(doc);
    free(stored);
    free(ep);
    return rc;
}

int cmd_episode(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_subcmd subs[] = {
        {"new", "episode new", new_help, episode_new},
        {"get", "episode get", get_help, episode_get},
        {"list", "episode list", list_help, episode_list},
        {"decisions", "episode decisions", decisions_help, episode_decisions},
        {"extract", "episode extract", extract_help, episode_extract},
        {NULL, NULL, NULL, NULL}};
    return cli_subcommand(ctx, cmd_episode_help, subs, argc, argv);
}

/* ---- import --from episodes DIR ----------------------------------------------------- */

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int cli_import_episodes(cli_ctx *ctx, const char *dir, int force, int json)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;
    uint64_t imported = 0, skipped = 0, failed = 0, repaired = 0;
    cJSON *failures = cJSON_CreateArray();
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    cli_progress prog;
    int rc = CLI_EXIT_OK;

    if (d == NULL) {
        cJSON_Delete(failures);
        return cli_fail(ctx->cmd, CAIRN_EIO, "%s: %s", dir, strerror(errno));
    }
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".json") != 0 || de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **q = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof *names);
            if (q == NULL) {
                rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
                break;
            }
            names = q;
        }
        if ((names[n] = strdup(de->d_name)) == NULL) {
            rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
            break;
        }
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, name_cmp);
    if (rc == CLI_EXIT_OK && failures == NULL)
        rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
    if (rc == CLI_EXIT_OK)
        rc = cli_reflex_open(ctx, 1, &db, &r);
    cli_progress_start(&prog, "episodes", n);
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK && r != NULL; i++) {
        size_t plen = strlen(dir) + strlen(names[i]) + 2, len = 0;
        cli_progress_step(&prog, i);
        char *path = malloc(plen), *data = NULL, why[CAIRN_ERRMSG_MAX + 64], code[32];
        const char *kind = NULL;
        int x;

        if (path == NULL) {
            rc = cli_fail(ctx->cmd, CAIRN_ENOMEM, "no memory");
            break;
        }
        snprintf(path, plen, "%s/%s", dir, names[i]);
        x = cli_read_regular(path, &data, &len, &kind);
        if (x == 1) { /* a FIFO or a directory named *.json: never opened, never a hang */
            cli_progress_end(&prog);
            fprintf(stderr, "cairn: %s: %s: %s; skipped\n", ctx->cmd, path, kind);
            free(path);
            skipped++;
            continue;
        }
        if (x != 0) {
            x = CAIRN_EIO;
            snprintf(why, sizeof why, "%s", strerror(errno));
        } else {
            size_t ch = 0;
            x = put_noted(ctx, r, data, len, force, NULL, path, &ch, &prog);
            if (x == CAIRN_OK && ch > 0)
                repaired++;
            snprintf(why, sizeof why, "%s", cairn_reflex_errmsg(r));
        }
        free(data);
        free(path);
        if (x == CAIRN_OK) {
            imported++;
        } else if (x == CAIRN_EEXIST) {
            skipped++;
        } else if (x == CAIRN_EINVAL || x == CAIRN_EIO || x == CAIRN_ETOOBIG) {
            /* this file's fault: count it, go on with the others */
            cJSON *f = cJSON_CreateObject();
            if (why[0] == '\0') {
                const char *s = cairn_strerror(x), *colon = strchr(s, ':');
                snprintf(why, sizeof why, "%s", colon ? colon + 2 : s);
            }
            cli_code_name(x, code, sizeof code);
            cJSON_AddStringToObject(f, "file", names[i]);
            cJSON_AddStringToObject(f, "error", why);
            cJSON_AddStringToObject(f, "code", code);
            cJSON_AddItemToArray(failures, f);
            failed++;
        } else {
            /* the store's fault (locked, full, dead): stop */
            cli_progress_end(&prog);
            rc = cli_reflex_fail(ctx, r, x, names[i]);
        }
    }
    cli_progress_step(&prog, n);
    cli_progress_end(&prog);
    if (r != NULL)
        rc = cli_reflex_close(ctx, db, r, rc);
    if (rc == CLI_EXIT_OK) {
        if (json) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddNumberToObject(o, "imported", (double)imported);
            cJSON_AddNumberToObject(o, "repaired", (double)repaired);
            cJSON_AddNumberToObject(o, "skipped", (double)skipped);
            cJSON_AddNumberToObject(o, "failed", (double)failed);
            cJSON_AddItemToObject(o, "failures", failures);
            failures = NULL;
            cli_print_cjson(o);
        } else {
            const cJSON *f;
            printf("imported: %llu\n", (unsigned long long)imported);
            if (repaired > 0) /* said per file on stderr */
                printf("repaired: %llu (parts dropped or defaulted)\n",
                       (unsigned long long)repaired);
            printf("skipped: %llu\nfailed: %llu\n", (unsigned long long)skipped,
                   (unsigned long long)failed);
            cJSON_ArrayForEach(f, failures)
                printf("failure: %s: %s (%s)\n", cli_jstr(f, "file"), cli_jstr(f, "error"),
                       cli_jstr(f, "code"));
        }
        if (failed > 0) {
            fflush(stdout);
            fprintf(stderr, "cairn: %s: %llu file(s) failed, the others were imported\n",
                    ctx->cmd, (unsigned long long)failed);
            rc = CLI_EXIT_FAIL;
        }
    }
    cJSON_Delete(failures);
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}
