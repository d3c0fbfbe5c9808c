#!/bin/sh
# extract_samples.sh - run the session-log extractor over a directory of
# agent session logs and report what it found, through the public API
# (cairn_episode_extract). Not part of `make test`; reads, never writes,
# the logs.
#
#   sh bench/extract_samples.sh [SESSIONS_DIR [EPISODES_DIR [BUILD]]]
#
# SESSIONS_DIR (default /work/shared/data/ai-agents/sessions): *.md / *.json
# session logs. EPISODES_DIR (optional; default the sibling episodes/ when it
# exists): episodes the original tool produced, summarised the same way for
# comparison. BUILD (default build): where libcairn.a is (`make lib` first).
#
# Output: one JSON line per log {"log", "ok", "outcome", "events",
# "by_type": {...}, "decisions", "lessons", "ms"}, then a "total" line for
# the extracted episodes and, with EPISODES_DIR, a "reference" line for the
# original ones, and a line naming per-log outliers (no events; more than
# twice the mean). The compiled driver lives in a temporary directory.
set -eu
SESS=${1:-/work/shared/data/ai-agents/sessions}
EPIS=${2:-$(dirname "$SESS")/episodes}
BUILD=${3:-build}
[ -f "$BUILD/libcairn.a" ] || { echo "no $BUILD/libcairn.a: run make lib" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/drv.c" <<'EOF'
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cairn.h"

static const char *const TYPES[] = {"milestone", "commit", "error", "test", "handoff",
                                    "tool_call"};
#define NT 6

typedef struct tot {
    long logs, ok, events, decisions, lessons, by[NT], outcome[3];
} tot;

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *b = NULL;
    long sz;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        (b = malloc((size_t)sz + 1)) == NULL || fread(b, 1, (size_t)sz, f) != (size_t)sz) {
        free(b);
        b = NULL;
    }
    if (f != NULL)
        fclose(f);
    *n = b != NULL ? (size_t)sz : 0;
    return b;
}

/* Count one episode into t; print its line when name != NULL. */
static void count(tot *t, const cJSON *ep, const char *name, double ms)
{
    const cJSON *ev = cJSON_GetObjectItem(ep, "events"), *it;
    const char *oc = cJSON_GetStringValue(cJSON_GetObjectItem(ep, "outcome"));
    long by[NT] = {0};
    int nd = cJSON_GetArraySize(cJSON_GetObjectItem(ep, "decisions"));
    int nl = cJSON_GetArraySize(cJSON_GetObjectItem(ep, "lessons"));
    cJSON_ArrayForEach(it, ev) {
        const char *ty = cJSON_GetStringValue(cJSON_GetObjectItem(it, "type"));
        for (int k = 0; ty != NULL && k < NT; k++)
            by[k] += strcmp(ty, TYPES[k]) == 0;
    }
    t->ok++;
    t->events += cJSON_GetArraySize(ev);
    t->decisions += nd;
    t->lessons += nl;
    for (int k = 0; k < NT; k++)
        t->by[k] += by[k];
    for (int k = 0; k < 3 && oc != NULL; k++)
        t->outcome[k] += strcmp(oc, (const char *[]){"success", "partial", "failure"}[k]) == 0;
    if (name == NULL)
        return;
    printf("{\"log\": \"%s\", \"ok\": true, \"outcome\": \"%s\", \"events\": %d, \"by_type\": {", name,
           oc != NULL ? oc : "?", cJSON_GetArraySize(ev));
    for (int k = 0; k < NT; k++)
        printf("%s\"%s\": %ld", k ? ", " : "", TYPES[k], by[k]);
    printf("}, \"decisions\": %d, \"lessons\": %d, \"ms\": %.3f}\n", nd, nl, ms);
}

static void print_tot(const char *what, const tot *t)
{
    printf("{\"%s\": true, \"logs\": %ld, \"extracted\": %ld, \"events\": %ld, \"by_type\": {", what,
           t->logs, t->ok, t->events);
    for (int k = 0; k < NT; k++)
        printf("%s\"%s\": %ld", k ? ", " : "", TYPES[k], t->by[k]);
    printf("}, \"decisions\": %ld, \"lessons\": %ld, \"outcomes\": {\"success\": %ld, "
           "\"partial\": %ld, \"failure\": %ld}}\n", t->decisions, t->lessons, t->outcome[0],
           t->outcome[1], t->outcome[2]);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
    struct dirent **ents;
    tot t = {0}, ref = {0};
    int n = scandir(argv[1], &ents, NULL, by_name);
    long *evs = calloc(n > 0 ? (size_t)n : 1, sizeof *evs);
    char **names = calloc(n > 0 ? (size_t)n : 1, sizeof *names);
    int m = 0;
    if (n < 0 || evs == NULL || names == NULL)
        return 1;
    for (int i = 0; i < n; i++) {
        char path[4096], err[CAIRN_ERRMSG_MAX] = "", *json = NULL;
        size_t len;
        char *data;
        struct timespec a, b;
        const char *dn = ents[i]->d_name;
        if (dn[0] == '.' || (strstr(dn, ".md") == NULL && strstr(dn, ".json") == NULL))
            continue;
        snprintf(path, sizeof path, "%s/%s", argv[1], dn);
        if ((data = slurp(path, &len)) == NULL)
            continue;
        t.logs++;
        clock_gettime(CLOCK_MONOTONIC, &a);
        int rc = cairn_episode_extract(dn, data, len, &json, err);
        clock_gettime(CLOCK_MONOTONIC, &b);
        if (rc != CAIRN_OK) {
            printf("{\"log\": \"%s\", \"ok\": false, \"error\": %d}\n", dn, rc);
        } else {
            cJSON *ep = cJSON_Parse(json);
            count(&t, ep, dn, (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
            evs[m] = cJSON_GetArraySize(cJSON_GetObjectItem(ep, "events"));
            names[m++] = strdup(dn);
            cJSON_Delete(ep);
        }
        free(json);
        free(data);
    }
    print_tot("total", &t);
    if (argc > 2 && argv[2][0] != 0) {
        int k = scandir(argv[2], &ents, NULL, by_name);
        for (int i = 0; i < k; i++) {
            char path[4096];
            size_t len;
            char *data;
            cJSON *ep;
            if (strstr(ents[i]->d_name, ".json") == NULL)
                continue;
            snprintf(path, sizeof path, "%s/%s", argv[2], ents[i]->d_name);
            if ((data = slurp(path, &len)) == NULL)
                continue;
            ref.logs++;
            if ((ep = cJSON_ParseWithLength(data, len)) != NULL)
                count(&ref, ep, NULL, 0);
            cJSON_Delete(ep);
            free(data);
        }
        print_tot("reference", &ref);
    }
    printf("{\"outliers\": [");
    for (int i = 0, first = 1; i < m; i++)
        if (evs[i] == 0 || (t.ok > 0 && evs[i] * t.ok > 2 * t.events)) {
            printf("%s{\"log\": \"%s\", \"events\": %ld}", first ? "" : ", ", names[i], evs[i]);
            first = 0;
        }
    printf("]}\n");
    return 0;
}
EOF
${CC:-cc} -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O2 -Iengine/include \
  -o "$TMP/drv" "$TMP/drv.c" "$BUILD/libcairn.a" \
  -lzstd -lxxhash -lutf8proc -lstemmer -lcjson -lcrypto -lm -pthread
if [ -d "$EPIS" ]; then "$TMP/drv" "$SESS" "$EPIS"; else "$TMP/drv" "$SESS" ""; fi
