"""Store: one cairn store, driven through the library's tool interface.

Every method is one tool call (cairn.h, "The tool interface"): its keyword
arguments become a JSON object, cairn_session_call runs the tool, and the
JSON it returns becomes Python values (dicts, lists, ints) or an exception
from cairn.errors. The dicts are the tools' own JSON, unchanged: memories
print camelCase (createdAt, accessCount, as `cairn get --format json`),
episodes, nodes and patterns snake_case. `call(tool, **args)` returns a
tool's whole result; the methods return the part a caller wants.

Arguments:
  - None means "not given": the tool's default applies.
  - Times (since, until, expires_at, timestamp) are a datetime, an int (ms
    since the epoch) or ISO 8601 text. A datetime goes over as ISO 8601
    UTC (to the ms); a naive one is local time, as
    datetime.timestamp() takes it. Floats are refused: a float time is
    usually seconds (time.time()), which the engine would read as ms.
  - Text is UTF-8 without NUL (U+0000), the engine's rule: the library
    refuses a NUL (InvalidArgument naming the member), the binding a str
    that is not Unicode text (a lone surrogate).

Threads: the library runs one call of a session at a time (a mutex) and
releases nothing per call, so a Store may be shared by threads. ctypes lets
go of the GIL during each call. close() waits for the calls in flight. An
embedder runs inside the call that needs it, in that thread; it must not
call the same Store (the session's mutex is held: that would deadlock, so
the binding raises instead).
"""
import ctypes
import datetime
import json
import operator
import os
import threading
import warnings

from . import _lib
from .errors import Error, invalid, from_json, from_status

_LIST_MAX = 1000   # memory_list's and log_query's largest limit
_UTC = datetime.timezone.utc


class PrunedWarning(UserWarning):
    """memory_add pruned memories to keep a namespace within the store's
    max_memories (cairn config max-memories). Store.restore brings each
    back; .result is the tool's "pruned" object (count, kept, limit,
    reason)."""

    def __init__(self, result):
        super().__init__("adding a memory pruned %s memories of its namespace to keep it "
                         "within %s (%s); Store.restore brings one back"
                         % (result.get("count"), result.get("limit"), result.get("reason")))
        self.result = result


def tools():
    """The tools as a list of MCP tool objects (name, title, description,
    inputSchema: a JSON Schema, annotations)."""
    return json.loads(_lib.lib.cairn_session_tools().decode("utf-8"))


# ---- arguments -----------------------------------------------------------------

def _iso(dt):
    """A datetime as ISO 8601 UTC, with milliseconds unless they are 0
    (finer is dropped: the engine keeps ms); naive = local time."""
    u = dt.astimezone(_UTC)  # a naive datetime is taken as local time here
    ms = u.microsecond // 1000
    return "%04d-%02d-%02dT%02d:%02d:%02d%sZ" % (u.year, u.month, u.day, u.hour, u.minute,
                                                 u.second, ".%03d" % ms if ms else "")


def _time(name, v):
    """A time argument as the tools take it: ISO 8601 text or int ms."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, datetime.datetime):
        return _iso(v)
    if not isinstance(v, bool):
        try:
            return operator.index(v)  # int, numpy integers
        except TypeError:
            pass
    raise invalid("%s: must be a datetime, an int (ms since the epoch) or ISO 8601 text, not %s"
                  % (name, type(v).__name__))


def _default(o):
    """json.dumps's hook for what JSON lacks."""
    if isinstance(o, datetime.datetime):
        return _iso(o)
    if isinstance(o, (set, frozenset)):
        return list(o)
    raise TypeError("%s is not JSON (not a str, number, bool, None, list or dict)"
                    % type(o).__name__)


def _encode(args):
    """The JSON object of the arguments that are not None, as UTF-8 bytes;
    InvalidArgument naming the argument that cannot be one."""
    parts = []
    for k, v in args.items():
        if v is None:
            continue
        try:
            text = json.dumps(v, ensure_ascii=False, allow_nan=False, default=_default)
            parts.append(json.dumps(k, ensure_ascii=False).encode("utf-8") + b":" +
                         text.encode("utf-8"))
        except (TypeError, ValueError) as e:  # UnicodeEncodeError is a ValueError
            raise invalid("%s: %s" % (k, e)) from None
    return b"{" + b",".join(parts) + b"}"


