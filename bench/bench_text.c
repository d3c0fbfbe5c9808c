/*
 * bench_text.c - the synthetic agent-memory text of the memory benches:
 * word tables, sentences and recall queries from a seeded splitmix64
 * stream (bench_text.h).
 *
 * Each table is the base vocabulary (bench_procs) and, apart, the words
 * BENCH_VOCAB_WIDE adds (bench_compact); a wide draw is one draw over both,
 * base words first, so either vocabulary makes the bytes it always made.
 * Append new words to a table's wide part only, and new sentence shapes
 * after the last: anything else changes the texts of every seed.
 */
#include "bench_text.h"

#include <stdio.h>

#include "bench_util.h"

uint64_t bench_rng_state;

/* ---- the word tables ------------------------------------------------------ */

typedef struct words {
    const char *const *base; /* both vocabularies */
    const char *const *wide; /* BENCH_VOCAB_WIDE only; may be NULL */
    unsigned n_base, n_wide;
} words;

#define WORDS(base, wide) {(base), (wide), NELEM(base), NELEM(wide)}
#define WORDS_BASE(base) {(base), NULL, NELEM(base), 0}

static const char *const people[] = {
    "Alice", "Bob", "Carol", "Dmitri", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonas",
    "Keiko", "Liam", "Maya", "Nadia", "Omar", "Priya", "Quentin", "Rosa", "Sven", "Tara",
    "Umar", "Vera", "Wen", "Xavier", "Yusuf", "Zoe", "the user", "the manager", "the client",
    "the on-call engineer"};
static const char *const people_wide[] = {"the designer", "the new intern", "the finance lead"};
static const char *const things[] = {
    "dark mode", "tabs over spaces", "short answers", "bullet points", "metric units",
    "morning meetings", "async updates", "Python", "Rust", "TypeScript", "vim", "emacs",
    "a standing desk", "green tea", "espresso", "email over chat", "detailed logs",
    "weekly summaries", "code review before lunch", "plain text reports"};
static const char *const things_wide[] = {"video calls", "written proposals",
                                          "small pull requests", "feature flags",
                                          "trunk-based development"};
static const char *const projects[] = {
    "the billing service", "the search index", "the mobile app", "the data pipeline",
    "the onboarding flow", "the payments API", "the analytics dashboard", "the auth gateway",
    "the recommendation model", "the docs site", "the CI runners", "the inventory system",
    "the chat widget", "the export job", "the scheduler", "the reporting cluster"};
static const char *const projects_wide[] = {"the pricing page", "the fraud detector",
                                            "the warehouse sync", "the support inbox"};
static const char *const services[] = {
    "billing", "search", "auth", "payments", "gateway", "scheduler", "exporter", "indexer",
    "notifier", "ledger", "profile", "catalog", "checkout", "metrics", "storage", "webhooks"};
static const char *const services_wide[] = {"invoicing", "shipping", "recommendations",
                                            "audit"};
static const char *const days[] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday",
                                   "Saturday", "Sunday"};
static const char *const months[] = {"January", "February", "March", "April", "May", "June",
                                     "July", "August", "September", "October", "November",
                                     "December"};
static const char *const reasons[] = {
    "the token expired", "a migration timed out", "the disk was full", "a flaky test",
    "the cache was cold", "DNS failed", "a config typo", "the quota was exceeded",
    "a race in the retry loop", "an expired certificate", "a missing index",
    "the queue backed up"};
static const char *const reasons_wide[] = {"a dependency was yanked",
                                           "the lock was never released",
                                           "clock skew between hosts", "an out-of-memory kill"};
static const char *const tools[] = {
    "Postgres", "Redis", "Kafka", "S3", "Terraform", "Grafana", "Sentry", "Jira", "Slack",
    "Notion", "GitHub Actions", "Kubernetes", "Docker", "Airflow", "BigQuery", "Stripe"};
static const char *const tools_wide[] = {"Elasticsearch", "RabbitMQ", "Prometheus", "Vault"};
static const char *const foods[] = {"peanuts", "shellfish", "gluten", "dairy", "soy",
                                    "sesame", "eggs", "strawberries"};
static const char *const cities[] = {"Berlin", "Lisbon", "Osaka", "Toronto", "Nairobi",
                                     "Lima", "Oslo", "Seoul", "Austin", "Dublin"};
static const char *const cities_wide[] = {"Madrid", "Hanoi", "Cairo", "Denver", "Krakow",
                                          "Perth"};
static const char *const issues[] = {
    "slow page loads", "duplicate invoices", "missing emails", "a login loop",
    "wrong totals", "stale search results", "crashes on startup", "timeouts on upload"};
static const char *const issues_wide[] = {"broken CSV exports", "double charges",
                                          "lost sessions", "garbled PDFs"};
static const char *const followups[] = {
    "Follow up next week if nothing changes.", "Keep this in mind for the quarterly review.",
    "They want a written summary afterwards.", "Do not bring it up in the team channel.",
    "This was confirmed twice, so treat it as settled.", "Ask again before the release.",
    "The decision can be revisited after the audit.", "Mention it in the handover notes."};

static const words PEOPLE = WORDS(people, people_wide);
static const words THINGS = WORDS(things, things_wide);
static const words PROJECTS = WORDS(projects, projects_wide);
static const words SERVICES = WORDS(services, services_wide);
static const words DAYS = WORDS_BASE(days);
static const words MONTHS = WORDS_BASE(months);       /* wide shapes only */
static const words REASONS = WORDS(reasons, reasons_wide);
static const words TOOLS = WORDS(tools, tools_wide);
static const words FOODS = WORDS_BASE(foods);
static const words CITIES = WORDS(cities, cities_wide);
static const words ISSUES = WORDS(issues, issues_wide);
static const words FOLLOWUPS = WORDS_BASE(followups); /* wide shapes only */

