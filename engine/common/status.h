/*
 * status.h - the detailed error message that travels with a status code.
 * A cairn__err is a small fixed buffer; modules that can fail with detail
 * take one (NULL allowed) and fill it with one line naming file and offset.
 */
#ifndef CAIRN_STATUS_H
#define CAIRN_STATUS_H

#include "cairn.h"

typedef struct cairn__err {
    char msg[CAIRN_ERRMSG_MAX];
} cairn__err;

/* Format the message into e (if not NULL) and return code unchanged, so a
 * failure reads `return cairn__fail(e, CAIRN_ECORRUPT, "...", ...);`. */
int cairn__fail(cairn__err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The error detail of handle `owner` (a cairn_db, cairn_mem, ...) for the
 * calling thread: CAIRN_ERRMSG_MAX bytes, "" until a failure fills it.
 * Each thread keeps its own per handle, so a failure in one thread never
 * overwrites the detail another thread is about to read. A thread keeps
 * the details of the 16 handles it used most recently; owner NULL holds
 * the detail of the calls without a handle (cairn_open). */
char *cairn__errbuf(const void *owner);
/* Forget the calling thread's detail of owner (a handle opened or closed
 * at that address); NULL: nothing. */
void cairn__errbuf_drop(const void *owner);

/* The version check of an options struct the caller filled (`what` names
 * it): CAIRN_OK for 1..known; else CAIRN_EINVAL with a detail in
 * cairn__errbuf(owner) (0 is a struct not made by its _INIT macro). */
int cairn__opts_version(const void *owner, const char *what, unsigned have, unsigned known);

/* Map an errno value to a cairn status code. */
int cairn__errno_status(int errnum);

#endif /* CAIRN_STATUS_H */
