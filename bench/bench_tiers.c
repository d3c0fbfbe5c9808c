/*
 * bench_tiers.c - the memory stream next to SQLite, same run, same entries
 * (public API only). Never part of `make test`.
 *
 * Data: --n (100,000) stream entries, one per cycle (cycles 1..n, as an
 * agent team logs: one role acts per cycle), roles drawn from 10, an
 * importance of 1-10, a type of 3, a sentence of agent facts
 * (bench_text.h) as content and action, a third of them referring to one
 * of 500 issues. cairn: cairn_stream_add into scope global of a fresh
 * store (durability batch), then the handle is closed and a fresh
 * read-only handle answers. SQLite: a table with every field (tags and
 * refs as JSON text), an index on cycle and an FTS5 table over content
 * (porter tokenizer), in one transaction; WAL.
 *
 * Queries (--queries each, from one seed, the same for both):
 *   by_cycle  recallByCycle: every entry of a random 1,000-cycle range
 *             (--range), by cycle. cairn: cairn_stream_list, which returns
 *             the entries as JSON text. SQLite: SELECT json_object(every
 *             field) ... WHERE cycle BETWEEN ? AND ? ORDER BY cycle, every
 *             row read: the same JSON entries (the raw rows without
 *             json_object are timed too, and printed).
 *   search    recallSearch with filters: a 1-3 word query, a role and a
 *             minimum importance of 5, the best 5. cairn:
 *             cairn_stream_search. SQLite: FTS5 MATCH (the words ORed),
 *             joined to the table, role = ? AND importance >= ?, ORDER BY
 *             bm25 LIMIT 5, each row as json_object.
 * Each query is timed alone; median and p99 per engine; the ratio is
 * SQLite's over cairn's (higher: cairn faster). The query set runs twice:
 * the first pass on fresh handles (cold, printed), the second warm (the
 * table; a long-lived server's case). Target: at least 10x for both warm
 * medians.
 *
 * usage: bench_tiers [--n N] [--range R] [--queries Q] [--dir DIR] [--seed S]
 */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_text.h"
#include "bench_util.h"
#include "cairn.h"

static const char *const roles[10] = {"ceo",      "growth", "research", "frontier", "product",
                                      "scrum",    "qa",     "engineering", "ops",   "design"};
static const char *const types[3] = {"action", "observation", "decision"};

typedef struct entry {
    int64_t cycle;
    int role, importance, type, issue; /* issue 0: none */
    char text[160];
} entry;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void stats(double *t, size_t n, double *p50, double *p99)
{
    qsort(t, n, sizeof *t, cmp_d);
    *p50 = t[n / 2];
    *p99 = t[(size_t)((double)(n - 1) * 0.99)];
}

static void sq_check(sqlite3 *db, int rc, const char *what)
{
    if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW)
        bench_die("sqlite %s: %s", what, sqlite3_errmsg(db));
}