def _take(p):
    """The text at p, a c_void_p the library filled, then free it."""
    if not p.value:
        return None
    try:
        return ctypes.string_at(p.value)
    finally:
        _lib.lib.cairn_free(p)


def _error(rc, raw, cause=None):
    """The exception for status rc with the library's error text raw."""
    try:
        exc = from_json(json.loads(raw.decode("utf-8", "replace"))["error"])
    except (AttributeError, ValueError, KeyError, TypeError):
        exc = from_status(rc, raw.decode("utf-8", "replace") if raw else "")
    exc.__cause__ = cause
    return exc


# ---- the embedder callback ---------------------------------------------------------

def _callback(fn, dim, tls):
    """fn(text) -> dim floats as a cairn_embed_fn. An exception (of any
    kind: a callback cannot raise into C) becomes a non-zero return with
    its text in err, and waits in tls.exc to be the cause of the call's
    Error."""
    def embed(user, text, length, out, err):
        try:
            tls.embedding = True
            try:
                vec = fn(ctypes.string_at(text, length).decode("utf-8") if length else "")
            finally:
                tls.embedding = False
            vals = [float(x) for x in vec]
            if len(vals) != dim:
                raise ValueError("the embedder returned %d values, not %d (dim)"
                                 % (len(vals), dim))
            ctypes.memmove(out, (ctypes.c_float * dim)(*vals), dim * ctypes.sizeof(ctypes.c_float))
            return 0
        except BaseException as e:
            try:
                tls.exc = e
                msg = ("%s: %s" % (type(e).__name__, e)).encode("utf-8", "replace")
                msg = msg[:_lib.ERRMSG_MAX - 1].decode("utf-8", "ignore").encode("utf-8")
                ctypes.memmove(err, msg + b"\0", len(msg) + 1)
            except BaseException:
                pass
            return 1
    return _lib.EMBED_FN(embed)


# ---- the store -----------------------------------------------------------------------

