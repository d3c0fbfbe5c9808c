/*
 * record.c - one log record: length-prefixed, typed, sequenced, timestamped,
 * namespaced, with a JSON payload, an optional binary trailer and an XXH3-64
 * checksum seeded with the segment salt. Seeding with the salt (and storing
 * its low half as `epoch`) means bytes left over from an earlier file, or
 * copied from another segment, can never validate here.
 *
 * The decoder is the first line of defence against a torn or corrupt tail:
 * it checks the length bound before anything else, never reads past the
 * bytes it was given and never allocates.
 */
#include "record.h"

#include <string.h>
#include <xxhash.h>

#include "bytes.h"

int cairn__record_size(const cairn_entry *e, size_t *size)
{
    size_t n = REC_OVERHEAD;

    if (e->type == 0 || e->ns_len > CAIRN_NS_MAX)
        return CAIRN_EINVAL;
    if ((e->ns_len && e->ns == NULL) || (e->json_len && e->json == NULL) ||
        (e->bin_len && e->bin == NULL))
        return CAIRN_EINVAL;
    if (e->json_len > CAIRN_RECORD_MAX || e->bin_len > CAIRN_RECORD_MAX)
        return CAIRN_ETOOBIG;
    n += e->ns_len + e->json_len + e->bin_len;
    if (n > CAIRN_RECORD_MAX)
        return CAIRN_ETOOBIG;
    *size = n;
    return CAIRN_OK;
}

size_t cairn__record_encode(uint8_t *buf, const cairn_entry *e, uint64_t seq, int64_t ts_ms,
                          uint64_t salt)
{
    size_t len = REC_OVERHEAD + e->ns_len + e->json_len + e->bin_len;
    uint8_t *p = buf + REC_HEADER_SIZE;

    put_le32(buf + REC_OFF_LEN, (uint32_t)len);
    put_le32(buf + REC_OFF_EPOCH, (uint32_t)salt);
    put_le64(buf + REC_OFF_SEQ, seq);
    put_le64(buf + REC_OFF_TS, (uint64_t)ts_ms);
    put_le16(buf + REC_OFF_TYPE, e->type);
    put_le16(buf + REC_OFF_NSLEN, (uint16_t)e->ns_len);
    put_le32(buf + REC_OFF_JSONLEN, (uint32_t)e->json_len);
    if (e->ns_len)
        memcpy(p, e->ns, e->ns_len);
    p += e->ns_len;
    if (e->json_len)
        memcpy(p, e->json, e->json_len);
    p += e->json_len;
    if (e->bin_len)
        memcpy(p, e->bin, e->bin_len);
    put_le64(buf + len - REC_TRAILER_SIZE, XXH3_64bits_withSeed(buf, len - REC_TRAILER_SIZE, salt));
    return len;
}

rec_result cairn__record_decode(const uint8_t *buf, size_t avail, uint64_t salt,
                                cairn_record *rec, size_t *len_out)
{
    uint32_t len, ns_len, json_len;

    if (avail < 4)
        return REC_END;
    len = get_le32(buf + REC_OFF_LEN);
    if (len == 0)
        return REC_END;
    if (len < REC_OVERHEAD || len > CAIRN_RECORD_MAX)
        return REC_BAD_LEN;
    if (len > avail)
        return REC_TRUNCATED;
    if (get_le32(buf + REC_OFF_EPOCH) != (uint32_t)salt)
        return REC_BAD_EPOCH;
    if (get_le64(buf + len - REC_TRAILER_SIZE) !=
        XXH3_64bits_withSeed(buf, len - REC_TRAILER_SIZE, salt))
        return REC_BAD_SUM;
    ns_len = get_le16(buf + REC_OFF_NSLEN);
    json_len = get_le32(buf + REC_OFF_JSONLEN);
    /* 64-bit sum: json_len is a full u32 and must not wrap. */
    if ((uint64_t)ns_len + json_len + REC_OVERHEAD > len || ns_len > CAIRN_NS_MAX ||
        get_le16(buf + REC_OFF_TYPE) == 0 || get_le64(buf + REC_OFF_SEQ) == 0)
        return REC_BAD_FIELD;
    rec->seq = get_le64(buf + REC_OFF_SEQ);
    rec->ts_ms = (int64_t)get_le64(buf + REC_OFF_TS);
    rec->type = get_le16(buf + REC_OFF_TYPE);
    rec->ns = (const char *)buf + REC_HEADER_SIZE;
    rec->ns_len = ns_len;
    rec->json = rec->ns + ns_len;
    rec->json_len = json_len;
    rec->bin = rec->json + json_len;
    rec->bin_len = len - REC_OVERHEAD - ns_len - json_len;
    *len_out = len;
    return REC_OK;
}

const char *cairn__record_result_str(rec_result r)
{
    switch (r) {
    case REC_OK: return "ok";
    case REC_END: return "end of records";
    case REC_TRUNCATED: return "record runs past the end of the data (torn)";
    case REC_BAD_LEN: return "record length out of range";
    case REC_BAD_EPOCH: return "record from another segment (epoch mismatch)";
    case REC_BAD_SUM: return "record checksum mismatch";
    case REC_BAD_FIELD: return "record fields inconsistent";
    }
    return "?";
}

static const struct {
    uint16_t type;
    const char *name;
} type_names[] = {
    {CAIRN_REC_EVENT, "event"},
    {CAIRN_REC_MEMORY, "memory"},
    {CAIRN_REC_MEMORY_UPDATE, "memory.update"},
    {CAIRN_REC_MEMORY_DELETE, "memory.delete"},
    {CAIRN_REC_MEMORY_ACCESS, "memory.access"},
    {CAIRN_REC_MEMORY_CLEAR, "memory.clear"},
    {CAIRN_REC_EPISODE, "episode"},
    {CAIRN_REC_CAUSAL_NODE, "causal.node"},
    {CAIRN_REC_CAUSAL_EDGE, "causal.edge"},
    {CAIRN_REC_PATTERN, "pattern"},
    {CAIRN_REC_CAUSAL_UPDATE, "causal.update"},
    {CAIRN_REC_COMPACTED, "log.compacted"},
    {CAIRN_REC_MEMORY_PURGE, "memory.purge"},
};

const char *cairn_record_type_name(uint16_t type)
{
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++)
        if (type_names[i].type == type)
            return type_names[i].name;
    return NULL;
}

int cairn_record_type_parse(const char *name, uint16_t *type)
{
    unsigned long v = 0;
    const char *p;

    if (name == NULL || *name == '\0')
        return CAIRN_EINVAL;
    for (size_t i = 0; i < sizeof type_names / sizeof type_names[0]; i++) {
        if (strcmp(type_names[i].name, name) == 0) {
            *type = type_names[i].type;
            return CAIRN_OK;
        }
    }
    for (p = name; *p; p++) {
        if (*p < '0' || *p > '9')
            return CAIRN_EINVAL;
        v = v * 10 + (unsigned long)(*p - '0');
        if (v > 65535)
            return CAIRN_EINVAL;
    }
    if (v == 0)
        return CAIRN_EINVAL;
    *type = (uint16_t)v;
    return CAIRN_OK;
}
