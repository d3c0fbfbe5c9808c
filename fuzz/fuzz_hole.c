/*
 * fuzz_hole.c - the payload of a hole, the log.compacted record compaction
 * leaves where it dropped records (engine/log/hole.c,
 * format-spec/compaction.md), and the builder that writes it.
 *
 * Input: 8 bytes of parameters, then the JSON payload (an input of fewer
 * than 8 bytes is a payload alone, parameters 0):
 *   0..3  u32 seq: the hole's own seq (0 taken as 1); with bit 7 of byte 7
 *         set, 2^53 - seq instead (the top of the exact JSON integers)
 *   4..5  i16 delta: the end and the anchor probed are at seq + delta
 *   6     u8 n of the probed end
 *   7     bit 6: the payload is also a program for the builder; bit 0:
 *         the builder writes no "why"
 *
 * The payload goes to cairn__hole_decode() at seq, to
 * cairn__hole_has_end() and cairn__hole_anchor(); with bit 6 of byte 7 it
 * is also read as a program for the builder (cairn__holeb_add/_anchor/
 * _emit), 3 bytes a record, from seq on (build() says how). The builder
 * pass costs dozens of times the payload pass, hence the bit: inputs of
 * either kind stay in the corpus and the payload ones run fast.
 *
 * Invariants (besides no crash, no leak, no read outside the payload):
 * - decode is deterministic; a success has upto >= seq, 1 <= records <=
 *   upto - seq + 1, bytes >= 40 * records, every number at most 2^53, and
 *   gives the numbers the payload holds (a reference read with cJSON);
 *   a payload that decodes at seq decodes at seq - 1 and at 1 too (a
 *   lower seq only widens its range) with the same fields, and never at
 *   upto + 1;
 * - has_end / anchor answer 1 only for an end [S,N] / anchor [S,"sum"]
 *   the payload lists, only when it decodes (at seq 1: they are given no
 *   seq), and when it decodes at seq, only for S in [seq, upto]; every
 *   listed end and anchor of a payload that decodes is found (an anchor
 *   listed twice: the last one); neither answers for seq - 1 or upto + 1;
 * - round trip: a hole the builder emits is a record of type
 *   log.compacted at the seq and time of the first record it gathered
 *   (decoding with the salt it was encoded with), whose payload decodes
 *   with the upto, records, bytes and deaths gathered, lists exactly the
 *   commit ends (records marked [n-1,n], n >= 2) and the anchors given,
 *   in order, and the why given; has_end / anchor find each of them and
 *   nothing for a seq gathered without one; the builder is empty after.
 */
#include "fuzz.h"

#include <cjson/cJSON.h>

#include "alloc.h"
#include "hole.h"

#define TWO53 (1ull << 53)
#define HOLE_SALT 0x5eed0fca1a5a17edull
#define MAX_GATHER 32 /* records one hole of the builder gathers at most */
/* The builder is given seqs up to this: every integer a payload holds
 * (the builder writes exact digits; cJSON's own printing of doubles was
 * once 1 or 2 off above 2^52, see corpora/hole/regress-builder-above-2-52). */
#ifndef FUZZ_HOLE_BUILD_MAX
#define FUZZ_HOLE_BUILD_MAX (1ull << 53)
#endif

/* ---- the payload ------------------------------------------------------ */

/* A JSON number that is an integer 0..2^53, as the format allows. */
static int ref_u64(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > (double)TWO53 ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return 0;
    *out = (uint64_t)v->valuedouble;
    return 1;
}

/* A reference read of the payload: its numbers and its lists, without the
 * range rules. */
typedef struct ref {
    cJSON *root;
    int object;
    uint64_t upto, records, bytes, deaths;
    int has_upto, has_records, has_bytes, has_deaths;
} ref;

static void ref_read(ref *r, const char *json, size_t len)
{
    memset(r, 0, sizeof *r);
    r->root = cJSON_ParseWithLength(json, len);
    r->object = cJSON_IsObject(r->root);
    if (!r->object)
        return;
    r->has_upto = ref_u64(cJSON_GetObjectItemCaseSensitive(r->root, "upto"), &r->upto);
    r->has_records = ref_u64(cJSON_GetObjectItemCaseSensitive(r->root, "records"), &r->records);
    r->has_bytes = ref_u64(cJSON_GetObjectItemCaseSensitive(r->root, "bytes"), &r->bytes);
    r->has_deaths = ref_u64(cJSON_GetObjectItemCaseSensitive(r->root, "deaths"), &r->deaths);
}

