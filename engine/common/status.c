/*
 * status.c - names and sentences of the status codes, and the one-line
 * detail messages. No global state: messages live in the caller's buffer.
 */
#include "status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

const char *cairn_version(void)
{
    return CAIRN_VERSION_STRING;
}

int cairn_version_number(void)
{
    return CAIRN_VERSION_NUMBER;
}

const char *cairn_strerror(int code)
{
    switch (code) {
    case CAIRN_OK: return "CAIRN_OK: success";
    case CAIRN_ENOTFOUND: return "CAIRN_ENOTFOUND: not found";
    case CAIRN_EEXIST: return "CAIRN_EEXIST: already exists";
    case CAIRN_EINVAL: return "CAIRN_EINVAL: invalid argument";
    case CAIRN_ENOMEM: return "CAIRN_ENOMEM: out of memory";
    case CAIRN_EIO: return "CAIRN_EIO: I/O error";
    case CAIRN_ECORRUPT: return "CAIRN_ECORRUPT: data is corrupt";
    case CAIRN_ECHECKSUM: return "CAIRN_ECHECKSUM: checksum mismatch";
    case CAIRN_EVERSION: return "CAIRN_EVERSION: written by a newer format version";
    case CAIRN_EFULL: return "CAIRN_EFULL: no space left on device";
    case CAIRN_ELOCKED: return "CAIRN_ELOCKED: store is locked by another writer";
    case CAIRN_EPERM: return "CAIRN_EPERM: permission denied";
    case CAIRN_EUNAVAIL: return "CAIRN_EUNAVAIL: not available";
    case CAIRN_EDEAD: return "CAIRN_EDEAD: handle failed earlier; reopen the store";
    case CAIRN_EQUERY: return "CAIRN_EQUERY: invalid query";
    case CAIRN_ETOOBIG: return "CAIRN_ETOOBIG: record too large";
    default: return "CAIRN_E?: unknown status code";
    }
}

int cairn__fail(cairn__err *e, int code, const char *fmt, ...)
{
    if (e != NULL) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->msg, sizeof e->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* The per-thread details: a few slots; a new owner takes a free one, else
 * the least recently used. The calls without a handle share one owner of
 * their own (NULL is a free slot's). */
#define ERR_SLOTS 16
typedef struct err_slot {
    const void *owner;   /* NULL: free */
    uint64_t used;       /* the thread's tick at its last use */
    char msg[CAIRN_ERRMSG_MAX];
} err_slot;
static _Thread_local err_slot err_slots[ERR_SLOTS];
static _Thread_local uint64_t err_tick;
static const char no_handle; /* the owner of cairn_errmsg(NULL)'s detail */

char *cairn__errbuf(const void *owner)
{
    err_slot *take = &err_slots[0];
    if (owner == NULL)
        owner = &no_handle;
    for (unsigned i = 0; i < ERR_SLOTS; i++) {
        if (err_slots[i].owner == owner) {
            err_slots[i].used = ++err_tick;
            return err_slots[i].msg;
        }
        if (take->owner != NULL && (err_slots[i].owner == NULL || err_slots[i].used < take->used))
            take = &err_slots[i];
    }
    take->owner = owner;
    take->used = ++err_tick;
    take->msg[0] = 0;
    return take->msg;
}

void cairn__errbuf_drop(const void *owner)
{
    if (owner == NULL)
        return; /* not a handle */
    for (unsigned i = 0; i < ERR_SLOTS; i++)
        if (err_slots[i].owner == owner) {
            err_slots[i].owner = NULL;
            err_slots[i].msg[0] = 0;
        }
}

int cairn__opts_version(const void *owner, const char *what, unsigned have, unsigned known)
{
    if (have >= 1 && have <= known)
        return CAIRN_OK;
    snprintf(cairn__errbuf(owner), CAIRN_ERRMSG_MAX,
             "%s: version %u; this library knows 1..%u (declare it with its _INIT macro)", what,
             have, known);
    return CAIRN_EINVAL;
}

int cairn__errno_status(int errnum)
{
    switch (errnum) {
    case ENOSPC:
    case EDQUOT:
        return CAIRN_EFULL;
    case EACCES:
    case EPERM:
    case EROFS:
        return CAIRN_EPERM;
    case ENOENT:
        return CAIRN_ENOTFOUND;
    case ENOMEM:
        return CAIRN_ENOMEM;
    default:
        return CAIRN_EIO;
    }
}
