/*
 * filehdr.c - the common file header (see filehdr.h). The checksum covers
 * the header alone, so a reader can trust the file's identity and its
 * type-specific fields before it looks at anything else.
 */
#include "filehdr.h"

#include <string.h>
#include <xxhash.h>

#include "bytes.h"

void cairn__filehdr_init(uint8_t *h, const char *magic, uint16_t version)
{
    memset(h, 0, FILEHDR_SIZE);
    memcpy(h, magic, 8);
    put_le16(h + 8, version);
    put_le16(h + 10, FILEHDR_SIZE);
    put_le32(h + 12, 0);
}

void cairn__filehdr_seal(uint8_t *h)
{
    put_le64(h + FILEHDR_OFF_SUM, XXH3_64bits(h, FILEHDR_OFF_SUM));
}

int cairn__filehdr_check(const uint8_t *buf, size_t len, const char *magic,
                         uint16_t version, const char *what, cairn__err *e)
{
    if (len < FILEHDR_SIZE)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: file too short for a header (%zu bytes)",
                           what, len);
    if (memcmp(buf, magic, 8) != 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: bad magic at offset 0", what);
    if (get_le64(buf + FILEHDR_OFF_SUM) != XXH3_64bits(buf, FILEHDR_OFF_SUM))
        return cairn__fail(e, CAIRN_ECHECKSUM, "%s: header checksum mismatch at offset 56",
                           what);
    if (get_le16(buf + 8) > version)
        return cairn__fail(e, CAIRN_EVERSION, "%s: format version %u is newer than %u", what,
                           get_le16(buf + 8), version);
    if (get_le16(buf + 8) == 0 || get_le16(buf + 10) != FILEHDR_SIZE || get_le32(buf + 12) != 0)
        return cairn__fail(e, CAIRN_ECORRUPT, "%s: bad version, header length or flags", what);
    return CAIRN_OK;
}
