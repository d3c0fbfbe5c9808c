/*
 * cmd_pattern.c - `cairn pattern add|list|anti` (ReflexionMemory's Add-Pattern,
 * Get-Patterns, Get-AntiPatterns) over the cairn_pattern_* API.
 *
 * Patterns live with the causal graph (records of the log, folded; see
 * cmd_causal.c). --format json prints ReflexionMemory's pattern object: id, name,
 * description, trigger, action, success_rate, occurrences, last_used (ISO
 * 8601), plus "episodes" and "created" as causal-graph.json holds them.
 * list and anti open the store read-only; add takes the writer lock.
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "cli_asof.h"
#include "cli_json.h"
#include "cli_reflex.h"
#include "render.h"

const char cmd_pattern_help[] =
    "usage: cairn pattern add --name N --trigger T --action A [--description D]\n"
    "                         [--success-rate X] [--episode-id E]\n"
    "       cairn pattern list [--min-success-rate X] [--min-occurrences N]\n"
    "       cairn pattern anti [--max-success-rate X]\n"
    "       (each also takes --format text|json and --store DIR)\n"
    "\n"
    "Patterns: what to do when (trigger -> action), with a success rate averaged\n"
    "over their uses, kept with the causal graph.\n"
    "  add   add a pattern, or count a use of the one with this name\n"
    "  list  patterns that work, best first\n"
    "  anti  anti-patterns: used twice or more and rarely successful, worst first\n"
    "Run `cairn help pattern SUBCOMMAND` for its options.\n"
    "\n"
    "Exit status: 0 success; 1 the operation failed (no store, I/O error, store\n"
    "locked); 64 usage error (unknown or missing subcommand or option, a value\n"
    "out of range).\n";

static const char pattern_add_help[] =
    "usage: cairn pattern add --name N --trigger T --action A [--description D]\n"
    "                         [--success-rate X] [--episode-id E]\n"
    "                         [--format text|json]\n"
    "\n"
    "Add a pattern (Add-Pattern) and print it. A pattern of this name exists\n"
    "already: its occurrences go up by one, its success rate becomes the\n"
    "running average, last_used is now (trigger, action and description stay\n"
    "the first ones).\n"
    "\n"
    "Options:\n"
    "  --name N           the pattern's name (required)\n"
    "  --trigger T        the condition that triggers it (required)\n"
    "  --action A         the recommended action (required)\n"
    "  --description D    what it is (default: empty)\n"
    "  --success-rate X   0-1 (default 1.0)\n"
    "  --episode-id E     the episode it was seen in\n"
    "  --format F         text (default: \"key: value\" lines) or json: {id, name,\n"
    "                     description, trigger, action, success_rate,\n"
    "                     occurrences, last_used, episodes, created}\n"
    "\n"
    "Exit status: 0 added; 1 invalid value, I/O error, store locked; 64 usage\n"
    "error.\n";

static const char pattern_list_help[] =
    "usage: cairn pattern list [--min-success-rate X] [--min-occurrences N]\n"
    "                          [--format text|json]\n"
    "\n"
    "Patterns with success_rate >= X and occurrences >= N (Get-Patterns),\n"
    "highest success rate first (ties: more occurrences, then name). Opens the\n"
    "store read-only.\n"
    "\n"
    "Options:\n"
    "  --min-success-rate X  0-1 (default 0)\n"
    "  --min-occurrences N   1-1000 (default 1)\n"
    "  --format F            text (default): \"SUCCESS_RATE  OCCURRENCES  NAME:\n"
    "                        TRIGGER -> ACTION  (ID)\" lines; json: an array\n"
    AS_OF_HELP
    "\n"
    "Exit status: 0 success (also when none matches); 1 no store, I/O error; 64\n"
    "usage error.\n";

static const char pattern_anti_help[] =
    "usage: cairn pattern anti [--max-success-rate X] [--format text|json]\n"
    "\n"
    "Anti-patterns (Get-AntiPatterns): patterns with success_rate <= X and at\n"
    "least 2 occurrences, lowest success rate first. Opens the store read-only.\n"
    "\n"
    "Options:\n"
    "  --max-success-rate X  0-1 (default 0.3)\n"
    "  --format F            text (default): lines as `pattern list`; json: an\n"
    "                        array\n"
    "\n"
    "Exit status: 0 success (also when none matches); 1 no store, I/O error; 64\n"
    "usage error.\n";

/* ---- output ---------------------------------------------------------------------- */

static void print_pattern_line(const cairn_pattern *p)
{
    printf("%.4f  %llu  %s: %s -> %s  (%s)\n", p->success_rate,
           (unsigned long long)p->occurrences, p->name, p->trigger, p->action, p->id);
}

/* ---- add, list, anti --------------------------------------------------------------- */