/* One word of t in vocabulary v: a single draw over the words v has. */
static const char *pick(const words *t, bench_vocab v)
{
    unsigned i = bench_rnd(v == BENCH_VOCAB_WIDE ? t->n_base + t->n_wide : t->n_base);
    return i < t->n_base ? t->base[i] : t->wide[i - t->n_base];
}

#define PICK(t) pick(&(t), v)

/* ---- sentences ------------------------------------------------------------ */

/* The draws of one sentence are snprintf's arguments, evaluated in an order
 * C leaves to the compiler: gcc and clang make different texts from one
 * seed (each the same ones run after run). */

size_t bench_sentence(char *out, size_t cap, bench_vocab v)
{
    int n;
    switch (bench_rnd(v == BENCH_VOCAB_WIDE ? 12 : 10)) {
    case 0:
        n = snprintf(out, cap, "%s prefers %s when working on %s.", PICK(PEOPLE), PICK(THINGS),
                     PICK(PROJECTS));
        break;
    case 1:
        n = snprintf(out, cap, "The %s deploy failed on %s at %u:%02u because %s.",
                     PICK(SERVICES), PICK(DAYS), bench_rnd(24), bench_rnd(60), PICK(REASONS));
        break;
    case 2:
        n = snprintf(out, cap, "%s asked to move the %s review to %s at %u:%02u.", PICK(PEOPLE),
                     PICK(SERVICES), PICK(DAYS), 8 + bench_rnd(10), 15 * bench_rnd(4));
        break;
    case 3:
        n = snprintf(out, cap, "Remember that %s uses %s for %s, not %s.", PICK(PROJECTS),
                     PICK(TOOLS), PICK(SERVICES), PICK(TOOLS));
        break;
    case 4:
        n = snprintf(out, cap, "Customer %s from %s reported %s after upgrading to %u.%u.%u.",
                     PICK(PEOPLE), PICK(CITIES), PICK(ISSUES), 1 + bench_rnd(5), bench_rnd(20),
                     bench_rnd(30));
        break;
    case 5:
        if (v == BENCH_VOCAB_WIDE)
            n = snprintf(out, cap, "Order %u for %s ships to %s on %s %u.",
                         10000 + bench_rnd(900000), PICK(PEOPLE), PICK(CITIES), PICK(MONTHS),
                         1 + bench_rnd(28));
        else
            n = snprintf(out, cap, "Order %u for %s ships to %s on %s.",
                         10000 + bench_rnd(900000), PICK(PEOPLE), PICK(CITIES), PICK(DAYS));
        break;
    case 6:
        n = snprintf(out, cap,
                     "The %s API allows %u requests per minute; %s hit the limit with %s.",
                     PICK(SERVICES), 50 * (1 + bench_rnd(200)), PICK(PROJECTS), PICK(TOOLS));
        break;
    case 7:
        n = snprintf(out, cap, "Fixed %s in %s by upgrading %s; see ticket %c%c-%u.",
                     PICK(ISSUES), PICK(PROJECTS), PICK(TOOLS), 'A' + bench_rnd(26),
                     'A' + bench_rnd(26), 100 + bench_rnd(9900));
        break;
    case 8:
        n = snprintf(out, cap, "%s is allergic to %s and is travelling to %s for %u days.",
                     PICK(PEOPLE), PICK(FOODS), PICK(CITIES), 2 + bench_rnd(12));
        break;
    case 9:
        n = snprintf(out, cap, "%s owns %s; escalate %s to them before %u pm on %s.",
                     PICK(PEOPLE), PICK(PROJECTS), PICK(ISSUES), 1 + bench_rnd(6), PICK(DAYS));
        break;
    case 10: /* wide only, as is the default */
        n = snprintf(out, cap, "In %s the team agreed to replace %s with %s in %s.",
                     PICK(MONTHS), PICK(TOOLS), PICK(TOOLS), PICK(PROJECTS));
        break;
    default:
        n = snprintf(out, cap, "%s", PICK(FOLLOWUPS));
        break;
    }
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* ---- queries -------------------------------------------------------------- */

/* Words of the sentences above, the ones a query is made of. */
static const char *const qwords[] = {
    "deploy", "failed", "token", "expired", "billing", "search", "payments", "review",
    "Tuesday", "Friday", "Postgres", "Kafka", "Redis", "allergic", "peanuts", "Berlin",
    "Osaka", "customer", "upgrading", "invoices", "login", "timeouts", "ticket", "quota",
    "migration", "certificate", "dark", "mode", "Python", "Rust", "prefers", "meetings",
    "Alice", "Omar", "Priya", "Zoe", "manager", "escalate", "pipeline", "dashboard",
    "gateway", "scheduler", "order", "ships", "requests", "limit", "cache", "disk"};
static const char *const qwords_wide[] = {"Vault", "audit", "Krakow", "summary",
                                          "release", "fraud", "warehouse", "March"};
static const words QWORDS = WORDS(qwords, qwords_wide);

bench_query *bench_queries_make(size_t n, uint64_t seed, bench_vocab v)
{
    bench_query *q = bench_malloc(n * sizeof *q);
    bench_rng_state = seed ^ 0x51ED5EEDull;
    for (size_t i = 0; i < n; i++) {
        unsigned w = 1 + bench_rnd(3);
        size_t len = 0;
        for (unsigned k = 0; k < w; k++)
            len += (size_t)snprintf(q[i] + len, sizeof q[i] - len, "%s%s", k ? " " : "",
                                    PICK(QWORDS));
    }
    return q;
}