/* Does the payload list the end [s,n]? */
static int ref_lists_end(const ref *r, uint64_t s, uint64_t n)
{
    const cJSON *ends = r->object ? cJSON_GetObjectItemCaseSensitive(r->root, "ends") : NULL, *x;
    if (!cJSON_IsArray(ends))
        return 0;
    cJSON_ArrayForEach(x, ends)
    {
        uint64_t a, b;
        if (cJSON_IsArray(x) && cJSON_GetArraySize(x) == 2 && ref_u64(x->child, &a) &&
            ref_u64(x->child->next, &b) && a == s && b == n)
            return 1;
    }
    return 0;
}

/* A checksum as the format writes it: 16 lowercase hex digits. */
static int ref_sum(const cJSON *v, uint64_t *out)
{
    uint64_t x = 0;
    if (!cJSON_IsString(v) || strlen(v->valuestring) != 16)
        return 0;
    for (int i = 0; i < 16; i++) {
        char c = v->valuestring[i];
        if (c >= '0' && c <= '9')
            x = x << 4 | (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            x = x << 4 | (uint64_t)(c - 'a' + 10);
        else
            return 0;
    }
    *out = x;
    return 1;
}

/* The checksum the payload keeps for s (the last one listed); 0 if none. */
static int ref_anchor(const ref *r, uint64_t s, uint64_t *sum)
{
    const cJSON *an = r->object ? cJSON_GetObjectItemCaseSensitive(r->root, "anchors") : NULL, *x;
    int found = 0;
    if (!cJSON_IsArray(an))
        return 0;
    cJSON_ArrayForEach(x, an)
    {
        uint64_t a, v;
        if (cJSON_IsArray(x) && cJSON_GetArraySize(x) == 2 && ref_u64(x->child, &a) &&
            ref_sum(x->child->next, &v) && a == s) {
            *sum = v;
            found = 1;
        }
    }
    return found;
}

static void same_hole(const cairn__hole *a, const cairn__hole *b)
{
    FUZZ_CHECK(a->upto == b->upto && a->records == b->records && a->bytes == b->bytes &&
               a->deaths == b->deaths);
}

static void check_payload(const char *json, size_t len, uint64_t seq, uint64_t probe,
                          uint64_t probe_n)
{
    cairn__hole h, h2, h1;
    cairn__err e;
    ref r;
    uint64_t sum = 0;
    int rc, rc2, rc1, got;

    memset(e.msg, 'x', sizeof e.msg);
    rc = cairn__hole_decode(json, len, seq, &h, &e);
    rc2 = cairn__hole_decode(json, len, seq, &h2, NULL);
    rc1 = cairn__hole_decode(json, len, 1, &h1, NULL); /* what has_end / anchor read */
    FUZZ_CHECK(rc == rc2);
    FUZZ_CHECK(rc == CAIRN_OK || rc == CAIRN_ECORRUPT);
    FUZZ_CHECK(rc1 == CAIRN_OK || rc1 == CAIRN_ECORRUPT);
    ref_read(&r, json, len);

    if (rc != CAIRN_OK) {
        FUZZ_CHECK(memchr(e.msg, '\0', sizeof e.msg) != NULL && e.msg[0] != '\0');
    } else {
        same_hole(&h, &h2);
        FUZZ_CHECK(h.seq == seq && h2.seq == seq);
        FUZZ_CHECK(h.upto >= seq && h.upto <= TWO53);
        FUZZ_CHECK(h.records >= 1 && h.records - 1 <= h.upto - seq);
        FUZZ_CHECK(h.bytes <= TWO53 && h.deaths <= TWO53);
        FUZZ_CHECK(h.bytes / REC_OVERHEAD >= h.records);
        /* the numbers the payload holds */
        FUZZ_CHECK(r.object && r.has_upto && r.has_records && r.has_bytes);
        FUZZ_CHECK(r.upto == h.upto && r.records == h.records && r.bytes == h.bytes);
        FUZZ_CHECK(r.has_deaths ? r.deaths == h.deaths : h.deaths == 0);
        /* a lower seq only widens the range: it decodes there too */
        FUZZ_CHECK(rc1 == CAIRN_OK);
        same_hole(&h, &h1);
        if (seq > 1) {
            cairn__hole hm;
            FUZZ_CHECK(cairn__hole_decode(json, len, seq - 1, &hm, NULL) == CAIRN_OK);
            same_hole(&h, &hm);
        }
        if (h.upto < TWO53) {
            cairn__hole hu;
            FUZZ_CHECK(cairn__hole_decode(json, len, h.upto + 1, &hu, NULL) == CAIRN_ECORRUPT);
        }
    }

    /* The probes, anywhere. */
    if (probe_n >= 2) {
        got = cairn__hole_has_end(json, len, probe, probe_n);
        FUZZ_CHECK(got == 0 || got == 1);
        FUZZ_CHECK(got == cairn__hole_has_end(json, len, probe, probe_n));
        if (got) {
            FUZZ_CHECK(rc1 == CAIRN_OK && probe >= 1 && probe <= h1.upto);
            FUZZ_CHECK(ref_lists_end(&r, probe, probe_n));
            if (rc == CAIRN_OK)
                FUZZ_CHECK(probe >= seq && probe <= h.upto);
        } else if (rc1 == CAIRN_OK) {
            FUZZ_CHECK(!ref_lists_end(&r, probe, probe_n));
        }
    }
    got = cairn__hole_anchor(json, len, probe, &sum);
    FUZZ_CHECK(got == 0 || got == 1);
    if (got) {
        uint64_t want = 0;
        FUZZ_CHECK(rc1 == CAIRN_OK && probe >= 1 && probe <= h1.upto);
        FUZZ_CHECK(ref_anchor(&r, probe, &want) && want == sum);
        if (rc == CAIRN_OK)
            FUZZ_CHECK(probe >= seq && probe <= h.upto);
    } else if (rc1 == CAIRN_OK && probe != 0) {
        uint64_t want;
        FUZZ_CHECK(!ref_anchor(&r, probe, &want));
    }
    if (rc1 != CAIRN_OK) {
        /* nothing is found in what does not decode */
        FUZZ_CHECK(!cairn__hole_has_end(json, len, probe, probe_n));
        FUZZ_CHECK(!cairn__hole_anchor(json, len, probe, &sum));
    }

    /* Every end and anchor a payload that decodes at seq lists is found,
     * and nothing just outside its range. */
    if (rc == CAIRN_OK) {
        const cJSON *ends = cJSON_GetObjectItemCaseSensitive(r.root, "ends"), *x;
        const cJSON *an = cJSON_GetObjectItemCaseSensitive(r.root, "anchors");
        int probes = 0; /* each probe parses it all: at most 8 of each */
        FUZZ_CHECK(ends == NULL || cJSON_IsArray(ends));
        FUZZ_CHECK(an == NULL || cJSON_IsArray(an));
        cJSON_ArrayForEach(x, ends)
        {
            uint64_t s, n;
            FUZZ_CHECK(cJSON_GetArraySize(x) == 2 && ref_u64(x->child, &s) &&
                       ref_u64(x->child->next, &n));
            FUZZ_CHECK(n >= 2 && s >= seq && s <= h.upto);
            if (probes++ < 8)
                FUZZ_CHECK(cairn__hole_has_end(json, len, s, n) == 1);
        }
        probes = 0;
        cJSON_ArrayForEach(x, an)
        {
            uint64_t s, v, want = 0;
            FUZZ_CHECK(cJSON_GetArraySize(x) == 2 && ref_u64(x->child, &s) &&
                       ref_sum(x->child->next, &v));
            FUZZ_CHECK(s >= seq && s <= h.upto);
            FUZZ_CHECK(ref_anchor(&r, s, &want));
            if (probes++ < 8)
                FUZZ_CHECK(cairn__hole_anchor(json, len, s, &sum) == 1 && sum == want);
        }
        for (uint64_t n = 2; n < 4; n++) {
            FUZZ_CHECK(!cairn__hole_has_end(json, len, seq - 1, n));
            FUZZ_CHECK(!cairn__hole_has_end(json, len, h.upto + 1, n));
        }
        FUZZ_CHECK(!cairn__hole_anchor(json, len, seq - 1, &sum));
        FUZZ_CHECK(!cairn__hole_anchor(json, len, h.upto + 1, &sum));
    }
    cJSON_Delete(r.root);
}

/* ---- the builder ------------------------------------------------------ */

typedef struct gathered {
    uint64_t seq;
    int64_t ts;
    uint64_t ends[MAX_GATHER][2];
    size_t n_ends;
    uint64_t anchors[MAX_GATHER][2];
    size_t n_anchors;
    uint64_t seqs[MAX_GATHER]; /* every seq added, to probe */
    size_t n_seqs;
    cairn__hole h;
} gathered;

/* The payload of record k: with a commit mark in one of four forms. */
static size_t payload(char *out, size_t cap, unsigned form, uint64_t i, uint64_t n, unsigned k)
{
    switch (form) {
    case 0: /* a mark */
        return (size_t)snprintf(out, cap, "{\"k\":%u,\"batch\":[%llu,%llu]}", k,
                                (unsigned long long)i, (unsigned long long)n);
    case 1: /* a bad mark: i not below n (the record is corrupt; no end) */
        return (size_t)snprintf(out, cap, "{\"batch\":[%llu,%llu],\"k\":%u}",
                                (unsigned long long)n, (unsigned long long)n, k);
    case 2: /* a mark one level down: none of the record's */
        return (size_t)snprintf(out, cap, "{\"note\":{\"batch\":[%llu,%llu]},\"k\":%u}",
                                (unsigned long long)i, (unsigned long long)n, k);
    default: /* no object */
        return (size_t)snprintf(out, cap, "[\"batch\",[%llu,%llu]]", (unsigned long long)i,
                                (unsigned long long)n);
    }
}

/* Emit what b gathered and check it against g. */
static void emit_and_check(cairn__holeb *b, gathered *g, const char *why)
{
    uint8_t *out = NULL, *copy;
    size_t len = 0, rlen = 0;
    cairn_record rec;
    cairn__hole h;
    cJSON *root;
    const cJSON *x;
    size_t k;
    uint64_t sum;

    FUZZ_CHECK(b->h.records == g->h.records && b->h.upto == g->h.upto &&
               b->h.bytes == g->h.bytes && b->h.deaths == g->h.deaths);
    if (cairn__holeb_emit(b, HOLE_SALT, why, &out, &len) != CAIRN_OK)
        return; /* out of memory */
    FUZZ_CHECK(out != NULL && len >= REC_OVERHEAD);
    FUZZ_CHECK(b->h.records == 0 && b->n_ends == 0 && b->n_anchors == 0);
    copy = fuzz_dup(out, len); /* exact size: reads past it are caught */
    cairn__free(NULL, out);
    if (copy == NULL)
        return;
    FUZZ_CHECK(cairn__record_decode(copy, len, HOLE_SALT, &rec, &rlen) == REC_OK);
    FUZZ_CHECK(rlen == len);
    fuzz_check_record(copy, len, HOLE_SALT, &rec, rlen);
    FUZZ_CHECK(rec.type == CAIRN_REC_COMPACTED && rec.seq == g->seq && rec.ts_ms == g->ts);
    FUZZ_CHECK(rec.ns_len == 0 && rec.bin_len == 0);

    FUZZ_CHECK(cairn__hole_decode(rec.json, rec.json_len, rec.seq, &h, NULL) == CAIRN_OK);
    FUZZ_CHECK(h.seq == g->seq);
    same_hole(&h, &g->h);

    root = cJSON_ParseWithLength(rec.json, rec.json_len);
    FUZZ_CHECK(cJSON_IsObject(root));
    /* exactly the ends gathered, in order */
    x = cJSON_GetObjectItemCaseSensitive(root, "ends");
    FUZZ_CHECK(g->n_ends == 0 ? x == NULL : cJSON_IsArray(x));
    k = 0;
    if (x != NULL) {
        const cJSON *y;
        cJSON_ArrayForEach(y, x)
        {
            uint64_t s, n;
            FUZZ_CHECK(k < g->n_ends);
            FUZZ_CHECK(cJSON_GetArraySize(y) == 2 && ref_u64(y->child, &s) &&
                       ref_u64(y->child->next, &n));
            FUZZ_CHECK(s == g->ends[k][0] && n == g->ends[k][1]);
            k++;
        }
    }
    FUZZ_CHECK(k == g->n_ends);
    /* exactly the anchors given, in order */
    x = cJSON_GetObjectItemCaseSensitive(root, "anchors");
    FUZZ_CHECK(g->n_anchors == 0 ? x == NULL : cJSON_IsArray(x));
    k = 0;
    if (x != NULL) {
        const cJSON *y;
        cJSON_ArrayForEach(y, x)
        {
            uint64_t s, v;
            FUZZ_CHECK(k < g->n_anchors);
            FUZZ_CHECK(cJSON_GetArraySize(y) == 2 && ref_u64(y->child, &s) &&
                       ref_sum(y->child->next, &v));
            FUZZ_CHECK(s == g->anchors[k][0] && v == g->anchors[k][1]);
            k++;
        }
    }
    FUZZ_CHECK(k == g->n_anchors);
    x = cJSON_GetObjectItemCaseSensitive(root, "why");
    if (why == NULL)
        FUZZ_CHECK(x == NULL);
    else
        FUZZ_CHECK(cJSON_IsString(x) && strcmp(x->valuestring, why) == 0);
    cJSON_Delete(root);

    /* what has_end / anchor find in it */
    /* (each probe parses it all: the first and last four of each) */
    for (k = 0; k < g->n_ends; k++)
        if (k < 4 || k + 4 >= g->n_ends)
            FUZZ_CHECK(cairn__hole_has_end(rec.json, rec.json_len, g->ends[k][0], g->ends[k][1]));
    for (k = 0; k < g->n_anchors; k++)
        if (k < 4 || k + 4 >= g->n_anchors)
            FUZZ_CHECK(cairn__hole_anchor(rec.json, rec.json_len, g->anchors[k][0], &sum) &&
                       sum == g->anchors[k][1]);
    for (k = 0; k < g->n_seqs; k++) {
        uint64_t s = g->seqs[k];
        int anchored = 0, ended = 0;
        if (k >= 4 && k + 4 < g->n_seqs)
            continue;
        for (size_t j = 0; j < g->n_anchors; j++)
            anchored |= g->anchors[j][0] == s;
        for (size_t j = 0; j < g->n_ends; j++)
            ended |= g->ends[j][0] == s;
        if (!anchored)
            FUZZ_CHECK(!cairn__hole_anchor(rec.json, rec.json_len, s, &sum));
        if (!ended)
            FUZZ_CHECK(!cairn__hole_has_end(rec.json, rec.json_len, s, 2));
    }
    /* and the payload passes every check of a payload */
    check_payload(rec.json, rec.json_len, g->seq, g->h.upto, 2);
    free(copy);
    memset(g, 0, sizeof *g);
}

/* Three bytes a record, from seq on: c0 bits 0-2 the seqs skipped before
 * it (7: 2^20 of them), bit 3 a death, bit 4 an anchor, bit 5 a commit
 * mark, bit 6 the mark ends its commit, bit 7 emit the hole after it; c1
 * the record's length (40 + 3 * c1), its time step (c1 & 3) and the
 * anchor's checksum (0 and 255: 0 and all ones); c2 bits 0-1 the record's
 * type, bits 0-5 the commit's n - 2, bits 6-7 the form of the payload
 * (payload()). A hole gathers at most MAX_GATHER records, a program adds
 * at most twice that. */
static void build(const uint8_t *p, size_t size, uint64_t seq, const char *why)
{
    cairn__holeb b;
    gathered g;
    unsigned k = 0;
    int64_t ts = 1700000000000ll - 5000;

    memset(&b, 0, sizeof b);
    memset(&g, 0, sizeof g);
    b.a = NULL;
    if (seq > FUZZ_HOLE_BUILD_MAX) /* counted down from the top instead */
        seq = FUZZ_HOLE_BUILD_MAX - (TWO53 - seq);
    for (size_t at = 0; at + 3 <= size && k < 2 * MAX_GATHER; at += 3, k++) {
        uint8_t c0 = p[at], c1 = p[at + 1], c2 = p[at + 2];
        uint64_t n = 2 + (c2 & 0x3f), i, gap = (c0 & 7) == 7 ? 1ull << 20 : (uint64_t)(c0 & 7);
        unsigned form = c2 >> 6;
        char json[160];
        cairn_record rec;
        size_t len = REC_OVERHEAD + 3u * c1;
        int death = (c0 & 8) != 0;

        if (g.n_seqs == MAX_GATHER)
            emit_and_check(&b, &g, why);
        if (k > 0) {
            if (seq > FUZZ_HOLE_BUILD_MAX - 1 - gap)
                break;
            seq += 1 + gap;
        }
        ts += c1 & 3; /* non-decreasing */
        i = (c0 & 0x40) ? n - 1 : c1 % (n - 1);
        memset(&rec, 0, sizeof rec);
        rec.seq = seq;
        rec.ts_ms = ts;
        rec.type = (uint16_t)(CAIRN_REC_MEMORY + (c2 & 3));
        rec.json = json;
        rec.json_len = (c0 & 0x20) ? payload(json, sizeof json, form, i, n, k)
                                   : (size_t)snprintf(json, sizeof json, "{\"k\":%u}", k);
        if (cairn__holeb_add(&b, &rec, len, death) != CAIRN_OK)
            break;
        if (g.h.records == 0) {
            g.seq = seq;
            g.ts = ts;
            g.h.seq = seq;
        }
        g.h.upto = seq;
        g.h.records++;
        g.h.bytes += len;
        g.h.deaths += death;
        g.seqs[g.n_seqs++] = seq;
        if ((c0 & 0x20) && form == 0 && i == n - 1) {
            g.ends[g.n_ends][0] = seq;
            g.ends[g.n_ends][1] = n;
            g.n_ends++;
        }
        if (c0 & 0x10) {
            uint64_t sum = c1 == 0 ? 0 : c1 == 0xff ? UINT64_MAX
                                                    : (seq ^ c2) * 0x9E3779B97F4A7C15ull;
            if (cairn__holeb_anchor(&b, seq, sum) != CAIRN_OK)
                break;
            g.anchors[g.n_anchors][0] = seq;
            g.anchors[g.n_anchors][1] = sum;
            g.n_anchors++;
        }
        if (c0 & 0x80)
            emit_and_check(&b, &g, why);
    }
    if (g.h.records > 0)
        emit_and_check(&b, &g, why);
    cairn__holeb_free(&b);
    FUZZ_CHECK(b.ends == NULL && b.anchors == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seq = 1, probe, probe_n = 0;
    int64_t delta = 0;
    const uint8_t *json = data;
    size_t len = size;
    char *copy, why[33];
    int no_why = 0, program = 0;

    if (size >= 8) {
        seq = get_le32(data);
        if (data[7] & 0x80)
            seq = TWO53 - seq;
        if (seq == 0)
            seq = 1;
        delta = (int16_t)get_le16(data + 4);
        probe_n = data[6];
        no_why = data[7] & 1;
        program = (data[7] & 0x40) != 0;
        json += 8;
        len -= 8;
    }
    probe = delta < 0 && (uint64_t)-delta >= seq ? 0 : seq + (uint64_t)delta;

    /* an exact-size copy of the payload: a read past it is caught */
    copy = malloc(len ? len : 1);
    if (copy == NULL)
        return 0;
    copy[0] = 0;
    if (len)
        memcpy(copy, json, len);
    check_payload(copy, len, seq, probe, probe_n);
    free(copy);

    if (!program)
        return 0;
    /* the why: the payload's first bytes up to a NUL, at most 32 */
    {
        size_t w = 0;
        while (w < len && w < sizeof why - 1 && json[w] != 0) {
            why[w] = (char)json[w];
            w++;
        }
        why[w] = 0;
    }
    build(json, len, seq, no_why ? NULL : why);
    return 0;
}