static int pattern_add(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_optspec spec[] = {{"name", 1},         {"trigger", 1},    {"action", 1},
                                       {"description", 1},  {"success-rate", 1},
                                       {"episode-id", 1},   {"format", 1},     {NULL, 0}};
    cairn_pattern_spec ps = CAIRN_PATTERN_SPEC_INIT;
    cairn_pattern *p = NULL;
    size_t n = 0;
    const char *name, *val;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (cli_reflex_arg(ctx, x, name, val, pattern_add_help, &json, &rc))
            continue;
        if (strcmp(name, "name") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, ps.name = val);
        else if (strcmp(name, "trigger") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, ps.trigger = val);
        else if (strcmp(name, "action") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, ps.action = val);
        else if (strcmp(name, "description") == 0)
            ps.description = val;
        else if (strcmp(name, "success-rate") == 0)
            rc = cli_opt_double(ctx->cmd, name, val, 0.0, 1.0, &ps.success_rate);
        else if (strcmp(name, "episode-id") == 0)
            rc = cli_opt_nonempty(ctx->cmd, name, ps.episode = val);
    }
    if (rc < 0 && ps.name == NULL)
        rc = cli_opt_missing(ctx->cmd, "name");
    if (rc < 0 && ps.trigger == NULL)
        rc = cli_opt_missing(ctx->cmd, "trigger");
    if (rc < 0 && ps.action == NULL)
        rc = cli_opt_missing(ctx->cmd, "action");
    if (rc >= 0)
        return rc;
    if ((rc = cli_reflex_open(ctx, 1, &db, &r)) != CLI_EXIT_OK)
        return rc;
    /* cairn.h has no call that frees the members of the one pattern
     * cairn_pattern_add() can return (cairn_patterns_free() frees an array
     * it allocated), so the pattern is read back from the list. */
    x = cairn_pattern_add(r, &ps, NULL);
    if (x == CAIRN_OK)
        x = cairn_pattern_list(r, 0.0, 1, &p, &n);
    if (x != CAIRN_OK) {
        rc = cli_reflex_fail(ctx, r, x, NULL);
    } else {
        size_t i = 0;
        while (i < n && strcmp(p[i].name, ps.name) != 0)
            i++;
        if (i < n)
            cli_emit(cairn__json_pattern(&p[i]), json);
        else
            rc = cli_fail(ctx->cmd, CAIRN_ENOTFOUND, "pattern '%s' was added but is not listed",
                          ps.name);
        cairn_patterns_free(p, n);
    }
    return cli_reflex_close(ctx, db, r, rc);
}

/* list (anti = 0) and anti (anti = 1) */
static int pattern_query(cli_ctx *ctx, int argc, char **argv, int anti)
{
    static const cli_optspec list_spec[] = {
        {"min-success-rate", 1}, {"min-occurrences", 1}, {"format", 1}, {NULL, 0}};
    static const cli_optspec anti_spec[] = {{"max-success-rate", 1}, {"format", 1}, {NULL, 0}};
    const char *name, *val;
    double rate = anti ? 0.3 : 0.0;
    uint64_t min_occ = 1;
    cairn_pattern *p = NULL;
    size_t n = 0;
    cairn_db *db = NULL;
    cairn_reflex *r = NULL;
    cli_args a;
    int rc = -1, x, json = 0;

    cli_args_init(&a, ctx, anti ? anti_spec : list_spec, argc, argv);
    while (rc < 0 && (x = cli_args_next(&a, &name, &val)) != CLI_ARG_END) {
        if (cli_reflex_arg(ctx, x, name, val, anti ? pattern_anti_help : pattern_list_help,
                           &json, &rc))
            continue;
        if (strcmp(name, "min-occurrences") == 0)
            rc = cli_opt_uint(ctx->cmd, name, val, 1, 1000, &min_occ);
        else /* min-success-rate or max-success-rate */
            rc = cli_opt_double(ctx->cmd, name, val, 0.0, 1.0, &rate);
    }
    if (rc >= 0)
        return rc;
    if ((rc = cli_reflex_open(ctx, 0, &db, &r)) != CLI_EXIT_OK)
        return rc;
    x = anti ? cairn_pattern_anti(r, rate, &p, &n) : cairn_pattern_list(r, rate, min_occ, &p, &n);
    if (x != CAIRN_OK) {
        rc = cli_reflex_fail(ctx, r, x, NULL);
    } else if (json) {
        cJSON *arr = cJSON_CreateArray();
        for (size_t i = 0; arr && i < n; i++)
            cJSON_AddItemToArray(arr, cairn__json_pattern(&p[i]));
        cli_print_cjson(arr);
    } else {
        for (size_t i = 0; i < n; i++)
            print_pattern_line(&p[i]);
    }
    if (x == CAIRN_OK)
        cairn_patterns_free(p, n);
    return cli_reflex_close(ctx, db, r, rc);
}

static int pattern_list(cli_ctx *ctx, int argc, char **argv)
{
    return pattern_query(ctx, argc, argv, 0);
}

static int pattern_anti(cli_ctx *ctx, int argc, char **argv)
{
    return pattern_query(ctx, argc, argv, 1);
}

int cmd_pattern(cli_ctx *ctx, int argc, char **argv)
{
    static const cli_subcmd subs[] = {
        {"add", "pattern add", pattern_add_help, pattern_add},
        {"list", "pattern list", pattern_list_help, pattern_list},
        {"anti", "pattern anti", pattern_anti_help, pattern_anti},
        {NULL, NULL, NULL, NULL}};
    return cli_subcommand(ctx, cmd_pattern_help, subs, argc, argv);
}