int main(int argc, char **argv)
{
    size_t n = 100000, nq = 200, range = 1000;
    uint64_t seed = 42;
    const char *dir = "build/bench-tmp";
    char path[2048], sqpath[2048], buf[4200];
    entry *es;
    bench_query *qs;
    int64_t *qfrom;
    int *qrole;
    double *t, p50, p99, c_list50, c_list99, s_list50, s_list99, s_raw50, s_raw99, c_s50, c_s99,
        s_s50, s_s99, t0;
    cairn_db *db = NULL;
    cairn_mem *mem = NULL;
    cairn_options o = CAIRN_OPTIONS_INIT;
    char err[CAIRN_ERRMSG_MAX];
    sqlite3 *sq;
    sqlite3_stmt *ins, *insf, *list, *raw, *srch;
    size_t got_c = 0, got_s = 0;
    double cold[8];

    bench_name = "bench_tiers";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--n") == 0 && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--range") == 0 && i + 1 < argc)
            range = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--queries") == 0 && i + 1 < argc)
            nq = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            dir = argv[++i];
        else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 10);
        else
            bench_die("usage: bench_tiers [--n N] [--range R] [--queries Q] [--dir DIR] [--seed S]");
    }
    if (n < range || nq == 0)
        bench_die("--n must be at least --range, --queries at least 1");
    snprintf(path, sizeof path, "%s/tiers-cairn", dir);
    snprintf(sqpath, sizeof sqpath, "%s/tiers.sqlite", dir);
    bench_rm_rf(path);
    bench_rm_rf(sqpath);
    snprintf(buf, sizeof buf, "%s-wal", sqpath);
    bench_rm_rf(buf);

    /* the entries and the queries, before any clock */
    bench_rng_state = seed;
    es = bench_malloc(n * sizeof *es);
    for (size_t i = 0; i < n; i++) {
        es[i].cycle = (int64_t)i + 1;
        es[i].role = (int)bench_rnd(10);
        es[i].importance = 1 + (int)bench_rnd(10);
        es[i].type = (int)bench_rnd(3);
        es[i].issue = bench_rnd(3) == 0 ? 1 + (int)bench_rnd(500) : 0;
        bench_sentence(es[i].text, sizeof es[i].text, BENCH_VOCAB_WIDE);
    }
    qs = bench_queries_make(nq, seed, BENCH_VOCAB_WIDE);
    qfrom = bench_malloc(nq * sizeof *qfrom);
    qrole = bench_malloc(nq * sizeof *qrole);
    for (size_t i = 0; i < nq; i++) {
        qfrom[i] = 1 + (int64_t)bench_rnd((unsigned)(n - range + 1));
        qrole[i] = (int)bench_rnd(10);
    }
    t = bench_malloc(nq * sizeof *t);

    /* ---- cairn: load ---- */
    o.create = 1;
    o.durability = CAIRN_DURABILITY_BATCH;
    if (cairn_open(&db, path, &o, err, sizeof err) != CAIRN_OK)
        bench_die("cairn_open: %s", err);
    bench_check(db, cairn_mem_open(db, NULL, &mem), "cairn_mem_open");
    t0 = bench_now();
    for (size_t i = 0; i < n; i++) {
        char issue[32] = "";
        if (es[i].issue)
            snprintf(issue, sizeof issue, "%d", es[i].issue);
        snprintf(buf, sizeof buf,
                 "{\"cycle\":%lld,\"role\":\"%s\",\"content\":\"%s\",\"action\":\"%s\","
                 "\"importance\":%d,\"type\":\"%s\",\"issueRefs\":[%s]}",
                 (long long)es[i].cycle, roles[es[i].role], es[i].text, es[i].text,
                 es[i].importance, types[es[i].type], issue);
        if (cairn_stream_add(mem, NULL, buf, NULL) != CAIRN_OK)
            bench_die("cairn_stream_add: %s", cairn_mem_errmsg(mem));
    }
    fprintf(stderr, "cairn: %zu entries added in %.2f s\n", n, bench_now() - t0);
    cairn_mem_close(mem);
    bench_check(db, cairn_close(db), "cairn_close");
    o = (cairn_options)CAIRN_OPTIONS_INIT;
    o.read_only = 1;
    if (cairn_open(&db, path, &o, err, sizeof err) != CAIRN_OK)
        bench_die("cairn_open: %s", err);
    t0 = bench_now();
    bench_check(db, cairn_mem_open(db, NULL, &mem), "cairn_mem_open");
    fprintf(stderr, "cairn: read-only open %.1f ms\n", (bench_now() - t0) * 1e3);

    /* ---- SQLite: load ---- */
    sq_check(NULL, sqlite3_open(sqpath, &sq), "open");
    sq_check(sq, sqlite3_exec(sq, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                                  "CREATE TABLE stream(id TEXT PRIMARY KEY, cycle INTEGER, role TEXT,"
                                  " action TEXT, content TEXT, importance INTEGER, type TEXT,"
                                  " tags TEXT, issue_refs TEXT, pr_refs TEXT, token_estimate INTEGER,"
                                  " timestamp TEXT);"
                                  "CREATE INDEX stream_cycle ON stream(cycle);"
                                  "CREATE VIRTUAL TABLE stream_fts USING fts5(content, tokenize='porter');",
                              NULL, NULL, NULL), "schema");
    sq_check(sq, sqlite3_prepare_v2(sq, "INSERT INTO stream VALUES(?,?,?,?,?,?,?,'[]',?,'[]',?,?)", -1,
                                    &ins, NULL), "prepare");
    sq_check(sq, sqlite3_prepare_v2(sq, "INSERT INTO stream_fts(rowid, content) VALUES(?,?)", -1,
                                    &insf, NULL), "prepare");
    t0 = bench_now();
    sq_check(sq, sqlite3_exec(sq, "BEGIN", NULL, NULL, NULL), "begin");
    for (size_t i = 0; i < n; i++) {
        char id[40], refs[32];
        snprintf(id, sizeof id, "e%zu", i);
        snprintf(refs, sizeof refs, es[i].issue ? "[%d]" : "[]", es[i].issue);
        sqlite3_bind_text(ins, 1, id, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(ins, 2, es[i].cycle);
        sqlite3_bind_text(ins, 3, roles[es[i].role], -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 4, es[i].text, -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 5, es[i].text, -1, SQLITE_STATIC);
        sqlite3_bind_int(ins, 6, es[i].importance);
        sqlite3_bind_text(ins, 7, types[es[i].type], -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 8, refs, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(ins, 9, (int)((strlen(es[i].text) + 3) / 4));
        sqlite3_bind_text(ins, 10, "2026-02-10T00:00:00.000Z", -1, SQLITE_STATIC);
        sq_check(sq, sqlite3_step(ins), "insert");
        sqlite3_reset(ins);
        sqlite3_bind_int64(insf, 1, sqlite3_last_insert_rowid(sq));
        sqlite3_bind_text(insf, 2, es[i].text, -1, SQLITE_STATIC);
        sq_check(sq, sqlite3_step(insf), "insert fts");
        sqlite3_reset(insf);
    }
    sq_check(sq, sqlite3_exec(sq, "COMMIT", NULL, NULL, NULL), "commit");
    fprintf(stderr, "sqlite: %zu rows in %.2f s\n", n, bench_now() - t0);
    sq_check(sq, sqlite3_prepare_v2(sq,
        "SELECT json_object('id',id,'cycle',cycle,'timestamp',timestamp,'role',role,'action',action,"
        "'content',content,'importance',importance,'type',type,'tags',json(tags),"
        "'issueRefs',json(issue_refs),'prRefs',json(pr_refs),'tokenEstimate',token_estimate)"
        " FROM stream WHERE cycle BETWEEN ? AND ? ORDER BY cycle", -1, &list, NULL), "prepare");
    sq_check(sq, sqlite3_prepare_v2(sq,
        "SELECT id, cycle, timestamp, role, action, content, importance, type, tags, issue_refs,"
        " pr_refs, token_estimate FROM stream WHERE cycle BETWEEN ? AND ? ORDER BY cycle",
        -1, &raw, NULL), "prepare");
    sq_check(sq, sqlite3_prepare_v2(sq,
        "SELECT json_object('id',s.id,'cycle',s.cycle,'timestamp',s.timestamp,'role',s.role,"
        "'action',s.action,'content',s.content,'importance',s.importance,'type',s.type,"
        "'tags',json(s.tags),'issueRefs',json(s.issue_refs),'prRefs',json(s.pr_refs),"
        "'tokenEstimate',s.token_estimate,'score',bm25(stream_fts))"
        " FROM stream_fts JOIN stream s ON s.rowid = stream_fts.rowid"
        " WHERE stream_fts MATCH ? AND s.role = ? AND s.importance >= 5"
        " ORDER BY bm25(stream_fts) LIMIT 5", -1, &srch, NULL), "prepare");

    /* Two passes over the same queries: the first on handles that have
     * answered nothing yet (cold: cairn reads rows of its index files as
     * it meets them; SQLite's pages are in its cache from the load), the
     * second warm, as a long-lived server answers. */
    for (int pass = 0; pass < 2; pass++) {
        /* ---- by cycle: alternate engines, query by query ---- */
        {
            double *tc = bench_malloc(nq * sizeof *tc), *ts = bench_malloc(nq * sizeof *ts),
                   *tr = bench_malloc(nq * sizeof *tr);
            cairn_stream_query q = CAIRN_STREAM_QUERY_INIT;
            for (size_t i = 0; i < nq; i++) {
                char *out = NULL;
                size_t rows = 0, bytes = 0;
                q.has_cycles = 1;
                q.cycle_from = qfrom[i];
                q.cycle_to = qfrom[i] + (int64_t)range - 1;
                t0 = bench_now();
                if (cairn_stream_list(mem, &q, &out) != CAIRN_OK)
                    bench_die("cairn_stream_list: %s", cairn_mem_errmsg(mem));
                tc[i] = bench_now() - t0;
                got_c += strlen(out) > 2;
                cairn_free(out);
                t0 = bench_now();
                sqlite3_bind_int64(list, 1, q.cycle_from);
                sqlite3_bind_int64(list, 2, q.cycle_to);
                while (sqlite3_step(list) == SQLITE_ROW) {
                    bytes += (size_t)sqlite3_column_bytes(list, 0);
                    (void)sqlite3_column_text(list, 0);
                    rows++;
                }
                sqlite3_reset(list);
                ts[i] = bench_now() - t0;
                if (rows != range)
                    bench_die("sqlite: %zu rows for a range of %zu", rows, range);
                t0 = bench_now();
                sqlite3_bind_int64(raw, 1, q.cycle_from);
                sqlite3_bind_int64(raw, 2, q.cycle_to);
                while (sqlite3_step(raw) == SQLITE_ROW)
                    for (int c = 0; c < 12; c++)
                        (void)sqlite3_column_text(raw, c);
                sqlite3_reset(raw);
                tr[i] = bench_now() - t0;
                (void)bytes;
            }
            stats(tc, nq, &c_list50, &c_list99);
            stats(ts, nq, &s_list50, &s_list99);
            stats(tr, nq, &s_raw50, &s_raw99);
            free(tc);
            free(ts);
            free(tr);
        }

        /* ---- search with filters ---- */
        {
            double *tc = bench_malloc(nq * sizeof *tc), *ts = bench_malloc(nq * sizeof *ts);
            cairn_stream_query q = CAIRN_STREAM_QUERY_INIT;
            for (size_t i = 0; i < nq; i++) {
                char *out = NULL, match[BENCH_QUERY_MAX * 2] = "";
                const char *w = qs[i];
                size_t rows = 0;
                q.role = roles[qrole[i]];
                q.min_importance = 5;
                q.limit = 5;
                t0 = bench_now();
                if (cairn_stream_search(mem, qs[i], &q, &out) != CAIRN_OK)
                    bench_die("cairn_stream_search: %s", cairn_mem_errmsg(mem));
                tc[i] = bench_now() - t0;
                got_s += strlen(out) > 2;
                cairn_free(out);
                /* the words ORed, each quoted */
                while (*w) {
                    size_t k = strcspn(w, " ");
                    if (k > 0)
                        snprintf(match + strlen(match), sizeof match - strlen(match), "%s\"%.*s\"",
                                 match[0] ? " OR " : "", (int)k, w);
                    w += k;
                    while (*w == ' ')
                        w++;
                }
                t0 = bench_now();
                sqlite3_bind_text(srch, 1, match, -1, SQLITE_STATIC);
                sqlite3_bind_text(srch, 2, roles[qrole[i]], -1, SQLITE_STATIC);
                while (sqlite3_step(srch) == SQLITE_ROW) {
                    (void)sqlite3_column_text(srch, 0);
                    rows++;
                }
                sqlite3_reset(srch);
                ts[i] = bench_now() - t0;
                (void)rows;
            }
            stats(tc, nq, &c_s50, &c_s99);
            stats(ts, nq, &s_s50, &s_s99);
            free(tc);
            free(ts);
        }

        if (pass == 0) {
            cold[0] = c_list50, cold[1] = c_list99, cold[2] = s_list50, cold[3] = s_list99;
            cold[4] = c_s50, cold[5] = c_s99, cold[6] = s_s50, cold[7] = s_s99;
        }
    }
    (void)p50;
    (void)p99;
    (void)t;
    printf("{\"bench\":\"tiers\",\"part\":\"by_cycle\",\"n\":%zu,\"range\":%zu,\"queries\":%zu,"
           "\"cairn_p50_ms\":%.4f,\"cairn_p99_ms\":%.4f,\"sqlite_json_p50_ms\":%.4f,"
           "\"sqlite_json_p99_ms\":%.4f,\"sqlite_raw_p50_ms\":%.4f,\"sqlite_raw_p99_ms\":%.4f,"
           "\"ratio_p50\":%.2f,\"ratio_p99\":%.2f,\"target\":10,\"pass\":%s}\n",
           n, range, nq, c_list50 * 1e3, c_list99 * 1e3, s_list50 * 1e3, s_list99 * 1e3,
           s_raw50 * 1e3, s_raw99 * 1e3, s_list50 / c_list50, s_list99 / c_list99,
           s_list50 / c_list50 >= 10 ? "true" : "false");
    printf("{\"bench\":\"tiers\",\"part\":\"search\",\"n\":%zu,\"queries\":%zu,"
           "\"cairn_p50_ms\":%.4f,\"cairn_p99_ms\":%.4f,\"sqlite_p50_ms\":%.4f,"
           "\"sqlite_p99_ms\":%.4f,\"ratio_p50\":%.2f,\"ratio_p99\":%.2f,\"target\":10,\"pass\":%s}\n",
           n, nq, c_s50 * 1e3, c_s99 * 1e3, s_s50 * 1e3, s_s99 * 1e3, s_s50 / c_s50, s_s99 / c_s99,
           s_s50 / c_s50 >= 10 ? "true" : "false");
    fprintf(stderr, "\n%-22s %12s %12s %14s %14s %9s %9s\n", "query", "cairn p50", "cairn p99",
            "sqlite p50", "sqlite p99", "p50 x", "p99 x");
    fprintf(stderr, "%-22s %9.3f ms %9.3f ms %11.3f ms %11.3f ms %8.1fx %8.1fx  %s\n",
            "by cycle (1000 cyc.)", c_list50 * 1e3, c_list99 * 1e3, s_list50 * 1e3, s_list99 * 1e3,
            s_list50 / c_list50, s_list99 / c_list99, s_list50 / c_list50 >= 10 ? "PASS" : "FAIL");
    fprintf(stderr, "%-22s %22s %11.3f ms %11.3f ms  (raw rows, no JSON)\n", "", "",
            s_raw50 * 1e3, s_raw99 * 1e3);
    fprintf(stderr, "%-22s %9.3f ms %9.3f ms %11.3f ms %11.3f ms %8.1fx %8.1fx  %s\n",
            "search + filters", c_s50 * 1e3, c_s99 * 1e3, s_s50 * 1e3, s_s99 * 1e3, s_s50 / c_s50,
            s_s99 / c_s99, s_s50 / c_s50 >= 10 ? "PASS" : "FAIL");
    fprintf(stderr, "first pass (cold): by cycle %.3f / %.3f ms vs %.3f / %.3f ms (%.1fx / %.1fx); "
            "search %.3f / %.3f ms vs %.3f / %.3f ms (%.1fx / %.1fx)\n",
            cold[0] * 1e3, cold[1] * 1e3, cold[2] * 1e3, cold[3] * 1e3, cold[2] / cold[0],
            cold[3] / cold[1], cold[4] * 1e3, cold[5] * 1e3, cold[6] * 1e3, cold[7] * 1e3,
            cold[6] / cold[4], cold[7] / cold[5]);
    printf("{\"bench\":\"tiers\",\"part\":\"cold\",\"by_cycle_ratio_p50\":%.2f,"
           "\"by_cycle_ratio_p99\":%.2f,\"search_ratio_p50\":%.2f,\"search_ratio_p99\":%.2f}\n",
           cold[2] / cold[0], cold[3] / cold[1], cold[6] / cold[4], cold[7] / cold[5]);
    if (got_c != 2 * nq)
        bench_die("cairn returned an empty range");
    (void)got_s;
    sqlite3_finalize(ins);
    sqlite3_finalize(insf);
    sqlite3_finalize(list);
    sqlite3_finalize(raw);
    sqlite3_finalize(srch);
    sqlite3_close(sq);
    cairn_mem_close(mem);
    cairn_close(db);
    free(es);
    free(qs);
    free(qfrom);
    free(qrole);
    free(t);
    return 0;
}