class Store:
    """A cairn store (a directory), open for reading and, unless read_only,
    writing. Use it as a context manager or call close().

    create: make the store when the directory holds none (default True).
    read_only: no writes (they raise ReadOnly), no writer lock.
    busy_timeout_ms: how long a write waits while another process writes
    (default 5000), then Locked.
    embedder: "auto" (the built-in embedder when the store's vectors are
    its own, else none: lexical recall), "builtin", "none", or a callable
    fn(text) -> dim floats, with embedder_name (its identity, 1-63 bytes:
    vectors of another name are refused) and dim; min_similarity as for
    set_embedder.
    """

    def __init__(self, path, *, create=True, read_only=False, busy_timeout_ms=None,
                 embedder="auto", embedder_name=None, dim=None, min_similarity=0.0):
        self._session = None          # the cairn_session *, as an int
        self._lock = threading.Lock()  # guards _session and _busy
        self._idle = threading.Condition(self._lock)
        self._busy = 0                # calls in flight (close waits for them)
        self._tls = threading.local()  # per thread: embedding, exc
        self._embedder = None         # the EMBED_FN object the library holds
        self.path = os.fspath(path)
        self.read_only = bool(read_only)
        opts = {"create": bool(create), "read_only": self.read_only,
                "busy_timeout_ms": busy_timeout_ms}
        if callable(embedder):
            opts["embedder"] = "none"
        elif embedder in ("auto", "builtin", "none"):
            opts["embedder"] = embedder
            if embedder_name is not None or dim is not None:
                raise invalid("embedder_name, dim: only with a callable embedder")
        else:
            raise invalid('embedder: must be "auto", "builtin", "none" or a callable, not %r'
                          % (embedder,))
        bpath = os.fsencode(path)
        if b"\0" in bpath:
            raise invalid("path: holds a NUL byte")
        sess, err = ctypes.c_void_p(), ctypes.c_void_p()
        rc = _lib.lib.cairn_session_open(ctypes.byref(sess), bpath, _encode(opts),
                                         ctypes.byref(err))
        raw = _take(err)
        if rc != 0:
            raise _error(rc, raw)
        self._session = sess.value
        if callable(embedder):
            try:
                self.set_embedder(embedder, name=embedder_name, dim=dim,
                                  min_similarity=min_similarity)
            except BaseException:
                self.close()
                raise

    # ---- the handle --------------------------------------------------------------

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:  # at interpreter exit, or a close error nobody can see
            pass

    def __repr__(self):
        return "<cairn.Store %r%s%s>" % (self.path, " read-only" if self.read_only else "",
                                         " closed" if self.closed else "")

    @property
    def closed(self):
        return self._session is None

    def _not_in_embedder(self):
        if getattr(self._tls, "embedding", False):
            raise invalid("the store's embedder called the store: it runs inside a call "
                          "of the same store, which would wait for itself")

    def _enter(self):
        self._not_in_embedder()
        with self._lock:
            if self._session is None:
                raise invalid("the store is closed")
            self._busy += 1
            return self._session

    def _leave(self):
        with self._lock:
            self._busy -= 1
            if self._busy == 0:
                self._idle.notify_all()

    def close(self):
        """Close the store (waiting for the calls in flight in other
        threads). A second close does nothing. Raises Error if the library's
        close fails (its last sync)."""
        self._not_in_embedder()
        with self._lock:
            s, self._session = self._session, None
            if s is None:
                return
            while self._busy:
                self._idle.wait()
        rc = _lib.lib.cairn_session_close(s)
        self._embedder = None
        if rc != 0:
            raise from_status(rc, "closing %s failed" % self.path)

    def call(self, tool, **args):
        """Run tool `tool` with args; its whole result as a dict. Unknown
        tool: NotFound. Arguments are checked against the tool's
        inputSchema (tools()); datetimes become ISO 8601 text."""
        return self._call(tool, args)

    def _call(self, tool, args):
        name = tool.encode("utf-8") if isinstance(tool, str) else None
        if name is None or b"\0" in name:
            raise invalid("tool: must be a tool name (a str), not %r" % (tool,))
        text = _encode(args)
        out = ctypes.c_void_p()
        s = self._enter()
        try:
            rc = _lib.lib.cairn_session_call(s, name, text, ctypes.byref(out))
        finally:
            self._leave()
        raw = _take(out)
        cause, self._tls.exc = getattr(self._tls, "exc", None), None
        if rc != 0 or raw is None:
            raise _error(rc, raw, cause)
        return json.loads(raw)

    @staticmethod
    def tools():
        """The tools and their JSON Schemas (as cairn.tools())."""
        return tools()

    def set_embedder(self, fn, *, name=None, dim=None, min_similarity=0.0):
        """Embed the memories stored and the queries recalled from now on
        with fn(text: str) -> a sequence of dim floats. name (1-63 bytes)
        is the identity of the vectors fn makes: a store holding another
        embedder's vectors refuses it (InvalidArgument naming that one).
        min_similarity: the cosine similarity below which a memory is no
        semantic match (depends on the model). fn None: no embedder
        (lexical recall only).

        An exception in fn fails the call that embedded (an Error whose
        __cause__ is that exception); the process goes on."""
        if fn is None:
            cb, bname, dim = _lib.EMBED_FN(), None, 0  # EMBED_FN(): a NULL pointer
        else:
            if not callable(fn):
                raise invalid("fn: must be a callable (text -> floats) or None")
            if not isinstance(name, str) or not name:
                raise invalid("name: an embedder needs a name (1-63 bytes), the identity of "
                              "the vectors it makes")
            if isinstance(dim, bool) or not isinstance(dim, int):
                raise invalid("dim: must be an int, the length of fn's vectors")
            if not 1 <= dim <= 65536:
                raise invalid("dim: must be from 1 to 65536, not %d" % dim)
            bname = name.encode("utf-8")
            cb = _callback(fn, dim, self._tls)
        err = ctypes.c_void_p()
        s = self._enter()
        try:
            rc = _lib.lib.cairn_session_set_embedder(s, bname, dim, float(min_similarity), cb,
                                                     None, ctypes.byref(err))
            raw = _take(err)
            if rc != 0:
                raise _error(rc, raw)  # the session keeps the embedder it had
            self._embedder = cb        # keep it alive while the library holds it
        finally:
            self._leave()

    # ---- memories ---------------------------------------------------------------

    def add(self, content, *, namespace="", category=None, importance=None, tags=None,
            metadata=None, expires_at=None):
        """Store a memory; returns it (a dict with its id). The same content
        in the same namespace is stored once (the existing one is returned).
        If the namespace's limit pruned older memories, a PrunedWarning says
        so."""
        r = self._call("memory_add", {
            "content": content, "namespace": namespace, "category": category,
            "importance": importance, "tags": tags, "metadata": metadata,
            "expires_at": _time("expires_at", expires_at)})
        if r.get("pruned"):
            warnings.warn(PrunedWarning(r["pruned"]), stacklevel=2)
        return r["memory"]

    def recall(self, query, *, k=5, namespace=None, categories=None, tags=None, since=None,
               until=None, mode=None, explain=False, min_importance=None):
        """The k memories that best match query, best first, each with its
        "score" (and "explain" with explain=True). namespace: one or a list
        (default ""). mode: "hybrid" (default), "lexical", "semantic"
        (Unavailable without vectors or an embedder). Counts as an access."""
        return self._call("memory_recall", {
            "query": query, "k": k, "namespace": namespace, "categories": categories,
            "tags": tags, "since": _time("since", since), "until": _time("until", until),
            "mode": mode, "explain": explain or None,
            "min_importance": min_importance})["memories"]

    def search(self, query, *, limit=None, namespace=None, mode=None):
        """Search by relevance alone (the best scores 1.0): a list of
        {id, name, source, score, content, namespace}. limit 1-100 (default
        10); mode "unified" (default), "lexical", "semantic"."""
        return self._call("memory_search", {"query": query, "max_results": limit,
                                            "namespace": namespace, "mode": mode})["results"]

    def context(self, query, *, k=None, format=None, max_tokens=None, namespace=None,
                categories=None, tags=None):
        """Recalled memories as one block of text for a prompt. format:
        "bullets" (default), "prose", "xml", "json"; max_tokens: a budget."""
        return self._call("memory_context", {
            "query": query, "k": k, "format": format, "max_tokens": max_tokens,
            "namespace": namespace, "categories": categories, "tags": tags})["context"]

    def get(self, id):
        """The live memory id; NotFound if there is none."""
        return self._call("memory_get", {"id": id})["memory"]

    def get_all(self, *, namespace=None, category=None, since=None, until=None, limit=None,
                offset=0):
        """Live memories, oldest first. namespace: one or a list; absent:
        every namespace (unlike recall, whose default is ""). Without a
        limit, every match (fetched a page of 1000 at a time); offset skips
        that many matches first."""
        args = {"namespace": namespace, "category": category, "since": _time("since", since),
                "until": _time("until", until)}
        out = []
        while True:
            want = _LIST_MAX if limit is None else min(_LIST_MAX, limit - len(out))
            r = self._call("memory_list", dict(args, limit=want, offset=offset + len(out)))
            out.extend(r["memories"])
            if r.get("next_offset") is None or (limit is not None and len(out) >= limit):
                return out

    def update(self, id, *, category=None, importance=None, tags=None, metadata=None,
               expires_at=None):
        """Change a memory; returns it as it is now. metadata replaces the
        object; tags replace metadata.tags; expires_at="never" removes the
        expiry."""
        return self._call("memory_update", {
            "id": id, "category": category, "importance": importance, "tags": tags,
            "metadata": metadata, "expires_at": _time("expires_at", expires_at)})["memory"]

    def delete(self, id, reason=None):
        """Remove a memory from recall (restore() brings it back)."""
        self._call("memory_remove", {"id": id, "reason": reason})

    def restore(self, id):
        """Bring back a removed, pruned or forgotten memory; returns it."""
        return self._call("memory_restore", {"id": id})["memory"]

    def forget(self, *, mode=None, max_age_days=None, min_importance=None, dry_run=False,
               namespace=None):
        """Prune expired, old and unimportant memories (mode "gentle",
        "normal" (default), "aggressive"); returns {mode, dry_run, pruned,
        kept}."""
        return self._call("memory_forget", {
            "mode": mode, "max_age_days": max_age_days, "min_importance": min_importance,
            "dry_run": dry_run or None, "namespace": namespace})

    def stats(self):
        """{total, byCategory, avgImportance, oldest, newest, deleted,
        namespaces, vectors: {count, embedder, dimensions}}."""
        return self._call("memory_stats", {})

    def history(self, id):
        """Every log record that made or changed memory id, oldest first:
        [{seq, ts, type, ns, payload}]. NotFound if the log holds none."""
        return self._call("memory_history", {"id": id})["records"]

    # ---- the log ---------------------------------------------------------------

    def log(self, payload, *, namespace="", type=None):
        """Append an event (any JSON value) to the log; returns its seq."""
        return self._call("log_append", {"payload": payload, "namespace": namespace,
                                         "type": type})["seq"]

    def events(self, *, since=None, until=None, type=None, namespace=None, from_seq=None,
               to_seq=None, limit=None):
        """The log's records, oldest first, as a generator of {seq, ts,
        type, ns, payload}: it pages through the log (1000 records a call),
        so the whole log never sits in memory. limit: at most this many in
        all (default: every one). Bad arguments raise here, not at the
        first next()."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 1):
            raise invalid("limit: must be an int >= 1")
        args = {"since": _time("since", since), "until": _time("until", until), "type": type,
                "namespace": namespace, "from_seq": from_seq, "to_seq": to_seq,
                "limit": _LIST_MAX if limit is None else min(limit, _LIST_MAX)}
        return self._pages(args, self._call("log_query", args), limit)

    def _pages(self, args, r, limit):
        n = 0
        while True:
            for rec in r["records"]:
                yield rec
                n += 1
            if r.get("next_seq") is None or (limit is not None and n >= limit):
                return
            args["from_seq"] = r["next_seq"]
            if limit is not None:
                args["limit"] = min(limit - n, _LIST_MAX)
            r = self._call("log_query", args)

    # ---- reflexion: episodes, the causal graph, patterns ----------------------

    def episode_new(self, session, task, outcome, **fields):
        """Record a session's episode (outcome "success", "partial",
        "failure"); fields: timestamp, decisions, events, metrics, lessons,
        force (replace an existing one, else Exists). Returns it."""
        if "timestamp" in fields:
            fields["timestamp"] = _time("timestamp", fields["timestamp"])
        args = dict(fields, session=session, task=task, outcome=outcome)
        return self._call("episode_new", args)["episode"]

    def episode_get(self, session):
        """The episode of a session; NotFound if none."""
        return self._call("episode_get", {"session": session})["episode"]

    def episodes(self, *, outcome=None, since=None, limit=None):
        """Episodes, newest first (limit 1-100, default 20)."""
        return self._call("episode_list", {"outcome": outcome, "since": _time("since", since),
                                           "max_results": limit})["episodes"]

    def causal_node(self, type, label, *, episode=None):
        """Add a node (type: decision, event, outcome, pattern, error,
        tool_call, commit, milestone, test, handoff), or count one more
        sighting of the node with that label. Returns it."""
        return self._call("causal_node", {"type": type, "label": label,
                                          "episode": episode})["node"]

    def causal_edge(self, source, target, type, *, weight=None, episode=None):
        """source causes / enables / prevents / correlates (type) with
        target; each a node's id or exact label. Returns the edge."""
        return self._call("causal_edge", {"source": source, "target": target, "type": type,
                                          "weight": weight, "episode": episode})["edge"]

    def causal_path(self, from_label, to_label, max_depth=5):
        """The shortest chain from a node whose label holds from_label to
        one whose label holds to_label: {found, path: [nodes], depth} or
        {found: False, path: [], error}."""
        return self._call("causal_path", {"from_label": from_label, "to_label": to_label,
                                          "max_depth": max_depth})

    def causal_status(self):
        """{episodes, nodes, edges, patterns, processed, updated}."""
        return self._call("causal_status", {})

    def pattern_add(self, name, trigger, action, *, description=None, success_rate=None,
                    episode=None):
        """Record a pattern (when trigger, do action) and how well it worked
        this time; the same name again counts one more occurrence."""
        return self._call("pattern_add", {
            "name": name, "trigger": trigger, "action": action, "description": description,
            "success_rate": success_rate, "episode": episode})["pattern"]

    def patterns(self, *, min_success_rate=None, min_occurrences=None):
        """Patterns that worked, best first."""
        return self._call("pattern_list", {"min_success_rate": min_success_rate,
                                           "min_occurrences": min_occurrences})["patterns"]

    def anti_patterns(self, *, max_success_rate=None):
        """Patterns seen at least twice that mostly failed, worst first."""
        return self._call("pattern_anti", {"max_success_rate": max_success_rate})["patterns"]
